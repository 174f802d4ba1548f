"""Hostile input never gets a 500: deeply nested JSON, lone surrogates and NULs where
text is stored, numbers past what PostgreSQL holds — on `/mcp`, `POST /v1/tools/*`, the
REST routes and the import. Each gets a 4xx with a stable code and changes nothing."""

from __future__ import annotations

import io
import json

import pytest
from django.test import Client

from grove.models import Account
from notebooks.services.portability import export_records
from tests import factories
from tests.api.conftest import new_key

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a":' * 50_000 + "1" + "}" * 50_000


@pytest.fixture
def owner():
    return factories.owner()


@pytest.fixture
def key(owner) -> str:
    return new_key(owner)[0]


def post(path: str, body: str, key: str | None = None):
    headers = {"Accept": "application/json, text/event-stream"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return Client().post(path, data=body.encode("utf-8", "surrogatepass"),
                         content_type="application/json", headers=headers)


def rpc(**fields) -> str:
    return json.dumps({"jsonrpc": "2.0", **fields})


@pytest.mark.parametrize("body", [
    DEEP,
    DEEP_OBJECT,
    rpc(id=1, method="tools/call", params={"name": "recall", "arguments": "ARGS"})
    .replace('"ARGS"', DEEP_OBJECT),
    rpc(id=1, method="tools/call", params={"name": "remember", "arguments": {
        "content": "x", "kind": "fact", "taskId": "DEEP"}}).replace('"DEEP"', DEEP),
    rpc(id=1, method="initialize", params="P").replace('"P"', DEEP_OBJECT),
], ids=["array", "object", "arguments", "argument-value", "params"])
def test_deeply_nested_json_is_a_client_error_on_mcp(key, body):
    answer = post("/mcp", body, key)
    assert 400 <= answer.status_code < 500 or (
        answer.status_code == 200 and "error" in answer.json()), answer.content[:300]
    assert answer.json()["jsonrpc"] == "2.0"


@pytest.mark.parametrize("request_id", ["\ud800", "a\udfffb", {"x": 1}, [1], 1.5, True])
def test_an_id_that_cannot_be_echoed_is_refused_not_crashed(key, request_id):
    raw = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
    answer = post("/mcp", raw, key)
    assert answer.status_code == 400, answer.content[:300]
    body = answer.json()
    assert body["error"]["code"] == -32600 and body["id"] is None


def test_a_lone_surrogate_in_a_method_name_is_refused(key):
    answer = post("/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "to\udc00ls/list"}),
                  key)
    assert answer.status_code in (200, 400), answer.content[:300]
    assert "error" in answer.json()


@pytest.mark.parametrize("tool", ["recall", "remember", "update_notebook"])
@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT, '{"content": "DEEP", "kind": "fact"}'
                                  .replace('"DEEP"', DEEP)], ids=["array", "object", "value"])
def test_deeply_nested_json_is_a_client_error_on_rest_tools(owner, key, tool, body):
    before = factories.table_counts(owner.account_id)
    answer = post(f"/v1/tools/{tool}", body, key)
    assert 400 <= answer.status_code < 500, answer.content[:300]
    assert answer.json()["success"] is False and answer.json()["error"]["code"]
    assert factories.table_counts(owner.account_id) == before


@pytest.mark.parametrize("path", ["/v1/notes", "/v1/recall", "/v1/notebooks"])
def test_deeply_nested_json_is_a_client_error_on_rest(owner, key, path):
    for body in (DEEP, DEEP_OBJECT):
        answer = post(path, body, key)
        assert 400 <= answer.status_code < 500, answer.content[:300]
        assert answer.json()["error"]["code"]


# -- the import ------------------------------------------------------------------------------


def _library(owner) -> list[dict]:
    notebook = factories.notebook(owner, "Work")
    factories.note(owner, "Handing over.", notebook_id=notebook.id, task_id="t-1",
                   source_agent="claude")
    return list(export_records(actor=owner))


def _first(records: list[dict], kind: str) -> dict:
    return next(r for r in records if r["type"] == kind)


CRAFTED = {
    "nul-in-task-id": lambda rs: _set(rs, "note", taskId="t\x00"),
    "nul-in-source-agent": lambda rs: _set(rs, "note", sourceAgent="a\x00b"),
    "nul-in-content": lambda rs: _set(rs, "note", content="hello\x00world"),
    "nul-in-name": lambda rs: _set(rs, "notebook", name="W\x00rk"),
    "nul-in-reason": lambda rs: _set(rs, "revision", reason="created\x00"),
    "long-task-id": lambda rs: _set(rs, "note", taskId="t" * 201),
    "long-source-agent": lambda rs: _set(rs, "note", sourceAgent="a" * 101),
    "huge-version": lambda rs: _set(rs, "note", version=2**40),
    "huge-restored-from": lambda rs: _set(rs, "revision", restoredFrom=2**40),
    "huge-retention": lambda rs: _set(rs, "note", retentionDays=2**40),
    "surrogate-in-content": lambda rs: _set(rs, "note", content="a\ud800b"),
    "surrogate-in-task-id": lambda rs: _set(rs, "note", taskId="\udfff"),
    "non-object-line": lambda rs: [rs[0], [1, 2]] + rs[1:],
    "string-line": lambda rs: [rs[0], "note"] + rs[1:],
}


def _set(records: list[dict], kind: str, **fields) -> list[dict]:
    target = _first(records, kind)
    return [{**r, **fields} if r is target else r for r in records]


def _upload(web: Client, lines: list[str]):
    upload = io.BytesIO("\n".join(lines).encode("utf-8", "surrogatepass"))
    upload.name = "export.ndjson"
    return web.post("/settings/import", {"file": upload})


@pytest.mark.parametrize("damage", list(CRAFTED.values()), ids=list(CRAFTED))
def test_a_crafted_import_is_refused_with_a_code_and_changes_nothing(damage):
    source = factories.owner()
    lines = [json.dumps(r) for r in damage(_library(source))]
    fresh = factories.owner()
    web = Client()
    web.force_login(Account.objects.get(id=fresh.account_id))
    before = factories.table_counts(fresh.account_id)
    answer = _upload(web, lines)
    assert answer.status_code == 400, answer.content[:500]
    assert factories.table_counts(fresh.account_id) == before


def test_a_deeply_nested_import_line_is_refused():
    source = factories.owner()
    lines = [json.dumps(r) for r in _library(source)]
    fresh = factories.owner()
    web = Client()
    web.force_login(Account.objects.get(id=fresh.account_id))
    answer = _upload(web, [lines[0], DEEP, *lines[1:]])
    assert answer.status_code == 400, answer.content[:500]
    assert b"line 2" in answer.content.lower() or b"Line 2" in answer.content
