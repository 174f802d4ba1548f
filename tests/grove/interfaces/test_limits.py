"""Limits before work: one rate limit per connection across `/v1`, `/v1/tools` and `/mcp`
(grove/kernel/throttle.py); and, against a real `grove serve --port N`, body size, requests per
address and bounded concurrency in front of Django (grove/interfaces/limits.py) with the database
pool behind it — floods of bogus keys and oversize bodies, and a real user meanwhile."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import psycopg
import pytest
from django.test import Client

from bench.flood import BODY_ADDRESS, USER_ADDRESS, big_body, bogus_key_flood
from tests import factories
from tests.api.conftest import Caller, new_key
from tests.grove.runtime.processes import (
    CSRF,
    OWNER_PASSWORD,
    Serve,
    make_home,
    owner_and_key,
    remove_home,
)

RATE = 150  # the served instance's per-connection limit
PER_ADDRESS = 300  # and its per-address limit


def mcp(key: str, method: str = "ping", client: Client | None = None):
    return (client or Client()).post(
        "/mcp", data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}),
        content_type="application/json", headers={"Authorization": f"Bearer {key}",
                                                  "Accept": "application/json"})


@pytest.mark.django_db
def test_one_limit_per_connection_across_rest_tools_and_mcp(settings, monkeypatch):
    from grove.kernel import throttle

    monkeypatch.setattr(throttle, "clock", lambda: 7_000_040.0)
    settings.GROVE_API_RATE_LIMIT = 4
    owner = factories.owner()
    key, _ = new_key(owner)
    rest = Caller(Client(), key)
    assert rest.get("/notebooks").status_code == 200
    assert rest.post("/tools/recall", {}).status_code == 200
    assert mcp(key).status_code == 200
    assert mcp(key, "tools/list").status_code == 200
    # The fifth request of the minute is refused on /mcp as on REST: one count.
    limited = mcp(key)
    assert limited.status_code == 429 and limited["Retry-After"] == "40"
    assert limited.json()["error"]["data"]["code"] == "rate_limited"
    assert rest.get("/notebooks").status_code == 429
    assert rest.post("/tools/recall", {}).status_code == 429
    other, _ = new_key(owner)
    assert mcp(other).status_code == 200  # counted per connection


# -- against a real server ------------------------------------------------------------------


@dataclass
class Site:
    serve: Serve
    key: str

    @property
    def url(self) -> str:
        return self.serve.url


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    home = make_home()
    serve = Serve(home, env={"GROVE_API_RATE_LIMIT": str(RATE),
                             "GROVE_ADDRESS_RATE_LIMIT": str(PER_ADDRESS)})
    try:
        serve.wait_ready(timeout=180)
        ready = Site(serve=serve, key=owner_and_key(serve, "user"))
        saved = httpx.post(serve.url + "/v1/notes", timeout=30, json={
            "content": "The tomatoes need water every evening.", "kind": "fact"},
            headers={"Authorization": f"Bearer {ready.key}"})
        assert saved.status_code == 201, saved.text
        yield ready
    finally:
        if serve.proc.poll() is None:
            serve.stop(signal.SIGTERM)
        remove_home(home)


def _web_connections(site: Site, seen: list[int], stop: list[bool]) -> None:
    """Sample how many database connections the web process holds (owner role over the
    embedded server's socket)."""
    from grove.runtime.embedded import OWNER_ROLE, database_settings

    db = database_settings(site.serve.home, role=OWNER_ROLE)
    with psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"],
                         dbname=db["NAME"], autocommit=True) as conn:
        while not stop:
            seen.append(conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                [f"grove-{site.serve.proc.pid}"]).fetchone()[0])
            time.sleep(0.2)


def _wait_for_a_fresh_window(seconds_needed: float) -> None:
    """Fixed one-minute windows: start a counted run where it fits in one."""
    left = 60 - time.time() % 60
    if left < seconds_needed:
        time.sleep(left + 0.2)


