"""`/mcp` at the protocol level (Django test client, real database): transport rules,
the handshake, tool declarations, tool calls and their failures, and `POST /v1/tools`."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from grove.interfaces.mcp import HANDSHAKE_VERSIONS, SUPPORTED_VERSIONS, tools
from grove.interfaces.mcp_tools import output_schema
from notebooks import selectors
from tests import factories
from tests.api.conftest import Caller, new_key
from tests.mcp.helpers import error_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner():
    return factories.owner()


@pytest.fixture
def key(owner) -> str:
    return new_key(owner)[0]


def rpc(key: str | None, method: str, params: dict | None = None, *, id: Any = 1,
        headers: dict[str, str] | None = None, raw: str | None = None):
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        message["id"] = id
    if params is not None:
        message["params"] = params
    all_headers = {"Accept": "application/json, text/event-stream", **(headers or {})}
    if key:
        all_headers["Authorization"] = f"Bearer {key}"
    return Client().post("/mcp", data=raw if raw is not None else json.dumps(message),
                         content_type="application/json", headers=all_headers)


def call(key: str, tool: str, arguments: dict) -> dict:
    response = rpc(key, "tools/call", {"name": tool, "arguments": arguments},
                   headers={"MCP-Protocol-Version": "2025-11-25"})
    assert response.status_code == 200, response.content
    return response.json()["result"]


def test_initialize_echoes_a_supported_version_and_names_the_server(key):
    for version in HANDSHAKE_VERSIONS:
        result = rpc(key, "initialize", {"protocolVersion": version, "capabilities": {},
                                         "clientInfo": {"name": "t", "version": "1"}}).json()
        assert result["result"]["protocolVersion"] == version
    future = rpc(key, "initialize", {"protocolVersion": "2099-01-01"}).json()["result"]
    assert future["protocolVersion"] == HANDSHAKE_VERSIONS[0]
    assert future["serverInfo"]["name"] == "grove"
    assert future["capabilities"] == {"tools": {"listChanged": False},
                                      "resources": {"subscribe": False, "listChanged": False},
                                      "prompts": {"listChanged": False}}
    assert "recall" in future["instructions"] and "`brief`" in future["instructions"]


def test_transport_rules(key):
    assert Client().get("/mcp").status_code == 405
    assert Client().get("/mcp")["Allow"] == "POST"
    assert Client().delete("/mcp", headers={"Authorization": f"Bearer {key}"}).status_code == 405
    # APPEND_SLASH must not redirect the POST.
    assert rpc(key, "ping").status_code == 200
    batch = rpc(key, "ping", raw=json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]))
    assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600
    assert rpc(key, "ping", raw="{not json").json()["error"]["code"] == -32700
    note = rpc(key, "notifications/initialized", id=None)
    assert note.status_code == 202 and note.content == b""
    bad_version = rpc(key, "ping", headers={"MCP-Protocol-Version": "1999-01-01"})
    assert bad_version.status_code == 400
    assert bad_version.json()["error"]["code"] == -32022
    assert bad_version.json()["error"]["data"] == {"supported": list(SUPPORTED_VERSIONS),
                                                   "requested": "1999-01-01"}
    unknown = rpc(key, "completion/complete")
    assert unknown.status_code == 200 and unknown.json()["error"]["code"] == -32601
    foreign = rpc(key, "ping", headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403
    same = rpc(key, "ping", headers={"Origin": settings.GROVE_BASE_URL})
    assert same.status_code == 200
    # The request's own origin (its Host passed ALLOWED_HOSTS): a browser client on the
    # address it reached.
    own = rpc(key, "ping", headers={"Origin": "http://localhost", "Host": "localhost"})
    assert own.status_code == 200


@pytest.mark.parametrize("ident", [None, {"a": 1}, [1], 1.5, 2.0, True, False])
def test_request_ids_are_strings_or_integers(key, ident):
    answer = rpc(key, "ping", raw=json.dumps({"jsonrpc": "2.0", "id": ident,
                                              "method": "ping"}))
    assert answer.status_code == 400
    body = answer.json()
    assert body["id"] is None and body["error"]["code"] == -32600


def test_string_and_integer_ids_are_echoed(key):
    assert rpc(key, "ping", id="a-1").json()["id"] == "a-1"
    assert rpc(key, "ping", id=0).json()["id"] == 0


@pytest.mark.parametrize("answer", [{"result": {}}, {"error": {"code": -1, "message": "no"}}])
def test_a_clients_answer_to_a_server_request_is_accepted(key, answer):
    response = rpc(key, "ping", raw=json.dumps({"jsonrpc": "2.0", "id": 5, **answer}))
    assert response.status_code == 202 and response.content == b""


def test_an_oversize_body_is_a_json_413_before_anything_is_read(key):
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "remember", "arguments": {"content": "x" * (settings.GROVE_API_MAX_BODY + 1),
                                          "kind": "fact"}}})
    answer = rpc(key, "tools/call", raw=big)
    assert answer.status_code == 413
    assert answer["Content-Type"].startswith("application/json")
    body = answer.json()
    assert body["error"]["code"] == -32600
    assert body["error"]["data"]["code"] == "payload_too_large"
    anonymous = rpc(None, "tools/call", raw=big)  # refused before authentication too
    assert anonymous.status_code == 413


def test_discover_is_a_modern_method_only(key):
    """Without the 2026 header (or with a handshake one) `server/discover` is an unknown
    method, answered as the handshake era answers errors: HTTP 200. (An `auto` client
    always probes with the 2026 header; tests/mcp/test_modern.py covers that.)"""
    for headers in ({}, {"MCP-Protocol-Version": "2025-11-25"}):
        probe = rpc(key, "server/discover", {}, headers=headers)
        assert probe.status_code == 200
        assert probe.json()["error"]["code"] == -32601


def test_unauthenticated_requests_get_the_resource_metadata_challenge():
    missing = rpc(None, "initialize", {"protocolVersion": "2025-11-25"})
    assert missing.status_code == 401
    challenge = missing["WWW-Authenticate"]
    assert challenge == (f'Bearer resource_metadata="{settings.GROVE_BASE_URL}/.well-known/'
                         'oauth-protected-resource/mcp", scope="mcp"')
    wrong = rpc("grv_" + "x" * 75, "initialize", {"protocolVersion": "2025-11-25"})
    assert wrong.status_code == 401 and 'error="invalid_token"' in wrong["WWW-Authenticate"]
    assert 'scope="mcp"' in wrong["WWW-Authenticate"]


def _properties(schema: dict) -> list[tuple[str, dict]]:
    found = list(schema.get("properties", {}).items())
    for prop in schema.get("properties", {}).values():
        for option in prop.get("items", {}).get("anyOf", []):
            found += _properties(option)
    return found


def test_tools_are_declared_with_schemas_titles_and_explicit_hints(key):
    response = rpc(key, "tools/list")
    listed = response.json()["result"]["tools"]
    names = [t["name"] for t in listed]
    assert names == ["brief", "whoami", "recent_activity", "truth", "update_vision",
                     "remember", "recall", "update_memory", "edit_note", "forget", "get_note",
                     "related", "list_notes", "note_history", "restore_note", "archive_notes",
                     "move_notes", "list_notebooks", "create_notebook", "update_notebook",
                     "ask"]
    for tool in listed:
        assert tool["title"] and len(tool["description"]) > 40
        assert tool["inputSchema"]["type"] == "object"
        assert tool["inputSchema"].get("additionalProperties") is False
        assert tool["outputSchema"]["type"] == "object"
        hints = tool["annotations"]
        # destructiveHint and idempotentHint mean nothing on a read-only tool (MCP), so
        # only writes say them.
        assert set(hints) == {"readOnlyHint", "openWorldHint"} | (
            set() if hints["readOnlyHint"] else {"destructiveHint", "idempotentHint"})
        # A result declares its fields and each one's JSON type (declared_output_schema).
        for prop in tool["outputSchema"]["properties"].values():
            assert set(prop) <= {"type", "enum", "const", "anyOf"}, (tool["name"], prop)
        assert hints["openWorldHint"] is False
        # Every parameter says what it means; no schema offers null (null = left out).
        for name, prop in _properties(tool["inputSchema"]):
            assert len(prop.get("description", "")) >= 10, (tool["name"], name)
            assert "null" not in json.dumps(prop.get("type", "")), (tool["name"], name)
        assert "REST:" not in json.dumps(tool)  # remarks for the OpenAPI document only
    by_name = {t["name"]: t for t in listed}
    assert by_name["recall"]["annotations"]["readOnlyHint"] is True
    assert by_name["forget"]["annotations"]["destructiveHint"] is True
    assert by_name["remember"]["annotations"]["readOnlyHint"] is False
    content = by_name["remember"]["inputSchema"]["properties"]["content"]
    # The real limits: a document note's as the schema's bound, a memory record's in words.
    assert content["maxLength"] == 200_000
    assert "note 200,000" in content["description"] and "6,000" in content["description"]
    # content and kind, or items (a batch): the tool says so, the arguments model checks it.
    assert "required" not in by_name["remember"]["inputSchema"]
    assert "items" in by_name["remember"]["description"]
    assert "automatic" in by_name["remember"]["description"]
    # Lean: a client's context is not free — its size in each era: test_tools_list_size.py.


def test_tool_results_match_their_declared_output_schemas(owner, key):
    """What a strict client (the MCP Inspector) checks: every structuredContent is valid
    against the tool's outputSchema — optional fields are left out, never null."""
    import jsonschema

    schemas = {t["name"]: t["outputSchema"]
               for t in rpc(key, "tools/list").json()["result"]["tools"]}
    notebook = factories.notebook(owner, "Travel")
    note = factories.note(owner, "Flight at 9 from gate B", notebook_id=notebook.id)
    factories.note(owner, "Pack the blue bag", kind="handoff", task_id="trip")
    factories.note(owner, "Gate B: see [[Flight at 9 from gate B]]", notebook_id=notebook.id)
    calls = [("remember", {"content": "Hotel by the station", "kind": "fact"}),
             ("recall", {"query": "flight gate"}), ("recall", {}),
             ("recall", {"query": "flight", "full": True}),
             ("list_notes", {"query": "flight", "matches": True}),
             ("list_notes", {"full": True}), ("get_note", {"noteId": str(note.id)}),
             ("note_history", {"noteId": str(note.id)}),
             ("related", {"noteId": str(note.id)}),
             ("update_memory", {"noteId": str(note.id), "content": "Flight at 10"}),
             ("edit_note", {"noteId": str(note.id), "op": "replace_text", "find": "10",
                            "text": "11"}),
             ("remember", {"items": [{"content": "Taxi booked", "kind": "fact"},
                                     {"content": "", "kind": "fact"}]}),
             ("restore_note", {"noteId": str(note.id), "revision": 1}),
             ("get_note", {"noteId": f"note:{note.id}@2"}),
             ("archive_notes", {"items": [str(note.id)]}),
             ("archive_notes", {"items": [str(note.id)], "restore": True}),
             ("move_notes", {"noteIds": [str(note.id)], "notebookId": "personal"}),
             ("list_notebooks", {}), ("create_notebook", {"name": "Home"}),
             ("update_notebook", {"notebookId": str(notebook.id), "name": "Trips"}),
             ("forget", {"items": [str(uuid.uuid4()), str(note.id)]}),
             ("ask", {"query": "flight", "mode": "search"}),
             ("update_vision", {"content": "Travel light."}),
             ("brief", {}), ("brief", {"notebookId": str(notebook.id), "focus": "flight"}),
             ("whoami", {}), ("recent_activity", {}), ("truth", {}),
             ("truth", {"notebookId": str(notebook.id), "full": True}),
             ("recent_activity", {"notebookId": "personal", "limit": 1})]
    declared = tools()
    for tool, arguments in calls:
        result = call(key, tool, arguments)
        assert result["isError"] is False, (tool, result)
        jsonschema.validate(result["structuredContent"], schemas[tool])
        # And the full nested shape each result keeps (no field null at any depth),
        # which tools/list leaves out.
        jsonschema.validate(result["structuredContent"], output_schema(declared[tool].output))
    assert {tool for tool, _ in calls} == set(schemas)


