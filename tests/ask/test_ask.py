"""Stateless Ask (`ask.services.ask`, `POST /v1/ask`, the `ask` MCP tool) against a fake
OpenAI-compatible server driven by the real `openai` client: cited answers, citations of
anything not shown dropped and marked unsupported, wrong versions, malformed JSON,
timeouts and 500s (never a made-up answer), no evidence → no model call, generation
off → sources only."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client, override_settings

from ask.rules import QUERY_MAX_CHARS
from ask.selectors import conversation_get
from ask.services import ask
from grove.kernel import jobs
from grove.kernel.errors import Invalid, Unavailable
from notebooks.services.indexing import EMBED
from tests import factories
from tests.api.conftest import Caller, new_key
from tests.ask.helpers import generate
from tests.mcp.helpers import error_of

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_clean_vector_index")]


def index_all(actor):
    while jobs.run_batch(account_id=actor.account_id, kind=EMBED):
        pass


def answer(status: str, *blocks: tuple[str, list[str]]) -> str:
    return json.dumps({"status": status, "blocks": [{"text": t, "citations": c}
                                                     for t, c in blocks]})


def test_a_cited_answer_names_exact_revisions(owner, provider):
    note = factories.note(owner, "The staging database is rebuilt every Sunday night.")
    index_all(owner)
    cite = f"note:{note.id}@1"
    provider.chat_replies = [answer("answered", ("Staging is rebuilt on Sundays.", [cite]))]
    result = ask(actor=owner, query="When is the staging database rebuilt?")
    assert result.status == "answered"
    assert [(b.text, b.citations, b.supported) for b in result.blocks] == [
        ("Staging is rebuilt on Sundays.", [cite], True)]
    assert [s.cite_as for s in result.sources] == [cite]
    sent = provider.requests[-1]["body"]
    assert sent["model"] == "fake-model" and sent["response_format"]["type"] == "json_schema"
    assert cite in sent["messages"][1]["content"]
    assert provider.requests[-1]["auth"] == "Bearer sk-test"


def test_citations_of_notes_not_shown_are_dropped_and_marked(owner, provider):
    note = factories.note(owner, "Deploys happen on Tuesdays after the standup.")
    stranger = factories.owner()
    theirs = factories.note(stranger, "Deploys happen on Fridays.")
    index_all(owner)
    shown = f"note:{note.id}@1"
    provider.chat_replies = [answer(
        "answered",
        ("Deploys are on Tuesdays.", [shown]),
        ("Or on Fridays.", [f"note:{theirs.id}@1"]),          # another account's note
        ("Tuesdays, version two.", [f"note:{note.id}@2"]),    # a version it was not shown
        ("Mixed.", [shown, "note:00000000-0000-0000-0000-000000000000@1"]),
        ("No sources at all.", []))]
    result = ask(actor=owner, query="When do deploys happen?")
    assert [(b.citations, b.supported) for b in result.blocks] == [
        ([shown], True), ([], False), ([], False), ([shown], False), ([], False)]
    assert str(theirs.id) not in result.model_dump_json()


@pytest.mark.parametrize("reply", ["not json at all", '{"status": "answered"}',
                                   '{"status": "maybe", "blocks": []}', 500, "sleep:3"])
def test_a_failing_provider_is_unavailable_never_a_guess(owner, provider, reply):
    factories.note(owner, "The boiler is serviced every October.")
    index_all(owner)
    provider.chat_replies = [reply] * 4  # the client retries a bounded number of times
    with pytest.raises(Unavailable) as raised:
        ask(actor=owner, query="When is the boiler serviced?")
    assert raised.value.code == "provider_unavailable" and raised.value.status == 503


def test_no_evidence_means_no_model_call(owner, provider):
    factories.note(owner, "Bananas are yellow.")
    index_all(owner)
    result = ask(actor=owner, query="quantum chromodynamics lattice gauge")
    assert result.status == "no_evidence" and result.blocks == [] and result.sources == []
    assert provider.requests == []


def test_without_a_provider_ask_returns_the_sources(owner):
    note = factories.note(owner, "The bike lock code is kept in the blue notebook.")
    index_all(owner)
    with override_settings(GROVE_LLM_BASE_URL=None, GROVE_LLM_MODEL=None):
        result = ask(actor=owner, query="Where is the bike lock code?")
    assert result.status == "disabled" and result.blocks == []
    assert [s.note.id for s in result.sources] == [note.id]


def test_search_mode_and_scope(owner, provider):
    garden = factories.notebook(owner, "Garden")
    in_garden = factories.note(owner, "Tomatoes need staking.", notebook_id=garden.id)
    factories.note(owner, "Tomatoes on toast for breakfast.")
    index_all(owner)
    only = ask(actor=owner, query="tomatoes", notebook_id=garden.id, mode="search")
    assert only.status == "search" and [s.note.id for s in only.sources] == [in_garden.id]
    personal = ask(actor=owner, query="tomatoes", notebook_id=None, mode="search")
    assert in_garden.id not in [s.note.id for s in personal.sources]
    assert provider.requests == []


@pytest.mark.parametrize("bad", [{"query": ""}, {"query": "x" * (QUERY_MAX_CHARS + 1)},
                                 {"query": "ok", "previous_questions": ["a"] * 5},
                                 {"query": "ok", "mode": "poem"}])
def test_bad_questions_are_refused(owner, bad):
    with pytest.raises(Invalid):
        ask(actor=owner, **bad)


def test_over_rest_and_mcp_with_the_grant(owner, provider):
    shared = factories.notebook(owner, "Shared")
    hidden = factories.notebook(owner, "Hidden")
    visible = factories.note(owner, "The wifi password is on the fridge.", notebook_id=shared.id)
    factories.note(owner, "The wifi password is hunter2.", notebook_id=hidden.id)
    index_all(owner)
    key, _ = new_key(owner, all_notebooks=False, personal=False, notebooks=[shared.id])
    cite = f"note:{visible.id}@1"
    provider.chat_replies = [answer("answered", ("It is on the fridge.", [cite]))] * 2
    rest = Caller(Client(), key).post("/ask", {"query": "What is the wifi password?"})
    assert rest.status_code == 200
    data = rest.json()["data"]
    assert data["blocks"][0]["citations"] == [cite]
    assert [s["citeAs"] for s in data["sources"]] == [cite]
    assert "hunter2" not in json.dumps(provider.requests)  # the hidden note never left
    mcp = Client().post("/mcp", data=json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ask", "arguments": {"query": "What is the wifi password?"}}}),
        content_type="application/json", headers={"Authorization": f"Bearer {key}"})
    result = mcp.json()["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["blocks"][0]["citations"] == [cite]
    provider.chat_replies = [500] * 4
    down = Caller(Client(), key).post("/ask", {"query": "What is the wifi password?"})
    assert down.status_code == 503 and down.json()["error"]["code"] == "provider_unavailable"


def test_a_question_has_recalls_limit_and_is_never_cut(owner, provider):
    """One limit, recall's: a 2,000-character question is asked as it is; one of 2,001
    is refused up front with invalid_query — over REST (stateless and in a
    conversation) and MCP — and nothing is stored or cut."""
    assert QUERY_MAX_CHARS == 2000  # the number the docs and the form state
    note = factories.note(owner, "The boiler is serviced every October.")
    index_all(owner)
    key, agent = new_key(owner)
    api = Caller(Client(), key)
    question = "When is the boiler serviced? "
    longest = question + "x" * (QUERY_MAX_CHARS - len(question) - 1) + "?"
    assert len(longest) == 2000
    too_long = longest + "?"

    refused = api.post("/ask", {"query": too_long, "mode": "search"})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_query"
    refused = api.post("/ask", {"query": "ok", "previousQuestions": [too_long]})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_query"
    assert api.post("/ask", {"query": longest, "mode": "search"}).status_code == 200
    mcp = Client().post("/mcp", data=json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ask", "arguments": {"query": too_long}}}),
        content_type="application/json", headers={"Authorization": f"Bearer {key}"})
    assert error_of(mcp.json()["result"])["code"] == "invalid_query"
    assert provider.requests == []

    conversation_id = str(uuid.uuid4())
    assert api.post("/conversations", {"id": conversation_id}).status_code == 201
    turns = f"/conversations/{conversation_id}/turns"
    over = api.post(turns, {"id": str(uuid.uuid4()), "query": too_long, "expectedVersion": 0})
    assert over.status_code == 400 and over.json()["error"]["code"] == "invalid_query"
    assert conversation_get(actor=agent, conversation_id=conversation_id).turns == []
    turn_id = str(uuid.uuid4())
    asked = api.post(turns, {"id": turn_id, "query": longest, "expectedVersion": 0})
    assert asked.status_code == 202 and asked.json()["data"]["query"] == longest
    cite = f"note:{note.id}@1"
    provider.chat_replies = [answer("answered", ("Every October.", [cite]))]
    generate(agent)
    done = api.get(f"{turns}/{turn_id}").json()["data"]
    assert done["status"] == "completed", done["error"]
    assert done["result"]["sources"][0]["citeAs"] == cite  # recalled for the whole question
    prompt = provider.requests[-1]["body"]["messages"][1]["content"]
    assert prompt.endswith(f"Question: {longest}")


PROPOSALS = ("Changes to the notes, only when the question asks for them (edit, merge, tidy, "
             "organise, archive, restore, delete, create); otherwise empty")
ACTION = "organise only: which change; null for other kinds"
SUMMARY = "One sentence for the owner: what changes and why"
NOTES = ("The ids of the notes it acts on, copied exactly (note:<uuid>@<version>); for a "
         "merge the surviving note first; empty for create, create_notebook and "
         "move_notebook")
CONTENT = ("edit, merge, create: the note's whole new content (markdown) — for an edit of "
           "a part (…#<n>), that part's new text; null otherwise, or for an edit that only "
           "changes the kind")
NOTE_KIND = "create: the new note's kind; edit: a new kind, or null to keep it"
NOTEBOOK = ("create and move_notes: the destination, a notebook id from the list "
            "(notebook:<uuid>) or \"personal\"; create_notebook and move_notebook: the "
            "parent, a notebook id or \"root\"; null otherwise")
SUBJECT = "move_notebook: the notebook to move (notebook:<uuid>); null otherwise"
NAME = "create_notebook: the new notebook's name; null otherwise"


def test_the_reply_schemas_are_the_models_strict_schemas(owner, provider):
    """The schema sent to the model is derived from the pydantic model its reply is
    validated against, and stays inside the strict structured-output subset."""
    from ask import providers

    def objects(node):
        if isinstance(node, dict):
            if node.get("type") == "object":
                yield node
            for value in node.values():
                yield from objects(value)
        elif isinstance(node, list):
            for value in node:
                yield from objects(value)

    # What the model was sent when these schemas were written by hand: the derived ones
    # must be exactly that.
    written_by_hand = {
        "answer": {
            "type": "object", "additionalProperties": False,
            "required": ["status", "blocks", "proposals"],
            "properties": {
                "status": {"type": "string", "enum": ["answered", "insufficient_evidence"]},
                "blocks": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False,
                    "required": ["text", "citations"],
                    "properties": {"text": {"type": "string"}, "citations": {
                        "type": "array", "items": {"type": "string"}}}}},
                "proposals": {"type": "array", "description": PROPOSALS, "items": {
                    "type": "object", "additionalProperties": False,
                    "required": ["kind", "action", "summary", "notes", "content",
                                 "note_kind", "notebook", "subject", "name"],
                    "properties": {
                        "kind": {"type": "string", "enum": [
                            "edit", "create", "merge", "organise", "archive", "restore",
                            "delete"]},
                        "action": {"anyOf": [{"type": "string", "enum": [
                            "move_notes", "create_notebook", "move_notebook"]},
                            {"type": "null"}], "description": ACTION},
                        "summary": {"type": "string", "description": SUMMARY},
                        "notes": {"type": "array", "items": {"type": "string"},
                                  "description": NOTES},
                        "content": {"anyOf": [{"type": "string"}, {"type": "null"}],
                                    "description": CONTENT},
                        "note_kind": {"anyOf": [{"type": "string", "enum": [
                            "fact", "preference", "decision", "solution"]},
                            {"type": "null"}], "description": NOTE_KIND},
                        "notebook": {"anyOf": [{"type": "string"}, {"type": "null"}],
                                     "description": NOTEBOOK},
                        "subject": {"anyOf": [{"type": "string"}, {"type": "null"}],
                                    "description": SUBJECT},
                        "name": {"anyOf": [{"type": "string"}, {"type": "null"}],
                                 "description": NAME}}}}}},
        "standalone": {
            "type": "object", "additionalProperties": False, "required": ["question"],
            "properties": {"question": {"type": "string"}}},
    }
    for name, schema in (("answer", providers.ANSWER_SCHEMA),
                         ("standalone", providers.STANDALONE_SCHEMA)):
        assert schema == written_by_hand[name]
        text = json.dumps(schema)
        for absent in ("$ref", "$defs", "title", "maxLength", "minLength", "maxItems"):
            assert absent not in text, (name, absent)
        for node in objects(schema):
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])
    assert providers.ANSWER_SCHEMA["properties"]["status"]["enum"] == [
        "answered", "insufficient_evidence"]
    assert set(providers.ANSWER_SCHEMA["properties"]["blocks"]["items"]["properties"]) == {
        "text", "citations"}
    note = factories.note(owner, "The boiler is serviced every October.")
    index_all(owner)
    provider.chat_replies = [answer("answered", ("October.", [f"note:{note.id}@1"]))]
    ask(actor=owner, query="When is the boiler serviced?")
    sent = provider.requests[-1]["body"]["response_format"]["json_schema"]
    assert sent == {"name": "grove_answer", "strict": True, "schema": providers.ANSWER_SCHEMA}
