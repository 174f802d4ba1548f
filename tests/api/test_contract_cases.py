"""The cases schemathesis found where `/v1/openapi.json` and the server disagreed (issue 36,
2.1), each held here on its own: the server refuses exactly what the document refuses,
with a 4xx and a code, and takes what it takes. Strictness lives in the shared argument
models, so the MCP tools (here through `/v1/tools`, which runs them as `/mcp` does) refuse
the same values."""

from __future__ import annotations

import uuid

import jsonschema
import pytest
from django.core import signing
from django.test import Client

from notebooks import selectors
from tests import factories
from tests.api.conftest import data, error

pytestmark = pytest.mark.django_db

CURSOR_LISTS = [("GET", "/notes", "cursor"), ("POST", "/notes/search", "cursor"),
                ("GET", "/notebooks", "cursor"), ("GET", "/activity", "cursor"),
                ("POST", "/conversations/search", "cursor")]


@pytest.fixture(scope="module")
def document(django_db_setup, django_db_blocker) -> dict:
    return Client().get("/v1/openapi.json").json()


def _argument(document: dict, method: str, path: str, name: str) -> jsonschema.Validator:
    """The schema the document gives one argument (query parameter or body property)."""
    operation = document["paths"][f"/v1{path}"][method.lower()]
    for parameter in operation.get("parameters", ()):
        if parameter["name"] == name:
            schema = parameter["schema"]
            break
    else:
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        name_of = body["$ref"].rsplit("/", 1)[-1]
        schema = document["components"]["schemas"][name_of]["properties"][name]
    return jsonschema.Draft202012Validator(
        {**schema, "components": document["components"]},
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def _send(api, method: str, path: str, name: str, value: str):
    if method == "GET":
        return api.get(f"{path}?{name}={value}")
    return api.post(path, {name: value})


def test_patch_notebook_with_a_null_name_is_refused_not_a_500(owner, api):
    """Was a 500: the name's length limit was applied to the null."""
    book = factories.notebook(owner, "Kitchen")
    error(api.patch(f"/notebooks/{book.id}", {"name": None}), 400, "invalid_argument")
    error(api.patch(f"/notebooks/{book.id}", {"name": None, "parentId": None}), 400,
          "invalid_argument")
    assert data(api.get(f"/get/notebook:{book.id}"))["name"] == "Kitchen"


@pytest.mark.parametrize(("method", "path", "name"), CURSOR_LISTS)
def test_cursor_0_is_refused_by_the_document_and_the_server(document, owner, api,
                                                            method, path, name):
    """`cursor=0` was valid by the document (any string) and refused by the server. The
    document now states a signed cursor's shape; one of that shape whose signature fails
    is the documented 400 `invalid_cursor`."""
    schema = _argument(document, method, path, name)
    assert not schema.is_valid("0")
    error(_send(api, method, path, name, "0"), 400, "invalid_cursor")
    forged = signing.dumps({"k": [1]}, salt="not grove's", compress=True)
    assert schema.is_valid(forged)
    error(_send(api, method, path, name, forged), 400, "invalid_cursor")
    assert "400" in document["paths"][f"/v1{path}"][method.lower()]["responses"]


def test_a_real_next_cursor_is_valid_by_the_document(document, owner, api):
    for _ in range(3):
        factories.notebook(owner, f"Book {uuid.uuid4().hex[:6]}")
    first = api.get("/notebooks?limit=2").json()
    cursor = first["meta"]["nextCursor"]
    assert _argument(document, "GET", "/notebooks", "cursor").is_valid(cursor)
    assert len(data(api.get(f"/notebooks?limit=2&cursor={cursor}"))) == 1


def test_after_naming_no_conversation_is_404_not_400(document, owner, api):
    """`after=<uuid>` is any UUID by the document; one that names no conversation of
    yours is an unknown id like any other (was 400 `invalid_after`)."""
    assert _argument(document, "GET", "/conversations", "after").is_valid(str(uuid.uuid4()))
    error(api.get(f"/conversations?after={uuid.uuid4()}"), 404, "conversation_not_found")
    mine = str(uuid.uuid4())
    assert api.post("/conversations", {"id": mine}).status_code == 201
    assert data(api.get(f"/conversations?after={mine}")) == []


@pytest.mark.parametrize("path", ["/vision", "/notebooks/{book}/vision"])
def test_a_vision_too_long_to_store_is_invalid_by_the_document(document, owner, api, path):
    """The vision's limit (6,000 characters, trimmed) was not in the document: 6,999
    characters were valid by it and refused by the server."""
    book = factories.notebook(owner, "Plans")
    path = path.format(book=book.id)
    schema = _argument(document, "PUT", path.replace(str(book.id), "{notebook_id}"),
                       "content")
    too_long, padded = "0" * 6001, "\n  " + "0" * 6000 + " \n"
    assert not schema.is_valid(too_long) and not schema.is_valid("0" * 6999)
    error(api.call("PUT", path, {"content": too_long}), 400, "content_too_long")
    assert schema.is_valid(padded) and schema.is_valid("")
    assert data(api.call("PUT", path, {"content": padded}))["content"] == "0" * 6000


@pytest.mark.parametrize(("path", "name"), [("/brief", "since"), ("/activity", "since"),
                                            ("/notes", "updatedAfter")])
def test_a_number_is_not_a_time(document, owner, api, path, name):
    """`since=0.5` was read as 0.5 s after 1970 (pydantic takes numbers for times)."""
    schema = _argument(document, "GET", path, name)
    for value in ("0.5", "1700000000", "0"):
        assert not schema.is_valid(value)
        error(api.get(f"{path}?{name}={value}"), 422, "invalid_request")
    assert api.get(f"{path}?{name}=2026-01-01T00:00:00Z").status_code == 200


def test_importance_false_is_not_a_number(owner, api):
    """`"importance": false` was taken as 0, over REST and MCP alike."""
    note = factories.note(owner, "Water the basil.")
    error(api.patch(f"/notes/{note.id}", {"importance": False}), 422, "invalid_request")
    over_mcp = api.post("/tools/update_memory", {"noteId": str(note.id), "importance": False})
    error(over_mcp, 400, "invalid_arguments")
    after = selectors.note_get(actor=owner, note_id=note.id)
    assert (after.importance, after.version) == (note.importance, 1)
    assert data(api.patch(f"/notes/{note.id}", {"importance": 1}))["importance"] == 1.0


@pytest.mark.parametrize("body", [{"query": "basil", "includePersonal": 0},
                                  {"query": "basil", "includePersonal": "false"}])
def test_include_personal_0_is_not_a_boolean(owner, api, body):
    """`"includePersonal": 0` was taken as false by ask and recall."""
    error(api.post("/ask", body), 422, "invalid_request")
    error(api.post("/recall", body), 422, "invalid_request")
    error(api.post("/tools/recall", body), 400, "invalid_arguments")
    assert api.post("/recall", {**body, "includePersonal": False}).status_code == 200


def test_null_filters_are_refused_as_the_document_says(document, owner, api):
    """`{"notebookId": null, "notebookIds": null}`: the document refuses both keys
    together; the server took two nulls for "everything"."""
    body = {"notebookId": None, "notebookIds": None}
    recall_in = jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/RecallIn", "components": document["components"]})
    assert not recall_in.is_valid(body)
    error(api.post("/recall", body), 400, "invalid_scope")
    assert recall_in.is_valid({"notebookIds": None})
    assert api.post("/recall", {"notebookIds": None}).status_code == 200


def test_a_path_that_cannot_name_a_resource_is_404(api):
    """What schemathesis' stateful phase sent from a Personal note's `notebookId: null`:
    `/v1/notebooks/None/...` names no notebook (was 422)."""
    error(api.get("/notebooks/None/vision"), 404, "not_found")
    error(api.call("PUT", "/notebooks/None/vision", {"content": "x"}), 404, "not_found")
    error(api.patch("/notebooks/None", {"name": "x"}), 404, "not_found")


# -- found by the run with the owner's session ---------------------------------------------


def _session(owner, *, csrf: bool = False) -> Client:
    from grove.models import Account

    web = Client(enforce_csrf_checks=csrf)
    web.force_login(Account.objects.get(id=owner.account_id))
    return web


@pytest.mark.parametrize("authorization", ["Bearer grv_" + "x" * 75, "Basic b3duZXI6cHc=",
                                           "", "Bearer"])
def test_a_bad_authorization_beside_a_session_is_refused(owner, authorization):
    """A key (or any Authorization) that was sent must be good: the session beside it
    answered instead (was 200)."""
    web = _session(owner)
    answer = web.get("/v1/connections", headers={"Authorization": authorization})
    error(answer, 401, "invalid_token")
    assert web.get("/v1/connections").status_code == 200


def test_a_multipart_type_without_its_boundary_is_400_not_500(owner):
    """The session's CSRF check reads the form: `multipart/form-data` with no boundary
    could not be parsed and was a 500."""
    web = _session(owner, csrf=True)
    web.cookies["csrftoken"] = token = "t" * 32
    answer = web.post("/v1/conversations", data=b'{"id": "x"}',
                      content_type="multipart/form-data", headers={"X-CSRFToken": token})
    error(answer, 400, "invalid_request")


def test_share_arguments_the_document_refuses_are_refused(document, owner):
    book = factories.notebook(owner, "Shared")
    note = factories.note(owner, "A note", notebook_id=book.id)
    share_in = jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/ShareIn", "components": document["components"]})
    web = _session(owner)
    for body in ({"noteId": str(note.id), "notebookId": str(book.id)}, {},
                 {"noteId": None, "notebookId": None},
                 {"noteId": str(note.id), "includeSubnotebooks": True}):
        assert not share_in.is_valid(body), body
        error(web.post("/v1/shares", body, content_type="application/json"), 400,
              "invalid_share_target" if "includeSubnotebooks" not in body
              else "invalid_argument")
    assert share_in.is_valid({"notebookId": str(book.id), "noteId": None})
    archived = factories.notebook(owner, "Old")
    from notebooks import services as notebook_services

    notebook_services.notebook_archive(actor=owner, notebook_id=archived.id,
                                       operation_id=uuid.uuid4())
    # A state the request cannot know from the document: 409, as notebooks answer it.
    error(web.post("/v1/shares", {"notebookId": str(archived.id)},
                   content_type="application/json"), 409, "notebook_archived")


def test_key_arguments_the_document_refuses_are_refused(document, owner):
    book = factories.notebook(owner, "Granted")
    key_in = jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/KeyCreateIn", "components": document["components"]})
    web = _session(owner)
    for body, status, code in (
            ({"name": "k", "allNotebooks": True, "notebooks": [str(book.id)]}, 400,
             "invalid_grant"),
            ({"name": "k", "capabilities": []}, 422, "invalid_request"),
            ({"name": " \t "}, 400, "invalid_name")):
        assert not key_in.is_valid(body), body
        error(web.post("/v1/connections/keys", body, content_type="application/json"),
              status, code)
    assert key_in.is_valid({"name": "k", "allNotebooks": False, "notebooks": [str(book.id)]})


def test_a_handoff_without_a_task_is_a_conflict_with_the_note_as_it_is(document, owner, api):
    """`{"kind": "handoff"}` on a fact without a taskId is valid by the document — it
    cannot see the note — and was refused 400; it conflicts with the note: 409. A change
    that itself names the kind and a null task is invalid by the document too: 400."""
    note = factories.note(owner, "Sorting the shed.")
    update_in = jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/NotePatchIn", "components": document["components"]})
    assert update_in.is_valid({"kind": "handoff"})
    error(api.patch(f"/notes/{note.id}", {"kind": "handoff"}), 409, "task_id_required")
    contradiction = {"kind": "handoff", "taskId": None}
    assert not update_in.is_valid(contradiction)
    error(api.patch(f"/notes/{note.id}", contradiction), 400, "task_id_required")
    changed = data(api.patch(f"/notes/{note.id}", {"kind": "handoff", "taskId": "shed"}))
    assert (changed["kind"], changed["taskId"], changed["version"]) == ("handoff", "shed", 2)