def test_remember_then_recall_and_list_through_tools(owner, key):
    operation = str(uuid.uuid4())
    saved = call(key, "remember", {"content": "The staging database is rebuilt on Sundays.",
                                   "kind": "fact", "operationId": operation})
    assert saved["isError"] is False and saved["structuredContent"]["created"] is True
    cited = saved["structuredContent"]["id"]
    assert cited.startswith("note:") and cited.endswith("@1")
    assert saved["structuredContent"]["indexing"] in ("pending", "ready")
    again = call(key, "remember", {"content": "The staging database is rebuilt on Sundays.",
                                   "kind": "fact", "operationId": operation})
    assert again["structuredContent"]["id"] == cited  # retried, saved once
    assert len(selectors.note_list(actor=owner)) == 1

    found = call(key, "recall", {"query": "staging database"})
    assert [hit["id"] for hit in found["structuredContent"]["data"]] == [cited]
    hit = found["structuredContent"]["data"][0]
    assert set(hit) == {"id", "kind", "content", "updated"}  # compact; Personal: no notebook
    assert found["content"][0]["text"].splitlines()[2] == f"{cited} fact, {hit['updated'][:10]}"
    listed = call(key, "list_notes", {"query": "sundays"})["structuredContent"]
    assert listed["meta"]["available"] == 1
    # The id as recall cites it is accepted wherever a note id is.
    got = call(key, "get_note", {"noteId": cited})["structuredContent"]
    assert got["record"]["versionedId"] == cited and got["record"]["capture"] == "explicit"
    full = call(key, "recall", {"query": "staging", "full": True})["structuredContent"]
    assert full["data"][0]["record"]["indexing"] in ("pending", "ready")