@pytest.mark.slow
def test_a_flood_of_bogus_keys_neither_fails_nor_starves_a_real_user(site):
    import threading

    _wait_for_a_fresh_window(25)
    seen: list[int] = []
    stop: list[bool] = []
    sampler = threading.Thread(target=_web_connections, args=(site, seen, stop))
    sampler.start()
    try:
        outcome = bogus_key_flood(site.url, site.key, clients=230, seconds=15)
    finally:
        stop.append(True)
        sampler.join()
    summary = outcome.summary()
    print(json.dumps({"connections_max": max(seen), **summary}))
    # Nobody gets a server error: the flood queues for a database connection instead of
    # exhausting the server's, and is refused per address once over its limit.
    assert not [status for status in outcome.flood if status >= 500], summary
    assert outcome.flood[429] > 0 and outcome.flood[401] > 0, summary
    assert sum(outcome.flood.values()) > PER_ADDRESS, summary  # the flood really was one
    # The real user, at another address, is answered every time.
    assert set(outcome.user) == {200} and not outcome.user_errors, summary
    assert len(outcome.user_latencies) >= 20, summary
    from django.conf import settings

    assert max(seen) <= settings.DATABASES["default"]["OPTIONS"]["pool"]["max_size"], seen


@pytest.mark.slow
def test_oversize_bodies_are_refused_before_they_are_read(site):
    declared = big_body(site.url, "/v1/notes", 1024 ** 3, chunked=False)
    chunked = big_body(site.url, "/v1/notes", 1024 ** 3, chunked=True)
    to_mcp = big_body(site.url, "/mcp", 1024 ** 3, chunked=False)
    import_page = big_body(site.url, "/settings/import", 512 * 1024 ** 2, chunked=False)
    print(json.dumps({"declared": declared, "chunked": chunked, "mcp": to_mcp,
                      "import": import_page}))
    # Django's handler would take the whole GiB (and spool it to disk) before any check.
    for outcome in (declared, chunked, to_mcp, import_page):
        assert outcome["sent_mib"] < 64, outcome
    assert declared["status"] == 413 and to_mcp["status"] == 413
    assert import_page["status"] == 413
    with httpx.Client(transport=httpx.HTTPTransport(local_address=BODY_ADDRESS),
                      timeout=30) as client:
        refused = client.post(site.url + "/v1/notes", content=b"{" + b" " * (2 * 1024 ** 2),
                              headers={"Content-Type": "application/json"})
        assert refused.status_code == 413
        assert refused.json()["error"]["code"] == "payload_too_large"
        streamed = client.post(site.url + "/mcp", content=iter([b" " * 1024 ** 2] * 3),
                               headers={"Content-Type": "application/json"})
        assert streamed.status_code == 413
        assert streamed.json()["error"]["data"]["code"] == "payload_too_large"
    # Within the limit all is as before.
    fine = httpx.post(site.url + "/v1/notes", timeout=30, json={
        "content": "Small enough.", "kind": "fact"},
        headers={"Authorization": f"Bearer {site.key}"})
    assert fine.status_code == 201, fine.text


@pytest.mark.slow
def test_the_signed_in_import_may_be_larger_than_other_bodies(site):
    """The import upload of a signed-in owner passes the small limit; an anonymous one of
    the same size does not (checked above)."""
    with httpx.Client(base_url=site.url, timeout=60) as web:
        page = web.get("/login/")
        assert web.post("/login/", data={
            "csrfmiddlewaretoken": CSRF.search(page.text).group(1), "username": "owner",
            "password": OWNER_PASSWORD}).status_code == 302
        token = web.cookies["csrftoken"]
        padding = json.dumps({"type": "padding", "text": "x" * 100}) + "\n"
        body = padding * (2 * 1024 ** 2 // len(padding))  # 2 MiB: over the small limit
        answer = web.post("/settings/import", data={"csrfmiddlewaretoken": token},
                          files={"file": ("export.ndjson", body.encode(), "application/x-ndjson")},
                          headers={"X-CSRFToken": token})
        assert answer.status_code != 413, answer.text[:300]
        assert answer.status_code in (200, 302, 400), answer.text[:300]


@pytest.mark.slow
def test_an_oauth_client_is_limited_on_mcp(site):
    from tests.mcp.conftest import Served, pending_client_token

    token = pending_client_token(Served(serve=site.serve, key=site.key), name="Limited")
    _wait_for_a_fresh_window(20)
    statuses = []
    with httpx.Client(base_url=site.url, timeout=30, transport=httpx.HTTPTransport(
            local_address=USER_ADDRESS)) as client:
        for _ in range(RATE + 1):
            statuses.append(client.post("/mcp", json={"jsonrpc": "2.0", "id": 1,
                                                      "method": "ping"},
                                        headers={"Authorization": f"Bearer {token}"}
                                        ).status_code)
    assert statuses[:RATE] == [200] * RATE
    assert statuses[RATE] == 429
