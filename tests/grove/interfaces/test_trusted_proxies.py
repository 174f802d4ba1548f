"""Behind a reverse proxy, against a real `grove serve` (issue 36 item 2.7): the address
the ASGI layer limits and sign-in counts is the one a trusted proxy names, and nobody
else's forwarded header is believed — not even from this machine, which uvicorn's own
default (X-Forwarded-For believed from 127.0.0.1) would have let choose any address.

Loopback addresses stand in for the machines, as real TCP peers: 127.0.0.5 is the proxy
Grove trusts (GROVE_TRUSTED_PROXIES), 127.0.0.1 a process on the same machine it does not.
The rule itself, header by header: tests/grove/kernel/test_addresses.py."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.grove.runtime.processes import CSRF, OWNER_PASSWORD, Serve, make_home, remove_home

pytestmark = pytest.mark.slow

PROXY = "127.0.0.5"
THIS_MACHINE = "127.0.0.1"
PER_ADDRESS = 30  # the served instance's requests a minute per client address
WRONG_BEFORE_REFUSED = 5  # settings.GROVE_LOGIN_LIMITS["pair"]


@pytest.fixture(scope="module")
def serve() -> Iterator[Serve]:
    home = make_home()
    served = Serve(home, env={"GROVE_TRUSTED_PROXIES": PROXY,
                              "GROVE_ADDRESS_RATE_LIMIT": str(PER_ADDRESS)})
    try:
        served.wait_ready(timeout=180)
        with visitor(served, PROXY, "192.0.2.10") as web:
            page = web.get("/setup/")
            created = web.post("/setup/", data={
                "csrfmiddlewaretoken": CSRF.search(page.text).group(1), "username": "owner",
                "password": OWNER_PASSWORD, "password_again": OWNER_PASSWORD})
            assert created.status_code == 302, created.text[:500]
        yield served
    finally:
        if served.proc.poll() is None:
            served.stop(signal.SIGTERM)
        remove_home(home)


def visitor(serve: Serve, peer: str, forwarded: str | None = None) -> httpx.Client:
    """A browser whose connections come from `peer`, sending `forwarded` as its
    X-Forwarded-For (what a proxy at `peer` would send on a visitor's behalf)."""
    return httpx.Client(base_url=serve.url, timeout=30,
                        headers={"X-Forwarded-For": forwarded} if forwarded else {},
                        transport=httpx.HTTPTransport(local_address=peer))


def sign_in(web: httpx.Client, password: str, *, forwarded: str | None = None) -> int:
    page = web.get("/login/")
    assert page.status_code == 200, page.text[:300]
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    return web.post("/login/", headers=headers, data={
        "csrfmiddlewaretoken": CSRF.search(page.text).group(1), "username": "owner",
        "password": password}).status_code


def fresh_windows(seconds_needed: float) -> None:
    """The limits count in fixed windows (a minute; sign-in's 15 minutes end on a minute
    too): start where the run fits in one, so no count is reset halfway."""
    left = 60 - time.time() % 60
    if left < seconds_needed:
        time.sleep(left + 0.2)


def test_behind_the_trusted_proxy_each_visitor_is_counted_on_its_own(serve):
    fresh_windows(20)
    with visitor(serve, PROXY, "198.51.100.7") as guesser:
        for _ in range(WRONG_BEFORE_REFUSED):
            assert sign_in(guesser, "wrong") == 400
        assert sign_in(guesser, OWNER_PASSWORD) == 429
    # The owner, behind the same proxy, is another visitor: signed in at once.
    with visitor(serve, PROXY, "203.0.113.9") as owner:
        assert sign_in(owner, OWNER_PASSWORD) == 302
        assert owner.get("/settings/").status_code == 200
    # Requests per address before Django: one visitor's flood is refused, not the next.
    with visitor(serve, PROXY, "198.51.100.8") as flood:
        answers = [flood.get("/login/") for _ in range(PER_ADDRESS + 1)]
        assert [a.status_code for a in answers] == [200] * PER_ADDRESS + [429]
        assert int(answers[-1].headers["Retry-After"]) > 0
    with visitor(serve, PROXY, "198.51.100.9") as next_one:
        assert next_one.get("/login/").status_code == 200


def test_a_forwarded_header_from_a_peer_grove_does_not_trust_is_ignored(serve):
    fresh_windows(20)
    with visitor(serve, THIS_MACHINE) as spoofer:
        for n in range(WRONG_BEFORE_REFUSED):  # each claiming to be someone else
            assert sign_in(spoofer, "wrong", forwarded=f"192.0.2.{n}") == 400
        assert sign_in(spoofer, OWNER_PASSWORD, forwarded="192.0.2.99") == 429
        # Nor can it escape the per-address limit by naming a new address each time.
        answers = [spoofer.get("/login/", headers={"X-Forwarded-For": f"192.0.2.{100 + n}"})
                   for n in range(PER_ADDRESS + 1)]
        assert answers[-1].status_code == 429, [a.status_code for a in answers]
