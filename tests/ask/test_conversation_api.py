"""Conversations over REST (`/v1/conversations…`): each connection sees its own, replays
and conflicts, turns answered by the job, search, export and delete."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from ask.models import Conversation
from grove.kernel.tenancy import tenant
from tests import factories
from tests.api.conftest import Caller, new_key
from tests.ask.helpers import generate
from tests.ask.test_ask import answer, index_all

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_clean_vector_index")]


def test_over_rest_each_connection_sees_its_own(owner, provider):
    shared = factories.notebook(owner, "Shared")
    note = factories.note(owner, "The router admin page is at 192.168.1.1.",
                          notebook_id=shared.id)
    index_all(owner)
    key, agent = new_key(owner, all_notebooks=False, personal=False, notebooks=[shared.id])
    other_key, _ = new_key(owner)
    api, other = Caller(Client(), key), Caller(Client(), other_key)
    conversation_id = str(uuid.uuid4())
    body = {"id": conversation_id, "notebookId": str(shared.id), "title": "Network"}
    made = api.post("/conversations", body)
    assert made.status_code == 201 and made.json()["data"]["scope"] == "notebook"
    assert api.post("/conversations", body).status_code == 200
    assert api.post("/conversations", {**body, "title": "Else"}).status_code == 409
    turn_id = str(uuid.uuid4())
    turn_body = {"id": turn_id, "query": "Where is the router admin page?",
                 "expectedVersion": 0,
                 "context": {"notes": [str(note.id)], "only": True}}
    asked = api.post(f"/conversations/{conversation_id}/turns", turn_body)
    assert asked.status_code == 202 and asked.json()["data"]["status"] == "pending"
    assert api.post(f"/conversations/{conversation_id}/turns", turn_body).status_code == 200
    conflict = api.post(f"/conversations/{conversation_id}/turns",
                        {**turn_body, "query": "Something else?"})
    assert conflict.status_code == 409 and conflict.json()["error"]["code"] == "turn_conflict"
    stale = api.post(f"/conversations/{conversation_id}/turns",
                     {**turn_body, "id": str(uuid.uuid4())})
    assert stale.json()["error"]["code"] == "version_conflict"
    provider.chat_replies = [answer("answered", ("At 192.168.1.1.", [f"note:{note.id}@1"]))]
    generate(agent)
    turn = api.get(f"/conversations/{conversation_id}/turns/{turn_id}").json()["data"]
    assert turn["status"] == "completed"
    assert turn["result"]["blocks"][0]["citations"] == [f"note:{note.id}@1"]
    assert turn["result"]["contextCoverage"]["complete"] is True
    assert other.get(f"/conversations/{conversation_id}").status_code == 404
    listed = api.get("/conversations").json()
    assert [c["id"] for c in listed["data"]] == [conversation_id]
    assert other.get("/conversations").json()["data"] == []
    found = api.post("/conversations/search", {"query": "ROUTER admin"}).json()
    assert [c["id"] for c in found["data"]] == [conversation_id]
    exported = api.get(f"/conversations/{conversation_id}/export")
    assert exported.status_code == 200 and "attachment" in exported["Content-Disposition"]
    record = exported.json()
    assert record["type"] == "grove-conversation"
    assert record["turns"][0]["context"] == {"notes": [str(note.id)], "notebooks": [],
                                             "only": True}
    assert api.call("DELETE", f"/conversations/{conversation_id}").status_code == 204
    assert api.get(f"/conversations/{conversation_id}").status_code == 404
    assert api.post("/conversations", body).status_code == 409  # the id stays taken
    with tenant(owner):
        assert Conversation.objects.filter(client_id=conversation_id).exists()  # retained
