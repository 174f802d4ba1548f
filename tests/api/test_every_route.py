"""Every `/v1` route, enumerated from the OpenAPI document so a new route cannot slip
through: anonymous → 401, a read-only key on a write route → 403, another account's
ids → the same 404 as a missing id, and a success for the owner's own objects."""

from __future__ import annotations

import re
import uuid

import pytest
from django.test import Client

from ask.models import Proposal, Turn
from ask.selectors.fingerprints import affected, fingerprint
from ask.services import conversation_create, turn_submit
from grove.kernel.tenancy import tenant
from notebooks import services
from sharing import services as share_services
from tests import factories
from tests.api.conftest import Caller, new_key
from tests.factories import op

pytestmark = pytest.mark.django_db

READ_ONLY_METHODS = {"get"}
# Write routes that are reads in disguise (query in the body).
# (`/v1/tools/{tool}` is exercised with the read tool `get_note`; write tools with a
# read-only key: tests/mcp/test_protocol.py.)
READS_BY_POST = {"/v1/notes/search", "/v1/recall", "/v1/tools/{tool}", "/v1/ask"}
# Conversations are Ask (reading): a read-only key may hold its own.
CONVERSATIONS = "/v1/conversations"
PROPOSALS = ("/v1/conversations/{conversation_id}/turns/{turn_id}/proposals/{proposal_id}/apply",
             "/v1/conversations/{conversation_id}/turns/{turn_id}/proposals/{proposal_id}/undo")
SESSION_ONLY = {"/v1/connections", "/v1/connections/keys", "/v1/connections/{connection_id}",
                "/v1/connections/{connection_id}/revoke", "/v1/notebooks/{notebook_id}/{action}",
                "/v1/shares", "/v1/shares/{share_id}/revoke", *PROPOSALS}


def conversation_of(actor, note_id=None) -> dict[str, str]:
    """A conversation of `actor` with one turn, failed (so that it can be retried), and
    a proposal to archive `note_id` (another account's ids: a stand-in)."""
    made, _ = conversation_create(actor=actor, conversation_id=uuid.uuid4())
    turn, _ = turn_submit(actor=actor, conversation_id=made.id,
                                        turn_id=uuid.uuid4(), query="hello?",
                                        expected_version=0)
    with tenant(actor):
        Turn.objects.filter(client_id=turn.id).update(status="failed", error_code="test")
        row = Turn.objects.get(client_id=turn.id)
        change = {"step": "archive", "notes": [[str(note_id or uuid.uuid4()), 2]],
                  "content": None, "noteKind": None, "destination": None, "subject": None,
                  "name": None}
        preview = {"kind": "archive", "action": None, "summary": "Archive it.", "preview": {
            "notes": [], "diffs": [], "notebooks": [], "undo": "Undo restores the notes."}}
        made_proposal = Proposal.objects.create(
            account_id=actor.account_id, turn=row, position=1, kind="archive",
            change=change, preview=preview, fingerprint=fingerprint(affected(change)))
    return {"conversation_id": str(made.id), "turn_id": str(turn.id),
            "proposal_id": str(made_proposal.id)}


def routes() -> list[tuple[str, str]]:
    schema = Caller(Client(), None).get("/openapi.json").json()
    return sorted((method, path) for path, item in schema["paths"].items()
                  for method in item if method in ("get", "post", "patch", "put", "delete"))


def fill(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], path)


