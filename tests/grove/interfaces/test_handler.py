"""The web process's Django handler (grove/interfaces/handler.py) on a real server
(uvicorn in a thread of this process, the test database): a request's synchronous work
runs on a thread kept for the next request, concurrent requests get threads of their
own and see only their own account, and a streamed answer is still made while it is
sent. (That a client hanging up still cancels an async view: tests/ask/test_ask_disconnect.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.core import signals

from tests import factories
from tests.api.conftest import new_key


@pytest.fixture
def request_threads():
    """The thread each request of the server starts its work on (in arrival order)."""
    seen: list[threading.Thread] = []

    def started(**kwargs):
        seen.append(threading.current_thread())

    signals.request_started.connect(started, weak=False)
    yield seen
    signals.request_started.disconnect(started)


def test_one_kept_thread_serves_request_after_request(site_url, committed, request_threads):
    with httpx.Client(base_url=site_url) as client:
        for _ in range(12):
            assert client.get("/healthz").status_code == 200
    assert len(request_threads) == 12
    # (The server may take the next request of the connection while the one before
    # finishes its last step, so two threads can alternate; never a new one each time.)
    assert len({thread.ident for thread in request_threads}) <= 2
    assert all(thread.name.startswith("grove-request") for thread in request_threads)


def test_concurrent_requests_have_threads_of_their_own_and_see_their_own_notes(
        site_url, committed, request_threads):
    owners = [factories.owner(), factories.owner()]
    keys = []
    for i, owner in enumerate(owners):
        for n in range(3):
            factories.note(owner, f"Account {i} keeps note {n} about sprinklers.")
        keys.append(new_key(owner)[0])

    def notes_of(i: int) -> set[str]:
        with httpx.Client(base_url=site_url, timeout=30,
                          headers={"Authorization": f"Bearer {keys[i % 2]}"}) as client:
            seen = set()
            for _ in range(5):
                response = client.get("/v1/notes")
                assert response.status_code == 200, response.text
                seen |= {item["note"]["content"] for item in response.json()["data"]}
            return seen

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(notes_of, range(6)))
    for i, contents in enumerate(results):
        assert contents == {f"Account {i % 2} keeps note {n} about sprinklers." for n in range(3)}
    assert len(request_threads) == 30
    # Requests in flight together never shared a thread: more than one was needed.
    assert len({thread.ident for thread in request_threads}) > 1


def test_a_streamed_export_is_made_while_it_is_sent(site_url, committed):
    owner = factories.owner()
    contents = {f"Export line {n} of the streamed answer." for n in range(40)}
    for content in contents:
        factories.note(owner, content)
    key, _ = new_key(owner)
    with httpx.Client(base_url=site_url, timeout=30,
                      headers={"Authorization": f"Bearer {key}"}) as client:
        response = client.get("/v1/export")
        assert response.status_code == 200
        lines = [line for line in response.text.splitlines() if line.strip()]
        # And the connection the stream read with was handed back: the next request works.
        assert client.get("/v1/notebooks").status_code == 200
    exported = {json.loads(line).get("content") for line in lines}
    assert contents <= exported


def test_the_web_process_leaves_what_it_holds_for_good_out_of_full_collections():
    """grove.asgi loads every route, then freezes what is alive: a full collection
    during a request no longer walks the whole application."""
    script = ("import gc, grove.asgi; "
              "print(gc.get_freeze_count(), len(gc.get_objects()))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, check=True,
                            env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"})
    frozen, tracked = map(int, result.stdout.split()[-2:])
    assert frozen > 50_000  # the modules, the URL tree with every route and schema
    assert tracked < frozen // 20  # what a full collection still walks