def test_a_cited_version_works_as_the_expected_version(owner, key):
    note = factories.note(owner, "v1")
    moved_on = call(key, "update_memory", {"noteId": f"note:{note.id}@1", "content": "v2"})
    assert moved_on["isError"] is False
    assert moved_on["structuredContent"]["id"] == f"note:{note.id}@2"
    stale = call(key, "update_memory", {"noteId": f"note:{note.id}@1", "content": "v3"})
    assert error_of(stale)["code"] == "version_conflict"
    assert error_of(stale)["currentVersion"] == 2
    mismatch = call(key, "update_memory", {"noteId": f"note:{note.id}@2", "content": "v3",
                                           "expectedVersion": 1})
    assert error_of(mismatch)["code"] == "version_mismatch"
    forgotten = call(key, "forget", {"items": [f"note:{note.id}@1"]})["structuredContent"]
    assert forgotten["items"][0]["status"] == "version_conflict"
    old = call(key, "get_note", {"noteId": f"note:{note.id}@1"})["structuredContent"]
    assert old["content"] == "v1" and old["id"] == f"note:{note.id}@1"
    assert error_of(call(key, "get_note", {"noteId": f"note:{note.id}@9"}))["code"] == \
        "version_not_found"
    assert error_of(call(key, "get_note", {"noteId": "note:nope"}))["code"] == \
        "invalid_arguments"


