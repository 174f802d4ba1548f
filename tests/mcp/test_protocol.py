"""`/mcp` at the protocol level (Django test client, real database): transport rules,
the handshake, tool declarations, tool calls and their failures, and `POST /v1/tools`."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from grove.mcp import HANDSHAKE_VERSIONS, tools
from notebooks import selectors
from tests import factories
from tests.api.conftest import Caller, new_key

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
    assert future["capabilities"] == {"tools": {"listChanged": False}}
    assert "recall" in future["instructions"]


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
    assert bad_version.json()["error"]["data"]["supported"] == list(HANDSHAKE_VERSIONS)
    unknown = rpc(key, "resources/list")
    assert unknown.status_code == 200 and unknown.json()["error"]["code"] == -32601
    foreign = rpc(key, "ping", headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403
    same = rpc(key, "ping", headers={"Origin": settings.GROVE_BASE_URL})
    assert same.status_code == 200


def test_a_modern_probe_gets_the_error_that_makes_clients_fall_back(key):
    probe = rpc(key, "server/discover", {}, headers={"MCP-Protocol-Version": "2026-07-28"})
    assert probe.status_code == 400
    error = probe.json()["error"]
    assert error["code"] == -32022 and "2025-11-25" in error["data"]["supported"]


def test_unauthenticated_requests_get_the_resource_metadata_challenge():
    missing = rpc(None, "initialize", {"protocolVersion": "2025-11-25"})
    assert missing.status_code == 401
    challenge = missing["WWW-Authenticate"]
    assert challenge == (f'Bearer resource_metadata="{settings.GROVE_BASE_URL}/.well-known/'
                         'oauth-protected-resource/mcp"')
    wrong = rpc("grv_" + "x" * 75, "initialize", {"protocolVersion": "2025-11-25"})
    assert wrong.status_code == 401 and 'error="invalid_token"' in wrong["WWW-Authenticate"]


def test_tools_are_declared_with_schemas_titles_and_explicit_hints(key):
    listed = rpc(key, "tools/list").json()["result"]["tools"]
    names = [t["name"] for t in listed]
    assert names == ["remember", "recall", "update_memory", "forget", "get_note",
                     "list_notes", "note_history", "restore_note", "archive_notes",
                     "move_notes", "list_notebooks", "create_notebook", "update_notebook",
                     "ask"]
    for tool in listed:
        assert tool["title"] and len(tool["description"]) > 40
        assert tool["inputSchema"]["type"] == "object"
        assert tool["inputSchema"].get("additionalProperties") is False
        assert tool["outputSchema"]["type"] == "object"
        hints = tool["annotations"]
        assert set(hints) == {"title", "readOnlyHint", "destructiveHint", "idempotentHint",
                              "openWorldHint"}
        assert hints["openWorldHint"] is False
    by_name = {t["name"]: t["annotations"] for t in listed}
    assert by_name["recall"]["readOnlyHint"] is True
    assert by_name["forget"]["destructiveHint"] is True
    assert by_name["remember"]["readOnlyHint"] is False


def test_remember_then_recall_and_list_through_tools(owner, key):
    operation = str(uuid.uuid4())
    saved = call(key, "remember", {"content": "The staging database is rebuilt on Sundays.",
                                   "kind": "fact", "operationId": operation})
    assert saved["isError"] is False and saved["structuredContent"]["created"] is True
    note = saved["structuredContent"]["note"]
    again = call(key, "remember", {"content": "The staging database is rebuilt on Sundays.",
                                   "kind": "fact", "operationId": operation})
    assert again["structuredContent"]["note"]["id"] == note["id"]  # retried, saved once
    assert len(selectors.note_list(actor=owner)) == 1
    assert json.loads(saved["content"][0]["text"]) == saved["structuredContent"]

    found = call(key, "recall", {"query": "staging database"})["structuredContent"]
    assert [hit["note"]["id"] for hit in found["data"]] == [note["id"]]
    listed = call(key, "list_notes", {"query": "sundays"})["structuredContent"]
    assert listed["meta"]["available"] == 1
    got = call(key, "get_note", {"noteId": note["id"]})["structuredContent"]
    assert got["versionedId"] == f"note:{note['id']}@1"


def test_failures_are_results_with_a_machine_code(owner, key):
    invalid = call(key, "remember", {"content": "x", "kind": "poem"})
    assert invalid["isError"] is True
    assert invalid["structuredContent"]["code"] == "invalid_arguments"
    assert "kind" in invalid["content"][0]["text"]
    extra = call(key, "get_note", {"noteId": str(uuid.uuid4()), "surprise": 1})
    assert extra["structuredContent"]["code"] == "invalid_arguments"
    missing = call(key, "get_note", {"noteId": str(uuid.uuid4())})
    assert missing["isError"] and missing["structuredContent"]["code"] == "note_not_found"
    note = factories.note(owner, "v1")
    stale = call(key, "update_memory", {"noteId": str(note.id), "content": "v2",
                                        "expectedVersion": 7})
    assert stale["structuredContent"]["code"] == "version_conflict"
    unknown = rpc(key, "tools/call", {"name": "launch_rockets", "arguments": {}})
    assert unknown.json()["error"]["code"] == -32602


def test_grants_apply_to_tools(owner):
    shared = factories.notebook(owner, "Shared")
    hidden = factories.notebook(owner, "Hidden")
    secret = factories.note(owner, "hidden walnut", notebook_id=hidden.id)
    factories.note(owner, "shared walnut", notebook_id=shared.id)
    key, _ = new_key(owner, all_notebooks=False, personal=False, notebooks=[shared.id])
    hits = call(key, "list_notes", {"query": "walnut"})["structuredContent"]["data"]
    assert [h["note"]["content"] for h in hits] == ["shared walnut"]
    assert call(key, "get_note", {"noteId": str(secret.id)})["structuredContent"][
        "code"] == "note_not_found"
    refused = call(key, "remember", {"content": "x", "kind": "fact",
                                     "notebookId": str(hidden.id)})
    assert refused["isError"] is True
    read_only, _ = new_key(owner, capabilities=["memory:read"])
    denied = call(read_only, "remember", {"content": "x", "kind": "fact"})
    assert denied["isError"] and denied["structuredContent"]["code"] == "insufficient_capability"


def test_every_tool_runs_over_rest_with_the_same_arguments(owner, key):
    caller = Caller(Client(), key)
    notebook = caller.post("/tools/create_notebook", {"name": "Trips"}).json()["data"]
    saved = caller.post("/tools/remember", {"content": "Flight at 9", "kind": "fact",
                                            "notebookId": notebook["id"]})
    assert saved.status_code == 200 and saved.json()["data"]["note"]["notebookId"] == \
        notebook["id"]
    note_id = saved.json()["data"]["note"]["id"]
    assert caller.post("/tools/update_memory", {"noteId": note_id, "content": "Flight at 10",
                                                "expectedVersion": 1}).status_code == 200
    history = caller.post("/tools/note_history", {"noteId": note_id}).json()["data"]
    assert [r["version"] for r in history["revisions"]] == [2, 1]
    restored = caller.post("/tools/restore_note", {"noteId": note_id, "revision": 1})
    assert restored.json()["data"]["content"] == "Flight at 9"
    moved = caller.post("/tools/move_notes", {"noteIds": [note_id], "notebookId": None})
    assert moved.json()["data"]["notes"][0]["notebookId"] is None
    archived = caller.post("/tools/archive_notes", {"items": [note_id]}).json()["data"]
    assert archived["items"][0]["status"] == "archived"
    back = caller.post("/tools/archive_notes", {"items": [note_id], "restore": True})
    assert back.json()["data"]["items"][0]["status"] == "restored"
    renamed = caller.post("/tools/update_notebook", {"notebookId": notebook["id"],
                                                     "name": "Travel"}).json()["data"]
    assert renamed["name"] == "Travel"
    books = caller.post("/tools/list_notebooks", {}).json()["data"]
    assert [b["name"] for b in books["notebooks"]] == ["Travel"]
    gone = caller.post("/tools/forget", {"items": [note_id]}).json()["data"]
    assert gone["items"][0]["status"] == "deleted"
    # Errors keep the REST envelope and status.
    bad = caller.post("/tools/remember", {"content": "x", "kind": "poem"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_arguments"
    assert caller.post("/tools/nope", {}).status_code == 404
    assert Caller(Client(), None).post("/tools/recall", {}).status_code == 401
    assert set(tools()) >= {"remember", "forget"}
