"""Reading Grove's tool results as an MCP client does, and speaking to `/mcp` in either
protocol era through Django's test client."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

MODERN = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
NAME_FIELD = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def error_of(result: Any) -> dict[str, Any]:
    """The machine-readable part of a tool error — the JSON text block after the message,
    `{"code": …, …details}` — from a raw result (dict) or the MCP SDK's CallToolResult.
    Error results carry no structuredContent: it would have to match the outputSchema."""
    if isinstance(result, dict):
        assert result["isError"] is True, result
        assert "structuredContent" not in result
        blocks = [block["text"] for block in result["content"] if block["type"] == "text"]
    else:
        assert result.is_error, result
        assert result.structured_content is None
        blocks = [block.text for block in result.content if block.type == "text"]
    assert len(blocks) == 2, blocks
    detail = json.loads(blocks[1])
    assert isinstance(detail, dict) and "code" in detail
    return detail


def post(key: str | None, body: Any, headers: dict[str, str]):
    """One POST to /mcp with a JSON body (or raw text) and these headers."""
    all_headers = {"Accept": "application/json, text/event-stream", **headers}
    if key:
        all_headers["Authorization"] = f"Bearer {key}"
    return Client().post("/mcp", data=body if isinstance(body, str) else json.dumps(body),
                         content_type="application/json", headers=all_headers)


def modern(key: str | None, method: str, params: dict | None = None, *, id: Any = 1,
           headers: dict[str, str] | None = None, envelope: dict | None = None):
    """A well-formed 2026-07-28 request: `_meta` envelope, version, method and name
    headers as the SDK client sends them; `headers` and `envelope` override parts."""
    body_params = {**(params or {}), "_meta": {**ENVELOPE, **(envelope or {})}}
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": body_params}
    if id is not None:
        message["id"] = id
    sent = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method in NAME_FIELD and isinstance(body_params.get(NAME_FIELD[method]), str):
        sent["Mcp-Name"] = encode_name(body_params[NAME_FIELD[method]])
    sent.update(headers or {})
    return post(key, message, {k: v for k, v in sent.items() if v is not None})


def handshake(key: str | None, method: str, params: dict | None = None, *, id: Any = 1,
              version: str = "2025-11-25"):
    """A handshake-era request, as a client sends it after `initialize`."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return post(key, message, {"MCP-Protocol-Version": version})


def encode_name(value: str) -> str:
    """`Mcp-Name` as the SDK client writes it: verbatim when HTTP can carry it, else the
    `=?base64?…?=` form."""
    import base64

    if value.isascii() and value.isprintable() and value == value.strip():
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="