def body_for(method: str, path: str, ids: dict[str, str]) -> dict | None:
    """A valid body for each route with a body (the owner's own objects)."""
    bodies = {
        "/v1/notes": {"content": "hello", "kind": "fact"},
        "/v1/notes/{note_id}": {"content": "hello again"},
        "/v1/notes/search": {"query": "hello"},
        "/v1/notes/batch": {"items": [{"content": "hello", "kind": "fact"}]},
        "/v1/handoffs/session": {"sessionId": "s-1", "client": "claude-code",
                                 "request": "Fix the login test."},
        "/v1/notes/{note_id}/restore-revision": {"revision": 1},
        "/v1/notes/archive": {"items": [ids["note_id"]]},
        "/v1/notes/restore": {"items": [ids["note_id"]]},
        "/v1/notes/forget": {"items": [ids["note_id"]]},
        "/v1/notes/move": {"noteIds": [ids["note_id"]], "notebookId": ids["notebook_id"]},
        "/v1/notebooks": {"name": "New"},
        "/v1/notebooks/{notebook_id}": {"name": "Renamed"},
        "/v1/recall": {"query": "hello"},
        "/v1/connections/keys": {"name": "k"},
        "/v1/shares": {"noteId": ids["note_id"]},
        "/v1/connections/{connection_id}": {"expectedState": "x", "name": "n"},
        "/v1/account/settings": {"capturePaused": False},
        "/v1/tools/{tool}": {"noteId": ids["note_id"]},
        "/v1/ask": {"query": "hello", "mode": "search"},
        "/v1/conversations": {"id": str(uuid.uuid4())},
        "/v1/conversations/search": {"query": "hello"},
        PROPOSALS[0]: {},
        PROPOSALS[1]: {},
        "/v1/conversations/{conversation_id}/turns": {
            "id": str(uuid.uuid4()), "query": "hello again?", "expectedVersion": 1},
        "/v1/vision": {"content": "What the work is for."},
        "/v1/notebooks/{notebook_id}/vision": {"content": "What this notebook is for."},
    }
    if method in ("post", "patch", "put") and path in bodies:
        return bodies[path]
    return None


def test_the_route_table_is_what_the_tests_cover():
    assert len(routes()) >= 25
    for _method, path in routes():
        assert path.startswith("/v1/")


@pytest.mark.parametrize(("method", "path"), routes())
def test_anonymous_is_401_everywhere(method, path):
    ids = {"note_id": str(uuid.uuid4()), "notebook_id": str(uuid.uuid4()),
           "connection_id": str(uuid.uuid4()), "typed_id": f"note:{uuid.uuid4()}",
           "action": "archive", "tool": "get_note", "conversation_id": str(uuid.uuid4()),
           "turn_id": str(uuid.uuid4()), "share_id": str(uuid.uuid4()),
           "proposal_id": str(uuid.uuid4())}
    response = Caller(Client(), None).call(method.upper(), fill(path, ids)[3:],
                                           body_for(method, path, {**ids}))
    assert response.status_code == 401, (method, path, response.content[:300])
    assert response.json()["error"]["code"] == "unauthenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(("method", "path"), routes())
def test_read_only_keys_cannot_write_and_keys_cannot_administer(method, path):
    owner = factories.owner()
    notebook = factories.notebook(owner, "Book")
    note = factories.note(owner, "hello", notebook_id=notebook.id)
    key, actor = new_key(owner, capabilities=["memory:read"])
    ids = {"note_id": str(note.id), "notebook_id": str(notebook.id),
           "connection_id": str(actor.connection_id), "typed_id": f"note:{note.id}",
           "action": "archive", "tool": "get_note", "share_id": str(uuid.uuid4()),
           **conversation_of(actor)}
    response = Caller(Client(), key).call(method.upper(), fill(path, ids)[3:],
                                          body_for(method, path, ids))
    if path.startswith(CONVERSATIONS) and path not in PROPOSALS:
        assert response.status_code in (200, 201, 202, 204), (method, path,
                                                               response.content[:300])
    elif path in SESSION_ONLY:
        assert response.status_code == 403, (method, path, response.content[:300])
        assert response.json()["error"]["code"] == "session_required"
    elif method in READ_ONLY_METHODS or path in READS_BY_POST:
        assert response.status_code == 200, (method, path, response.content[:300])
    elif path == "/v1/account/settings":
        assert response.json()["error"]["code"] == "session_required"
    else:
        assert response.status_code == 403, (method, path, response.content[:300])
        assert response.json()["error"]["code"] == "insufficient_capability"


