"""The model-call budget (issue 36 item 2.3): per connection and per account, counted
before the model is called. With a budget of N, N calls reach the fake
OpenAI-compatible server (through the real `openai` client) and the next is answered
429 `model_budget_exceeded` with `Retry-After` — over REST `/v1/ask` and
`/v1/tools/ask`, as an MCP error result, on the website's Ask (the conversation not
advanced, nothing queued) — and never reaches it; conversation turns (with a follow-up's
rewrite), the write check and the verdict on a held change count too; a concurrent
burst does not overrun (`test_model_budget_burst.py`)."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client, override_settings

from ask.models import Conversation, Turn
from ask.rules import GENERATE
from grove.kernel.tenancy import tenant
from grove.models import Job
from notebooks import services
from notebooks.models import PendingRevision
from tests import factories
from tests.api.conftest import Caller, data, error, new_key
from tests.ask.helpers import chat_requests, generate
from tests.ask.test_ask import index_all
from tests.ask.test_ask_views import ask_form
from tests.ask.test_verification import verify
from tests.factories import op
from tests.mcp.helpers import error_of
from tests.mcp.test_protocol import call

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_clean_vector_index")]

QUESTION = "When is the boiler serviced?"
NOTHING = '{"status": "insufficient_evidence", "blocks": []}'


@pytest.fixture
def boiler(owner):
    note = factories.note(owner, "The boiler is serviced every October by Hendrik.")
    index_all(owner)
    return note


def refused(response) -> int:
    """A budget refusal: 429 `model_budget_exceeded` with a Retry-After of at most the
    window, also in the error's details; returns the wait."""
    body = error(response, 429, "model_budget_exceeded")
    wait = int(response["Retry-After"])
    assert 1 <= wait <= 60 and body["details"]["retryAfter"] == wait
    assert "nothing was asked" in body["message"]
    return wait


def generation_jobs(owner) -> int:
    """Generate jobs ever queued (done ones stay as rows)."""
    with tenant(owner):
        return Job.objects.filter(kind=GENERATE).count()


@override_settings(GROVE_MODEL_CALLS_PER_CONNECTION=3, GROVE_MODEL_CALLS_PER_ACCOUNT=0)
def test_a_connection_gets_its_n_calls_and_the_next_never_reaches_the_model(
        owner, boiler, provider):
    key, _ = new_key(owner)
    api = Caller(Client(), key)
    provider.chat_replies = [NOTHING] * 10
    for _ in range(3):
        assert data(api.post("/ask", {"query": QUESTION}))["status"] == \
            "insufficient_evidence"
    assert len(chat_requests(provider)) == 3
    refused(api.post("/ask", {"query": QUESTION}))
    assert len(chat_requests(provider)) == 3  # refused before the model was called
    # What makes no model call spends nothing and is not refused.
    assert data(api.post("/ask", {"query": QUESTION, "mode": "search"}))["status"] == \
        "search"
    # Another connection of the account has a budget of its own.
    other, _ = new_key(owner)
    assert Caller(Client(), other).post("/ask", {"query": QUESTION}).status_code == 200
    assert len(chat_requests(provider)) == 4


@override_settings(GROVE_MODEL_CALLS_PER_CONNECTION=10, GROVE_MODEL_CALLS_PER_ACCOUNT=3)
def test_the_account_budget_holds_across_connections_and_the_website(owner, boiler, web,
                                                                    provider):
    first, second = Caller(Client(), new_key(owner)[0]), Caller(Client(), new_key(owner)[0])
    provider.chat_replies = [NOTHING] * 10
    assert first.post("/ask", {"query": QUESTION}).status_code == 200
    assert first.post("/ask", {"query": QUESTION}).status_code == 200
    assert second.post("/ask", {"query": QUESTION}).status_code == 200
    response = second.post("/ask", {"query": QUESTION})
    refused(response)
    assert "this account" in response.json()["error"]["message"]
    # The owner's Ask on the website shares the account's budget: a clear message, the
    # question kept, and no conversation left behind.
    page = web.post("/ask/new", ask_form(QUESTION))
    assert page.status_code == 429 and 1 <= int(page["Retry-After"]) <= 60
    text = page.content.decode()
    assert "a minute) is spent" in text and "Try again in" in text
    assert QUESTION in text
    with tenant(owner):
        assert not Conversation.objects.exists()
    assert generation_jobs(owner) == 0
    assert len(chat_requests(provider)) == 3


@override_settings(GROVE_MODEL_CALLS_PER_CONNECTION=1, GROVE_MODEL_CALLS_PER_ACCOUNT=0)
def test_the_ask_tool_over_rest_and_mcp_is_refused_with_the_code(owner, boiler, provider):
    key, _ = new_key(owner)
    api = Caller(Client(), key)
    provider.chat_replies = [NOTHING] * 10
    assert data(api.post("/tools/ask", {"query": QUESTION}))["status"] == \
        "insufficient_evidence"
    refused(api.post("/tools/ask", {"query": QUESTION}))
    as_mcp = data(api.post("/tools/ask?format=mcp", {"query": QUESTION}))
    detail = error_of(as_mcp)
    assert detail["code"] == "model_budget_exceeded" and 1 <= detail["retryAfter"] <= 60
    detail = error_of(call(key, "ask", {"query": QUESTION}))
    assert detail["code"] == "model_budget_exceeded" and detail["limit"] == 1
    assert len(chat_requests(provider)) == 1