def test_null_is_left_out_and_personal_is_named(owner):
    garden = factories.notebook(owner, "Garden")
    factories.note(owner, "walnut in the garden", notebook_id=garden.id)
    factories.note(owner, "walnut at home")
    everything, _ = new_key(owner)
    # A client filling optional fields with null searches everything granted...
    found = call(everything, "recall", {"query": "walnut", "notebookId": None,
                                        "taskId": None, "notebookIds": None})
    assert sorted(h["content"] for h in found["structuredContent"]["data"]) == \
        ["walnut at home", "walnut in the garden"]
    # ...Personal only is asked for by name, and the notebook as a typed id works too.
    personal = call(everything, "recall", {"query": "walnut", "notebookId": "personal"})
    assert [h["content"] for h in personal["structuredContent"]["data"]] == ["walnut at home"]
    typed = call(everything, "list_notes", {"notebookId": f"notebook:{garden.id}"})
    assert [h["notebook"] for h in typed["structuredContent"]["data"]] == ["Garden"]
    # Over REST, null keeps its documented meaning: Personal.
    rest = Caller(Client(), everything).post("/recall", {"query": "walnut",
                                                          "notebookId": None})
    assert [h["note"]["content"] for h in rest.json()["data"]] == ["walnut at home"]
    # A grant without Personal says so, instead of "No such notebook".
    garden_only, _ = new_key(owner, all_notebooks=False, personal=False,
                             notebooks=[garden.id])
    for tool, arguments in [("recall", {"query": "walnut", "notebookId": "personal"}),
                            ("remember", {"content": "x", "kind": "fact"}),
                            ("list_notes", {"notebookId": "personal"})]:
        refused = call(garden_only, tool, arguments)
        assert error_of(refused)["code"] == "personal_not_granted", tool
        assert "Personal" in refused["content"][0]["text"]


