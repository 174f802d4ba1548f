"""`POST /v1/notes` names likely duplicates in `meta.similar` and still saves (SPEC §8),
within the key's grant; a retry answers the first save's list; and the same over MCP."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from grove.kernel import jobs
from notebooks.services.indexing import EMBED
from tests import factories
from tests.api.conftest import Caller, data, new_key

pytestmark = pytest.mark.django_db

TEXT = ("Quarterly budget review moved to Thursday afternoon because finance needs "
        "updated vendor invoices from procurement before approving travel spending limits")


@pytest.fixture(autouse=True)
def _clean_vector_index(vacuumed_vectors):
    pass


def index_all(actor):
    while jobs.run_batch(account_id=actor.account_id, kind=EMBED):
        pass


def test_rest_remember_answers_similar_in_meta(api):
    first = api.post("/notes", {"content": TEXT, "kind": "fact"})
    assert first.status_code == 201
    assert first.json()["meta"] == {"similar": []}
    index_all(api.actor)
    operation = str(uuid.uuid4())
    body = {"content": "Note: " + TEXT, "kind": "fact", "operationId": operation,
            "findSimilar": True}
    second = api.post("/notes", body)
    assert second.status_code == 201
    # The same kind in other words: also what it likely replaces (issue 39).
    assert second.json()["meta"] == {"similar": [data(first)["id"]],
                                     "replaces": [data(first)["id"]]}
    assert data(second)["content"] == "Note: " + TEXT  # saved all the same
    assert api.get(f"/notes/{data(second)['id']}").status_code == 200
    api.post("/notes", {"content": TEXT.upper(), "kind": "fact"})  # after the save
    replay = api.post("/notes", body)
    assert (replay.status_code, replay.json()) == (201, second.json())


def test_rest_similar_stays_in_the_keys_grant(owner):
    shared = factories.notebook(owner, "Shared")
    private = factories.notebook(owner, "Private")
    factories.note(owner, TEXT, notebook_id=private.id)
    factories.note(owner, TEXT)  # Personal
    mine = factories.note(owner, TEXT, notebook_id=shared.id)
    index_all(owner)
    key, _ = new_key(owner, personal=False, all_notebooks=False, notebooks=[shared.id])
    agent = Caller(Client(), key)
    saved = agent.post("/notes", {"content": TEXT, "kind": "fact", "notebookId": str(shared.id),
                                  "findSimilar": True})
    assert saved.status_code == 201
    assert saved.json()["meta"]["similar"] == [str(mine.id)]


def mcp_call(key: str, tool: str, arguments: dict) -> dict:
    response = Client().post(
        "/mcp", data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                 "params": {"name": tool, "arguments": arguments}}),
        content_type="application/json",
        headers={"Accept": "application/json, text/event-stream",
                 "Authorization": f"Bearer {key}", "MCP-Protocol-Version": "2025-11-25"})
    assert response.status_code == 200, response.content
    return response.json()["result"]


def test_mcp_remember_names_similar_notes_in_its_result_and_text(owner):
    key, _ = new_key(owner)
    first = mcp_call(key, "remember", {"content": TEXT, "kind": "fact"})
    assert first["isError"] is False
    assert "similar" not in first["structuredContent"]  # left out when there are none
    index_all(owner)
    second = mcp_call(key, "remember", {"content": TEXT.lower(), "kind": "fact"})
    first_id = first["structuredContent"]["id"].rsplit("@", 1)[0]
    assert second["structuredContent"]["similar"] == [first_id]
    assert second["structuredContent"]["created"] is True
    assert json.loads(second["content"][0]["text"])["similar"] == [first_id]
    listed = mcp_call(key, "list_notes", {})
    assert len(listed["structuredContent"]["data"]) == 2  # both saved
