"""Sign-in throttling: failed attempts are counted per account name and per client
address in fixed windows (Django's cache: Redis when configured, else process memory).
Over either limit, sign-in is refused — even with the right password — until the window
ends, and the form says how long that is. A success clears the account's count."""

from __future__ import annotations

import hashlib
import math
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest


def _keys(username: str, address: str, window: int, now: float) -> dict[str, str]:
    slot = int(now // window)
    # Hashed: the cache holds no user names or addresses in the clear.
    account = hashlib.sha256(username.strip().casefold().encode()).hexdigest()[:32]
    where = hashlib.sha256(address.encode()).hexdigest()[:32]
    return {"account": f"login:a:{account}:{slot}", "address": f"login:i:{where}:{slot}"}


def client_address(request: HttpRequest) -> str:
    """The client's address. Behind the HTTPS reverse proxy (an https base URL) every
    connection comes from the proxy, so the address the proxy appended last to
    X-Forwarded-For is used — not earlier entries, which the client could forge."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None) and forwarded.strip():
        return forwarded.split(",")[-1].strip()
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def login_blocked_for(username: str, address: str, *, now: float | None = None) -> int | None:
    """Seconds until sign-in may be tried again, or None when it may be tried now."""
    limits = settings.GROVE_LOGIN_LIMITS
    now = time.time() if now is None else now
    window = limits["window"]
    keys = _keys(username, address, window, now)
    counts = cache.get_many(list(keys.values()))
    for scope, key in keys.items():
        if counts.get(key, 0) >= limits[scope]:
            return max(1, math.ceil(window - now % window))
    return None


def count(key: str, window: int) -> int:
    """Add one to a fixed-window counter in the cache and return it (atomic in Redis;
    the key names its window, and expires a little after it)."""
    cache.add(key, 0, timeout=window + 5)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=window + 5)
        return 1


def address_key(request: HttpRequest) -> str:
    """The client's address, hashed: the cache holds no addresses in the clear."""
    return hashlib.sha256(client_address(request).encode()).hexdigest()[:32]


def login_failed(username: str, address: str, *, now: float | None = None) -> None:
    window = settings.GROVE_LOGIN_LIMITS["window"]
    for key in _keys(username, address, window, time.time() if now is None else now).values():
        count(key, window)


def login_succeeded(username: str, *, now: float | None = None) -> None:
    window = settings.GROVE_LOGIN_LIMITS["window"]
    cache.delete(_keys(username, "", window, time.time() if now is None else now)["account"])


def registration_blocked_for(request: HttpRequest, *, now: float | None = None) -> int | None:
    """Count one OAuth client registration from the request's address; over
    `GROVE_REGISTRATION_LIMIT` in its window, the seconds until the window ends (else
    None). Every attempt counts, refused ones included."""
    limits = settings.GROVE_REGISTRATION_LIMIT
    if not limits["count"]:
        return None
    now = time.time() if now is None else now
    window = limits["window"]
    if count(f"register:{address_key(request)}:{int(now // window)}", window) \
            <= limits["count"]:
        return None
    return max(1, math.ceil(window - now % window))
