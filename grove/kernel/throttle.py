"""Counters that protect Grove from floods and guessing, kept in Django's cache (Redis
when configured, shared by every process; else process memory — the embedded default
runs one web process). Keys hold hashes, never names or addresses in the clear.

* **Per connection** (`connection_wait`): `GROVE_API_RATE_LIMIT` requests a minute per
  API key or OAuth client, one count across `/v1`, `POST /v1/tools/*` and `/mcp`.
* **Per address** (`grove.interfaces.limits`): every request, before any credential is looked up.
  The address is the client's as `grove.kernel.addresses.client_address` finds it: the
  peer's, or behind a trusted reverse proxy the one that proxy names.
* **OAuth client registration** (`registration_blocked_for`): registrations per address
  per window, refused ones included.
* **OAuth client authentication** (`client_auth_*`): failed client authentications at
  the token endpoint per (client, address); past the limit that address's requests for
  that client are refused before a secret is checked.
* **Sign-in** (`login_*`): failures are counted per (account name, address), per
  address, and per account name. The first two refuse further tries from *that*
  address until the window ends; the account-wide count only slows sign-in down (a
  delay that grows with the failures, capped), so nobody can lock the owner out by
  failing on purpose from elsewhere — the right password from another address is
  slower for a while, never refused.

Every refusal these decide (each one a 429 for its caller) is counted in
`grove_rate_limit_refusals_total{scope}` (`grove.kernel.metrics`).
"""

from __future__ import annotations

import hashlib
import math
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

from grove.kernel import metrics
from grove.kernel.addresses import limit_key, request_address

WINDOW = 60  # the per-connection and per-address limits count per minute


def clock() -> float:
    """Now, in seconds (one name for tests to move)."""
    return time.time()


def hashed(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:32]


def _login_keys(username: str, address: str, window: int, now: float) -> dict[str, str]:
    slot = int(now // window)  # (the same windows as `fixed_window`)
    account = hashed(username.strip().casefold())
    where = hashed(limit_key(address))
    return {"pair": f"login:p:{account}:{where}:{slot}", "address": f"login:i:{where}:{slot}",
            "account": f"login:a:{account}:{slot}"}


def address_key(request: HttpRequest) -> str:
    """The client's address (`grove.kernel.addresses`, trusted proxies believed) as a
    limit counts it (`limit_key`: an IPv6 client by its /64), hashed."""
    return hashed(limit_key(request_address(request)))


def count(key: str, window: int) -> int:
    """Add one to a fixed-window counter in the cache and return it (atomic in Redis;
    the key names its window, and expires a little after it)."""
    cache.add(key, 0, timeout=window + 5)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=window + 5)
        return 1


def until_window_ends(window: int, now: float | None = None) -> int:
    """Whole seconds (at least 1) until the current fixed window of `window` ends."""
    now = clock() if now is None else now
    return max(1, math.ceil(window - now % window))


def _window_key(name: str, window: int, now: float) -> str:
    return f"{name}:{int(now // window)}"  # the key names its window


def _over(seen: int, limit: int, window: int, now: float) -> int | None:
    return None if seen <= limit else until_window_ends(window, now)


def fixed_window(name: str, *, limit: int, window: int, now: float | None = None) -> int | None:
    """The one fixed-window rate rule: count one event under `name` in the current
    window of `window` seconds; when that puts it over `limit`, the seconds until the
    window ends (Retry-After), else None."""
    now = clock() if now is None else now
    return _refused(name, _over(count(_window_key(name, window, now), window), limit,
                                window, now))


async def fixed_window_async(name: str, *, limit: int, window: int) -> int | None:
    """`fixed_window` for the ASGI layer: with a shared cache (Redis) the count runs in a
    worker thread; process memory needs no I/O, so it is counted in place."""
    from asgiref.sync import sync_to_async
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    now = clock()
    key = _window_key(name, window, now)
    if isinstance(caches["default"], LocMemCache):
        seen = count(key, window)
    else:
        seen = await sync_to_async(count, thread_sensitive=False)(key, window)
    return _refused(name, _over(seen, limit, window, now))


def _refused(name: str, wait: int | None) -> int | None:
    """`wait`, counted as a refusal of the limit `name` when there is one."""
    if wait is not None:
        metrics.refused(name)
    return wait


def connection_wait(connection_id: object, *, now: float | None = None) -> int | None:
    """Count one request of a connection; seconds to wait when that puts it over
    `GROVE_API_RATE_LIMIT` this minute, else None. REST, `/v1/tools` and `/mcp` all
    count here, so one limit holds whichever way a client calls."""
    limit = settings.GROVE_API_RATE_LIMIT
    if not limit or connection_id is None:
        return None
    return fixed_window(f"rate:{connection_id}", limit=limit, window=WINDOW, now=now)