def test_failures_are_results_with_a_machine_code(owner, key):
    invalid = call(key, "remember", {"content": "x", "kind": "poem"})
    assert invalid["isError"] is True and "structuredContent" not in invalid
    assert error_of(invalid)["code"] == "invalid_arguments"
    assert "kind" in invalid["content"][0]["text"]
    extra = call(key, "get_note", {"noteId": str(uuid.uuid4()), "surprise": 1})
    assert error_of(extra)["code"] == "invalid_arguments"
    missing = call(key, "get_note", {"noteId": str(uuid.uuid4())})
    assert error_of(missing)["code"] == "note_not_found"
    assert missing["content"][0]["text"] == "No such note."
    note = factories.note(owner, "v1")
    stale = call(key, "update_memory", {"noteId": str(note.id), "content": "v2",
                                        "expectedVersion": 7})
    assert error_of(stale) == {"code": "version_conflict", "currentVersion": 1}
    unknown = rpc(key, "tools/call", {"name": "launch_rockets", "arguments": {}})
    assert unknown.json()["error"]["code"] == -32602


def test_grants_apply_to_tools(owner):
    shared = factories.notebook(owner, "Shared")
    hidden = factories.notebook(owner, "Hidden")
    secret = factories.note(owner, "hidden walnut", notebook_id=hidden.id)
    factories.note(owner, "shared walnut", notebook_id=shared.id)
    key, _ = new_key(owner, all_notebooks=False, personal=False, notebooks=[shared.id])
    hits = call(key, "list_notes", {"query": "walnut"})["structuredContent"]["data"]
    assert [h["content"] for h in hits] == ["shared walnut"]
    assert error_of(call(key, "get_note", {"noteId": str(secret.id)}))["code"] == \
        "note_not_found"
    refused = call(key, "remember", {"content": "x", "kind": "fact",
                                     "notebookId": str(hidden.id)})
    assert error_of(refused)["code"] == "notebook_not_found"
    read_only, _ = new_key(owner, capabilities=["memory:read"])
    denied = call(read_only, "remember", {"content": "x", "kind": "fact"})
    assert error_of(denied)["code"] == "insufficient_capability"


