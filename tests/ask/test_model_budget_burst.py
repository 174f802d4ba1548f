"""The model-call budget under a concurrent burst (issue 36 item 2.3), over the real
ASGI server: the count is atomic, so a budget of N lets exactly N calls through."""

from __future__ import annotations

import threading

import httpx
from django.test import override_settings

from tests import factories
from tests.api.conftest import new_key
from tests.ask.conftest import fake_provider
from tests.ask.helpers import chat_requests
from tests.ask.test_ask import index_all
from tests.ask.test_model_budget import NOTHING, QUESTION


def test_a_concurrent_burst_does_not_overrun(site_url, committed):
    """Eight requests at once against a budget of three, over the real ASGI server:
    exactly three reach the model, the rest are refused (the count is atomic)."""
    owner = factories.owner()
    factories.note(owner, "The boiler is serviced every October by Hendrik.")
    index_all(owner)
    key, _ = new_key(owner)
    start = threading.Barrier(8)
    statuses: list[int] = []

    def one() -> None:
        start.wait()
        answered = httpx.post(f"{site_url}/v1/ask", json={"query": QUESTION}, timeout=30,
                              headers={"Authorization": f"Bearer {key}"})
        statuses.append(answered.status_code)

    with fake_provider(timeout=10.0) as provider, override_settings(
            GROVE_MODEL_CALLS_PER_CONNECTION=3, GROVE_MODEL_CALLS_PER_ACCOUNT=0):
        provider.chat_replies = [NOTHING] * 8
        threads = [threading.Thread(target=one) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert sorted(statuses) == [200] * 3 + [429] * 5
        assert len(chat_requests(provider)) == 3
