"""`GROVE_LLM_TIMEOUT` is a real setting (issue 36 item 3.7): written in grove.toml, it
reaches the `openai` client of a real `grove serve` — its web process (`POST /v1/ask`)
and its worker (a conversation turn). The fake OpenAI-compatible server stalls past the
configured 2 seconds: the call fails with the timeout as its cause; answering within
them, it succeeds (under the old fixed 60 s the stall would have been answered)."""

from __future__ import annotations

import signal
import time
import uuid

import httpx
import pytest

from tests.fake_openai import FakeOpenAI
from tests.grove.runtime.processes import Serve, owner_and_key

pytestmark = pytest.mark.slow

NOTHING = '{"status": "insufficient_evidence", "blocks": []}'
QUESTION = "When is the boiler serviced?"


def answered_after(seconds: float):
    """A scripted reply that takes `seconds` to come."""
    def reply(body: dict) -> str:
        time.sleep(seconds)
        return NOTHING
    return reply


def chat_calls(fake: FakeOpenAI) -> int:
    return sum(1 for r in fake.requests if r["path"] == "/v1/chat/completions")


def turn_settled(api: httpx.Client, conversation: str, turn: str) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = api.get(f"/v1/conversations/{conversation}/turns/{turn}").json()["data"]
        if found["status"] != "pending":
            return found
        time.sleep(0.2)
    raise AssertionError("the turn was never answered")


def test_the_timeout_from_grove_toml_reaches_the_model_client(home):
    with FakeOpenAI() as fake:
        (home / "grove.toml").write_text(
            f'llm_base_url = "{fake.url}"\nllm_model = "fake-model"\nllm_timeout = 2\n'
            'embeddings = "disabled"\n')
        serve = Serve(home)
        try:
            serve.wait_ready()
            key = owner_and_key(serve)
            with httpx.Client(base_url=serve.url, timeout=60,
                              headers={"Authorization": f"Bearer {key}"}) as api:
                saved = api.post("/v1/notes", json={
                    "content": "The boiler is serviced every October.", "kind": "fact"})
                assert saved.status_code == 201, saved.text

                # The web process: a stateless ask.
                fake.chat_replies = ["sleep:4"] * 3  # each try stalls past 2 s
                slow = api.post("/v1/ask", json={"query": QUESTION})
                assert slow.status_code == 503, slow.text
                message = slow.json()["error"]["message"]
                assert "did not answer within 2 seconds" in message, message
                assert "GROVE_LLM_TIMEOUT" in message and chat_calls(fake) == 3
                fake.chat_replies = [answered_after(1)]
                quick = api.post("/v1/ask", json={"query": QUESTION})
                assert quick.status_code == 200, quick.text
                assert quick.json()["data"]["status"] == "insufficient_evidence"

                # The worker: a conversation turn fails with the timeout as its cause,
                # and its retry, answered in time, completes.
                conversation = str(uuid.uuid4())
                assert api.post("/v1/conversations", json={"id": conversation}) \
                    .status_code == 201
                turn = str(uuid.uuid4())
                fake.chat_replies = ["sleep:4"] * 3
                asked = api.post(f"/v1/conversations/{conversation}/turns", json={
                    "id": turn, "query": QUESTION, "expectedVersion": 0})
                assert asked.status_code == 202, asked.text
                failed = turn_settled(api, conversation, turn)
                assert failed["status"] == "failed", failed
                assert failed["error"]["code"] == "provider_unavailable"
                assert "did not answer within 2 seconds" in failed["error"]["message"]
                fake.chat_replies = [answered_after(1)]
                retried = api.post(f"/v1/conversations/{conversation}/turns/{turn}/retry")
                assert retried.status_code == 202, retried.text
                done = turn_settled(api, conversation, turn)
                assert done["status"] == "completed", done
        finally:
            assert serve.stop(signal.SIGTERM) == 0, serve.output()[-3000:]