def _state(owner) -> list:
    """Everything a tool call can change, timestamps included."""
    from grove.kernel.tenancy import tenant
    from notebooks.models import Note, Notebook, Revision, Vision, VisionRevision

    with tenant(owner):
        return [sorted(Note.objects.values_list("id", "version", "content", "status",
                                                "notebook_id", "expires_at")),
                Revision.objects.count(),
                sorted(Notebook.objects.values_list("id", "name", "parent_id",
                                                    "updated_at", "archived_at")),
                sorted(Vision.objects.values_list("id", "version", "content")),
                VisionRevision.objects.count()]


def test_idempotent_hints_say_what_a_repeat_without_an_operation_id_does(owner, key):
    notebook = factories.notebook(owner, "Work")
    other = factories.notebook(owner, "Home")
    note = factories.note(owner, "Standup at 10", notebook_id=notebook.id)
    gone = factories.note(owner, "Old plan")
    hints = {t["name"]: t["annotations"]
             for t in rpc(key, "tools/list").json()["result"]["tools"]}
    repeats = {
        "remember": {"content": "Standup moved to 11", "kind": "fact"},
        "recall": {"query": "standup"},
        "update_memory": {"noteId": str(note.id), "retentionDays": 30},
        "edit_note": {"noteId": str(note.id), "op": "append", "text": "Bring notes."},
        "forget": {"items": [str(gone.id)]},
        "get_note": {"noteId": str(note.id)},
        "related": {"noteId": str(note.id)},
        "list_notes": {},
        "note_history": {"noteId": str(note.id)},
        "restore_note": {"noteId": str(note.id), "revision": 1},
        "archive_notes": {"items": [str(note.id)]},
        "move_notes": {"noteIds": [str(note.id)], "notebookId": str(other.id)},
        "list_notebooks": {},
        "create_notebook": {"name": "Ideas"},
        "update_notebook": {"notebookId": str(other.id), "name": "House"},
        "ask": {"query": "standup", "mode": "search"},
        "brief": {"focus": "standup"},
        "whoami": {},
        "recent_activity": {},
        "update_vision": {"content": "Ship small."},
        "truth": {"full": True},
    }
    assert set(repeats) == set(hints)
    for tool, arguments in repeats.items():
        call(key, tool, arguments)
        before = _state(owner)
        call(key, tool, arguments)
        changed = _state(owner) != before
        if hints[tool]["readOnlyHint"]:  # a repeat changes nothing, as nothing does
            assert not changed, tool
        else:
            assert changed is not hints[tool]["idempotentHint"], tool


def test_recall_text_is_lean(owner, key):
    """The issue's case: eight short notes. The text a model reads costs at most the
    notes' content plus 80 characters per item (it cost 2,877 for 221 characters)."""
    factories.note(owner, "Prefers tea over coffee.", kind="preference", pinned=True)
    factories.note(owner, "Writes in British English.", kind="preference", pinned=True)
    factories.note(owner, "The office is in Leeds.")
    for n in range(5):
        factories.note(owner, f"Decided to ship release {n} on a Tuesday.", kind="decision")
    result = call(key, "recall", {})
    items = result["structuredContent"]["data"]
    assert len(items) == 8
    content = sum(len(item["content"]) for item in items)
    text = result["content"][0]["text"]
    assert len(text) <= content + 80 * len(items), (len(text), content)
    for item in items:  # and nothing a model needs is lost
        assert item["id"] in text and item["content"] in text