@override_settings(GROVE_MODEL_CALLS_PER_CONNECTION=3, GROVE_MODEL_CALLS_PER_ACCOUNT=0)
def test_turns_count_their_calls_and_a_refused_one_changes_nothing(owner, boiler, provider):
    key, asker = new_key(owner)
    api = Caller(Client(), key)
    conversation = data(api.post("/conversations", {"id": str(uuid.uuid4())}))
    turns = f"/conversations/{conversation['id']}/turns"

    def ask(version):
        return api.post(turns, {"id": str(uuid.uuid4()), "query": QUESTION,
                                "expectedVersion": version})

    provider.chat_replies = [NOTHING]
    assert ask(0).status_code == 202  # the first turn: its answer, one call
    assert generate(asker) == 1 and len(chat_requests(provider)) == 1
    provider.chat_replies = [json.dumps({"question": QUESTION}), NOTHING]
    assert ask(1).status_code == 202  # a follow-up: the rewrite and the answer, two
    assert generate(asker) == 1 and len(chat_requests(provider)) == 3
    refused(ask(2))
    detail = data(api.get(f"/conversations/{conversation['id']}"))
    assert detail["version"] == 2 and len(detail["turns"]) == 2  # not advanced
    assert generation_jobs(owner) == 2  # the two turns': nothing queued for the third
    assert generate(asker) == 0 and len(chat_requests(provider)) == 3


@override_settings(GROVE_MODEL_CALLS_PER_CONNECTION=10, GROVE_MODEL_CALLS_PER_ACCOUNT=1)
def test_the_website_refuses_a_turn_before_queueing_it(owner, boiler, web, provider):
    me = factories.Actor.for_session(owner.account_id)
    provider.chat_replies = [NOTHING]
    url = web.post("/ask/new", ask_form(QUESTION))["Location"]
    assert generate(me) == 1
    conversation_id = url.rstrip("/").rsplit("/", 1)[1]
    follow_up = ask_form("And who services it?", expected_version="1")
    page = web.post(f"/ask/{conversation_id}/turns", follow_up)
    assert page.status_code == 429 and int(page["Retry-After"]) >= 1
    assert "a minute) is spent" in page.content.decode()
    with tenant(owner):
        assert Conversation.objects.get().version == 1
        assert Turn.objects.count() == 1
    assert generation_jobs(owner) == 1 and len(chat_requests(provider)) == 1


@override_settings(GROVE_MODEL_CALLS_PER_CONNECTION=1, GROVE_MODEL_CALLS_PER_ACCOUNT=0)
def test_a_checked_write_over_budget_is_refused_before_the_model(owner, provider):
    ops = factories.notebook(owner, "Ops")
    rule = factories.note(owner, "Invoice totals are in euros.", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[rule.id],
                           policy="restrict")
    services.truth_set_verification(actor=owner, notebook_id=ops.id, verify=True)
    key, _ = new_key(owner, personal=False, all_notebooks=False, notebooks=[ops.id])
    api = Caller(Client(), key)
    supported = json.dumps({"findings": [{"claim": "Totals are in euros.",
                                          "finding": "supported",
                                          "note_id": rule.versioned_id, "why": "it says"}]})
    provider.chat_replies = [supported] * 3
    body = {"content": "Totals are in euros.", "kind": "fact", "notebookId": str(ops.id)}
    assert api.post("/notes", body).status_code == 201
    refused(api.post("/notes", {**body, "content": "Totals are in euros, always."}))
    assert len(chat_requests(provider)) == 1
    with tenant(owner):
        assert not PendingRevision.objects.exists()


@override_settings(GROVE_MODEL_CALLS_PER_CONNECTION=1, GROVE_MODEL_CALLS_PER_ACCOUNT=0)
def test_a_held_change_over_budget_needs_review_without_a_call(owner, provider):
    ops = factories.notebook(owner, "Ops")
    contract = factories.note(owner, "Orders carry id and total.", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[contract.id])
    writer = factories.connection(owner, notebooks=[ops.id])
    held = [services.note_update(actor=writer, operation_id=op(), note_id=contract.id,
                                 content=f"Orders carry id and total, in {money}.")
            .pending_revision.id for money in ("dollars", "pounds")]
    provider.chat_replies = [json.dumps({"findings": [{
        "claim": "in dollars", "finding": "unverifiable", "note_id": "", "why": "new"}]})]
    verify(owner)
    with tenant(owner):
        verdicts = {p.id: p.verdict for p in PendingRevision.objects.all()}
    assert sorted(verdicts[i] for i in held) == ["needs_review", "unverifiable"]
    assert len(chat_requests(provider)) == 1


@override_settings(GROVE_LLM_TIMEOUT=2.5, GROVE_MODEL_CALLS_PER_CONNECTION=0,
                   GROVE_MODEL_CALLS_PER_ACCOUNT=40)
def test_settings_shows_the_timeout_and_the_budgets(web, provider):
    page = web.get("/settings/").content.decode()
    assert "a try times out after 2.5 s" in page and "GROVE_LLM_TIMEOUT" in page
    assert "no limit per connection, 40 per account" in page


@override_settings(GROVE_MODEL_CALLS_PER_CONNECTION=10, GROVE_MODEL_CALLS_PER_ACCOUNT=1)
def test_a_tidy_up_counts_and_is_refused_before_it_starts(owner, web, provider):
    house = factories.notebook(owner, "House")
    ids = {"conversation_id": str(uuid.uuid4()), "turn_id": str(uuid.uuid4())}
    assert web.post(f"/ask/tidy/{house.id}", ids).status_code == 302
    again = web.post(f"/ask/tidy/{house.id}", {"conversation_id": str(uuid.uuid4()),
                                              "turn_id": str(uuid.uuid4())})
    assert again.status_code == 429 and int(again["Retry-After"]) >= 1
    assert "a minute) is spent" in again.content.decode()
    with tenant(owner):
        assert Conversation.objects.count() == 1  # the refused one left nothing behind
    assert generation_jobs(owner) == 1
