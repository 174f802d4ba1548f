"""SPEC §8: a client that disconnects cancels inference. `POST /v1/ask` over the real
ASGI server (uvicorn): the caller hangs up while the model is still answering, and the
provider sees its HTTP request closed at once, long before it would have answered."""

from __future__ import annotations

import time

import httpx
import pytest

from tests import factories
from tests.api.conftest import new_key
from tests.ask.conftest import fake_provider
from tests.ask.test_ask import index_all


@pytest.fixture
def provider():
    with fake_provider(timeout=30.0) as server:
        yield server


def test_hanging_up_cancels_the_model_call(site_url, committed, provider):
    owner = factories.owner()
    factories.note(owner, "The sprinklers run at dawn on Tuesdays.")
    index_all(owner)
    key, _ = new_key(owner)
    provider.chat_replies = ["sleep:20"]
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{site_url}/v1/ask", json={"query": "When do the sprinklers run?"},
                   headers={"Authorization": f"Bearer {key}"}, timeout=2.0)
    assert provider.hung_up.wait(timeout=8), "the provider call outlived its caller"
    assert time.monotonic() - started < 12  # well before the 20 s answer
    assert len([r for r in provider.requests if r["path"] == "/v1/chat/completions"]) == 1

    provider.chat_replies = ['{"status": "insufficient_evidence", "blocks": []}']
    still = httpx.post(f"{site_url}/v1/ask", json={"query": "When do the sprinklers run?"},
                       headers={"Authorization": f"Bearer {key}"}, timeout=10.0)
    assert still.status_code == 200 and still.json()["data"]["status"] == \
        "insufficient_evidence"
    assert still.headers["X-Request-Id"]