def test_every_tool_runs_over_rest_with_the_same_arguments(owner, key):
    caller = Caller(Client(), key)
    notebook = caller.post("/tools/create_notebook", {"name": "Trips"}).json()["data"]
    saved = caller.post("/tools/remember", {"content": "Flight at 9", "kind": "fact",
                                            "notebookId": notebook["id"]})
    assert saved.status_code == 200
    cited = saved.json()["data"]["id"]  # note:<id>@1
    assert caller.post("/tools/update_memory", {"noteId": cited, "content": "Flight at 10"}
                       ).status_code == 200
    again = caller.post("/tools/update_memory", {"noteId": cited, "content": "Flight at 11"})
    assert again.status_code == 409  # @1 is no longer current
    note_id = cited.split("@")[0]
    history = caller.post("/tools/note_history", {"noteId": note_id}).json()["data"]
    assert [r["id"][-2:] for r in history["revisions"]] == ["@2", "@1"]
    restored = caller.post("/tools/restore_note", {"noteId": note_id, "revision": 1})
    assert restored.json()["data"]["id"].endswith("@3")
    moved = caller.post("/tools/move_notes", {"noteIds": [note_id], "notebookId": "personal"})
    assert moved.json()["data"]["ids"][0].endswith("@4")
    archived = caller.post("/tools/archive_notes", {"items": [note_id]}).json()["data"]
    assert archived["items"][0]["status"] == "archived"
    back = caller.post("/tools/archive_notes", {"items": [note_id], "restore": True})
    assert back.json()["data"]["items"][0]["status"] == "restored"
    renamed = caller.post("/tools/update_notebook", {"notebookId": notebook["id"],
                                                     "name": "Travel"}).json()["data"]
    assert renamed["name"] == "Travel"
    books = caller.post("/tools/list_notebooks", {}).json()["data"]
    assert [b["name"] for b in books["data"]] == ["Travel"]
    gone = caller.post("/tools/forget", {"items": [note_id]}).json()["data"]
    assert gone["items"][0]["status"] == "deleted"
    # Errors keep the REST envelope and status...
    bad = caller.post("/tools/remember", {"content": "x", "kind": "poem"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_arguments"
    assert caller.post("/tools/nope", {}).status_code == 404
    assert Caller(Client(), None).post("/tools/recall", {}).status_code == 401
    assert set(tools()) >= {"remember", "forget"}


def test_format_mcp_answers_exactly_what_mcp_does(owner, key):
    """`POST /v1/tools/<tool>?format=mcp` (the stdio bridge's call) is the /mcp result,
    errors included."""
    caller = Caller(Client(), key)
    factories.note(owner, "The boiler is serviced in March.")
    for tool, arguments in [("recall", {"query": "boiler"}),
                            ("get_note", {"noteId": str(uuid.uuid4())}),
                            ("remember", {"content": "x", "kind": "poem"})]:
        over_rest = caller.post(f"/tools/{tool}?format=mcp", arguments)
        assert over_rest.status_code == 200
        assert over_rest.json()["data"] == call(key, tool, arguments)


def test_a_null_parent_moves_nothing_and_root_is_named(owner, key):
    outer = factories.notebook(owner, "Outer")
    inner = factories.notebook(owner, "Inner", parent=outer.id)
    kept = call(key, "update_notebook", {"notebookId": f"notebook:{inner.id}",
                                         "name": "Inside", "parentId": None})
    assert kept["structuredContent"]["parentId"] == f"notebook:{outer.id}"  # stayed put
    moved = call(key, "update_notebook", {"notebookId": str(inner.id), "parentId": "root"})
    assert "parentId" not in moved["structuredContent"]  # top level: left out
    assert selectors.notebook_get(actor=owner, notebook_id=inner.id).parent_id is None
    # REST keeps null = top level.
    back = Caller(Client(), key).call("PATCH", f"/notebooks/{inner.id}",
                                      {"parentId": str(outer.id)})
    assert back.status_code == 200
    rest = Caller(Client(), key).call("PATCH", f"/notebooks/{inner.id}", {"parentId": None})
    assert rest.status_code == 200 and rest.json()["data"]["parentId"] is None


def test_an_older_version_is_that_revision_whole(owner, key):
    """get_note of note:<id>@1 after an edit: every field as it was at version 1 — not
    today's pinning, importance or provenance — in the notebook it was in then."""
    alpha = factories.notebook(owner, "Alpha")
    bravo = factories.notebook(owner, "Bravo")
    first = call(key, "remember", {"content": "v1 text", "kind": "handoff", "taskId": "t-1",
                                   "importance": 0.1, "notebookId": str(alpha.id)})
    cited = first["structuredContent"]["id"]
    note_id = cited.split("@")[0]
    call(key, "update_memory", {"noteId": cited, "content": "v2 text", "pinned": True,
                                "importance": 0.9, "sourceAgent": "agent-v2",
                                "retentionDays": 5})
    call(key, "move_notes", {"noteIds": [note_id], "notebookId": str(bravo.id)})
    old = call(key, "get_note", {"noteId": cited})["structuredContent"]
    assert (old["content"], old["notebook"], old["taskId"]) == ("v1 text", "Alpha", "t-1")
    assert "pinned" not in old  # it was not pinned then
    record = old["record"]
    assert (record["version"], record["importance"], record["sourceAgent"],
            record["retentionDays"]) == (1, 0.1, None, 30)
    now = call(key, "get_note", {"noteId": note_id})["structuredContent"]
    assert (now["notebook"], now["pinned"], now["record"]["version"]) == ("Bravo", True, 3)
    # A key that sees only Bravo reads the old revision without learning Alpha.
    bravo_only, _ = new_key(owner, all_notebooks=False, personal=False,
                            notebooks=[bravo.id])
    seen = call(bravo_only, "get_note", {"noteId": cited})["structuredContent"]
    assert seen["notebook"] == "(a notebook you cannot see)"
    assert seen["record"]["notebookId"] is None


def test_typed_ids_ignore_case(owner, key):
    note = factories.note(owner, "Case matters not.")
    got = call(key, "get_note", {"noteId": f"NOTE:{str(note.id).upper()}@1"})
    assert got["isError"] is False and got["structuredContent"]["content"] == "Case matters not."


def test_text_no_answer_could_carry_is_refused(key):
    surrogate = rpc(key, "ping", raw='{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}')
    assert surrogate.status_code == 400 and surrogate.json()["error"]["code"] == -32600
    in_arguments = rpc(key, "tools/call", raw=json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "recall", "arguments": {"query": "x"}}}).replace('"x"', '"\\udc00"'))
    assert in_arguments.status_code == 400
    deep = rpc(key, "ping", raw='{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": '
               + "[" * 100_000 + "]" * 100_000 + "}")
    assert deep.status_code == 400 and deep.json()["error"]["code"] == -32700