@pytest.mark.parametrize(("method", "path"), [r for r in routes() if "{" in r[1]
                                              and "{action}" not in r[1]])
def test_foreign_ids_are_the_same_404_as_missing_ones(method, path):
    owner = factories.owner()
    key, actor = new_key(owner)
    stranger = factories.owner()
    their_book = factories.notebook(stranger, "Theirs")
    their_note = factories.note(stranger, "theirs", notebook_id=their_book.id)
    _, their_key = new_key(stranger)
    foreign = {"note_id": str(their_note.id), "notebook_id": str(their_book.id),
               "connection_id": str(their_key.connection_id),
               "typed_id": f"note:{their_note.id}", "tool": "get_note",
               "share_id": str(share_services.share_create(
                   actor=stranger, notebook_id=their_book.id)[0].id),
               **conversation_of(their_key)}
    missing = {"note_id": str(uuid.uuid4()), "notebook_id": str(uuid.uuid4()),
               "connection_id": str(uuid.uuid4()), "typed_id": f"note:{uuid.uuid4()}",
               "tool": "get_note", "conversation_id": str(uuid.uuid4()),
               "turn_id": str(uuid.uuid4()), "share_id": str(uuid.uuid4()),
               "proposal_id": str(uuid.uuid4())}
    caller = Caller(Client(), key)
    answers = []
    for ids in (foreign, missing):
        response = caller.call(method.upper(), fill(path, ids)[3:], body_for(method, path, ids))
        answers.append((response.status_code, response.json()["error"]["code"]))
    if path.startswith(("/v1/connections", "/v1/shares")) or path in PROPOSALS:
        # (the owner's session meeting another account's proposal: tests/ask)
        assert answers[0] == answers[1] == (403, "session_required")
    else:
        assert answers[0] == answers[1], (method, path, answers)
        assert answers[0][0] == 404, (method, path, answers)


@pytest.mark.parametrize(("method", "path"), routes())
def test_every_route_succeeds_for_its_owner(method, path):
    from tests.api.test_api_core import session_caller

    owner = factories.owner()
    notebook = factories.notebook(owner, "Book")
    note = factories.note(owner, "hello", notebook_id=notebook.id, kind="fact")
    services.note_update(actor=owner, operation_id=op(), note_id=note.id, content="hello 2")
    key, actor = new_key(owner)
    ids = {"note_id": str(note.id), "notebook_id": str(notebook.id),
           "connection_id": str(actor.connection_id), "typed_id": f"note:{note.id}@1",
           "action": "archive", "tool": "get_note", **conversation_of(actor, note.id),
           "share_id": str(share_services.share_create(actor=owner,
                                                       notebook_id=notebook.id)[0].id)}
    administration = path in SESSION_ONLY or (path == "/v1/account/settings"
                                              and method == "patch")
    caller = session_caller(owner) if administration else Caller(Client(), key)
    body = body_for(method, path, ids)
    if path == "/v1/connections/{connection_id}":
        state = caller.get("/connections").json()["data"][0]["state"]
        body = {"expectedState": state, "name": "renamed"}
    if path.endswith("/undo"):  # what is undone was applied first
        assert caller.call("POST", fill(PROPOSALS[0], ids)[3:], {}).status_code == 200
    response = caller.call(method.upper(), fill(path, ids)[3:], body)
    assert response.status_code in (200, 201, 202, 204), (method, path,
                                                           response.content[:500])
    if response.status_code == 204:
        assert method == "delete" and caller.get(fill(path, ids)[3:]).status_code == 404
    elif path == "/v1/export":
        assert b"".join(response.streaming_content)
    elif path == "/v1/export/markdown":
        assert b"".join(response.streaming_content).startswith(b"PK")  # a zip
    elif path.endswith("/export"):
        assert response.json()["type"] == "grove-conversation"
    else:
        assert response.json()["success"] is True