def login_blocked_for(username: str, address: str, *, now: float | None = None) -> int | None:
    """Seconds until sign-in may be tried again from this address for this name, or None
    when it may be tried now. Only failures from this address count here."""
    limits = settings.GROVE_LOGIN_LIMITS
    now = clock() if now is None else now
    window = int(limits["window"])
    keys = _login_keys(username, address, window, now)
    counts = cache.get_many([keys["pair"], keys["address"]])
    if counts.get(keys["pair"], 0) >= limits["pair"] \
            or counts.get(keys["address"], 0) >= limits["address"]:
        return _refused("login", until_window_ends(window, now))
    return None


def login_attempt(username: str, address: str, *, now: float | None = None) -> int | None:
    """Count a sign-in attempt against its (name, address) and its address *before* the
    password is checked, and say whether it may go on: seconds to wait, or None. Counted
    first, atomically, so a burst of simultaneous guesses cannot all pass the check
    before any failure is counted; a success gives its count back
    (`login_succeeded`)."""
    limits = settings.GROVE_LOGIN_LIMITS
    now = clock() if now is None else now
    window = int(limits["window"])
    keys = _login_keys(username, address, window, now)
    pair, where = count(keys["pair"], window), count(keys["address"], window)
    if pair > limits["pair"] or where > limits["address"]:
        return _refused("login", until_window_ends(window, now))
    return None


def login_attempt_failed(username: str, *, now: float | None = None) -> None:
    """A counted attempt (`login_attempt`) failed: it slows the name everywhere."""
    window = int(settings.GROVE_LOGIN_LIMITS["window"])
    count(_login_keys(username, "", window, clock() if now is None else now)["account"],
          window)


def login_slowdown(username: str, *, now: float | None = None) -> float:
    """Seconds to hold a sign-in for this name before checking it: nothing until the
    account-wide failures (from every address) reach `account`, then `step` more per
    failure, at most `max_delay`."""
    limits = settings.GROVE_LOGIN_LIMITS
    now = clock() if now is None else now
    key = _login_keys(username, "", int(limits["window"]), now)["account"]
    failures = cache.get(key, 0)
    if failures < limits["account"]:
        return 0.0
    return min(limits["max_delay"], limits["step"] * (failures - limits["account"] + 1))


def login_failed(username: str, address: str, *, now: float | None = None) -> None:
    window = int(settings.GROVE_LOGIN_LIMITS["window"])
    for key in _login_keys(username, address, window,
                           clock() if now is None else now).values():
        count(key, window)


def login_succeeded(username: str, address: str, *, now: float | None = None) -> None:
    """The name's failures are forgotten, and the address gets back the attempt
    `login_attempt` counted: only failures hold an address back."""
    window = int(settings.GROVE_LOGIN_LIMITS["window"])
    keys = _login_keys(username, address, window, clock() if now is None else now)
    cache.delete_many([keys["pair"], keys["account"]])
    try:
        cache.decr(keys["address"])
    except ValueError:  # the window ended meanwhile
        pass


def registration_blocked_for(request: HttpRequest, *, now: float | None = None) -> int | None:
    """Count one OAuth client registration from the request's address; over
    `GROVE_REGISTRATION_LIMIT` in its window, the seconds until the window ends (else
    None). Every attempt counts, refused ones included."""
    limits = settings.GROVE_REGISTRATION_LIMIT
    if not limits["count"]:
        return None
    return fixed_window(f"register:{address_key(request)}", limit=limits["count"],
                        window=limits["window"], now=now)


def _client_auth_key(request: HttpRequest, client_id: str, window: int, now: float) -> str:
    return _window_key(f"client:{hashed(client_id)}:{address_key(request)}", window, now)


def client_auth_blocked_for(request: HttpRequest, client_id: str, *,
                            now: float | None = None) -> int | None:
    """Seconds until the request's address may authenticate OAuth client `client_id` at
    the token endpoint again, or None when it may now. Only failures count
    (`client_auth_failed`): `GROVE_CLIENT_AUTH_LIMIT` of them for one client from one
    address within its window refuse that address's wrong secrets for that client (the
    token view still answers the right one when its check is cheap, and checks nothing
    for a secret stored before the client-secret hasher, a third of a second each).
    Counted per client *and* address, so the client itself, elsewhere, and other
    clients from that address are not held up."""
    limits = settings.GROVE_CLIENT_AUTH_LIMIT
    if not limits["count"]:
        return None
    now = clock() if now is None else now
    window = int(limits["window"])
    key = _client_auth_key(request, client_id, window, now)
    if cache.get(key, 0) >= limits["count"]:
        return _refused(key, until_window_ends(window, now))
    return None


def client_auth_failed(request: HttpRequest, client_id: str, *,
                       now: float | None = None) -> None:
    """Count one failed authentication of OAuth client `client_id` from the request's
    address (see `client_auth_blocked_for`)."""
    limits = settings.GROVE_CLIENT_AUTH_LIMIT
    if limits["count"]:
        window = int(limits["window"])
        count(_client_auth_key(request, client_id, window, clock() if now is None else now),
              window)