def test_the_bridge_answers_bad_lines_and_goes_on():
    import io

    from grove.runtime.bridge import Bridge, serve

    bridge = Bridge("http://127.0.0.1:9", "grv_unused")  # these lines never reach it
    lines = ['{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}',
             '{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',
             "[" * 100_000, '{"jsonrpc": "2.0", "id": 7, "result": {}}',
             '{"jsonrpc": "2.0", "id": 2, "method": "ping"}']
    out = io.StringIO()
    serve(bridge, io.StringIO("\n".join(lines) + "\n"), out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r.get("error", {}).get("code") for r in replies] == [-32600, -32600, -32700, None]
    assert replies[-1] == {"jsonrpc": "2.0", "id": 2, "result": {}}  # the answer gets none


def test_the_bridge_says_so_when_grove_is_unreachable_for_resources_and_prompts():
    import io

    from grove.runtime.bridge import Bridge, serve

    bridge = Bridge("http://127.0.0.1:9", "grv_unused", timeout=5)
    lines = ['{"jsonrpc": "2.0", "id": 1, "method": "resources/list"}',
             '{"jsonrpc": "2.0", "id": "p", "method": "prompts/get", "params": {"name": "x"}}',
             '{"jsonrpc": "2.0", "id": 3, "method": "server/discover", "params": {}}']
    out = io.StringIO()
    serve(bridge, io.StringIO("\n".join(lines) + "\n"), out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(r["id"], r["error"]["code"]) for r in replies] == [
        (1, -32603), ("p", -32603), (3, -32601)]  # discover: stdio stays handshake-era
    assert "unreachable" in replies[0]["error"]["message"]
