"""A stranger gets the same answer for someone else's thing over every interface (STYLE
§9): the website, REST and MCP all say "not found", exactly as for an id that does not
exist — for notes, notebooks, conversations and share links — and nothing of it leaks."""

import json
import uuid

import pytest
from django.test import Client

from ask.services import conversation_create
from grove.models import Account
from sharing.services import share_create
from tests import factories
from tests.api.conftest import Caller, new_key

pytestmark = pytest.mark.django_db

SECRET = "private plans"


@pytest.fixture
def owner():
    return factories.owner()


@pytest.fixture
def stranger():
    """Another account: its website session, an API key, and MCP over that key."""
    actor = factories.owner()
    key, _ = new_key(actor)
    web = Client()
    web.force_login(Account.objects.get(id=actor.account_id))
    return web, Caller(Client(), key), key


def mcp_error(key: str, tool: str, arguments: dict) -> str:
    """The error code of a tool call over /mcp (its result's JSON detail block)."""
    response = Client().post(
        "/mcp", content_type="application/json",
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": tool, "arguments": arguments}}),
        headers={"Authorization": f"Bearer {key}", "MCP-Protocol-Version": "2025-11-25",
                 "Accept": "application/json, text/event-stream"})
    assert response.status_code == 200
    assert SECRET not in response.content.decode()
    result = response.json()["result"]
    assert result["isError"] is True
    return json.loads(result["content"][1]["text"])["code"]


def same_for_foreign_and_missing(real_id, answer) -> tuple:
    """Ask about the real (foreign) id and an id that does not exist: same answers."""
    foreign, missing = answer(real_id), answer(uuid.uuid4())
    assert foreign == missing, (foreign, missing)
    return foreign


def page(web: Client, path: str) -> int:
    response = web.get(path)
    assert SECRET not in response.content.decode()
    return response.status_code


def rest(caller: Caller, method: str, path: str, body=None) -> tuple[int, str]:
    response = caller.call(method, path, body)
    assert SECRET not in response.content.decode()
    return response.status_code, response.json()["error"]["code"]


def test_a_note(owner, stranger):
    note = factories.note(owner, SECRET)
    web, api, key = stranger
    answers = same_for_foreign_and_missing(note.id, lambda i: (
        page(web, f"/notes/{i}/"), rest(api, "GET", f"/notes/{i}"),
        mcp_error(key, "get_note", {"noteId": str(i)}),
        mcp_error(key, "update_memory", {"noteId": str(i), "content": "mine now"})))
    assert answers == (404, (404, "note_not_found"), "note_not_found", "note_not_found")

    owner_web = Client()
    owner_web.force_login(Account.objects.get(id=owner.account_id))
    mine = owner_web.get(f"/notes/{note.id}/")
    assert mine.status_code == 200 and SECRET in mine.content.decode()
    assert "<strong>v1</strong> · <span class=\"reason\" data-reason=\"create\">Created</span>" \
        in mine.content.decode()


def test_a_notebook(owner, stranger):
    notebook = factories.notebook(owner, SECRET)
    web, api, key = stranger
    answers = same_for_foreign_and_missing(notebook.id, lambda i: (
        page(web, f"/notebooks/{i}/"), rest(api, "PATCH", f"/notebooks/{i}", {"name": "x"}),
        rest(api, "GET", f"/notebooks/{i}/counts"),
        mcp_error(key, "update_notebook", {"notebookId": str(i), "name": "x"})))
    assert answers == (404, (404, "notebook_not_found"), (404, "notebook_not_found"),
                       "notebook_not_found")


def test_a_conversation(owner, stranger):
    conversation, _ = conversation_create(actor=owner, conversation_id=uuid.uuid4(),
                                          title=SECRET)
    web, _, _ = stranger
    # Conversations are the website session's (and their own connection's) only.
    session_api = Caller(web, None)
    answers = same_for_foreign_and_missing(conversation.id, lambda i: (
        page(web, f"/ask/{i}/"), rest(session_api, "GET", f"/conversations/{i}")))
    assert answers == (404, (404, "conversation_not_found"))


def test_a_share_link(owner, stranger):
    note = factories.note(owner, SECRET)
    share, _ = share_create(actor=owner, note_id=note.id)
    web, _, _ = stranger
    session_api = Caller(web, None)
    answers = same_for_foreign_and_missing(share.id, lambda i: (
        web.post(f"/shares/{i}/revoke").status_code,
        rest(session_api, "POST", f"/shares/{i}/revoke")))
    assert answers == (404, (404, "share_not_found"))
    # …and the link itself still works: the stranger's attempts changed nothing.
    assert SECRET in Client().get(f"/public/shares/{share.token}").content.decode()
