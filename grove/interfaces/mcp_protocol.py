"""The parts of MCP that `/mcp` and the stdio bridge share, free of Django (the bridge
imports this module without settings): the protocol revisions Grove speaks, the error
codes it answers with, the capabilities it declares and the shape of a tool error."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

# The initialize-handshake era, newest first.
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
# The stateless era (`server/discover`, per-request `_meta`), newest first.
MODERN_VERSIONS = ("2026-07-28",)
# What an unsupported-version error names, newest first: a dual-era server lists both
# eras (the spec's versioning example does), and an `auto` client picks a modern one.
SUPPORTED_VERSIONS = (*MODERN_VERSIONS, *HANDSHAKE_VERSIONS)

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
INTERNAL_ERROR = -32603
# Grove's own codes sit in the implementation-defined band (-32000..-32019).
AUTHENTICATION_REQUIRED = -32001
# The caller is known but may not do this (yet): a connection without the capability, or
# an OAuth client the owner has not approved. error.data.code says which. Deliberately
# not HTTP 401/403: those restart OAuth or start step-up loops in clients.
FORBIDDEN = -32003
# Spec-defined (2026-07-28).
HEADER_MISMATCH = -32020
UNSUPPORTED_PROTOCOL_VERSION = -32022
# Resource not found as the handshake-era specs recommend it (2025-06-18, 2025-11-25
# "Error Handling": -32002 with data.uri). 2026-07-28 retired the code (reserved, never
# reused) and requires -32602 with data.uri instead; its clients SHOULD still accept -32002.
LEGACY_RESOURCE_NOT_FOUND = -32002

# The 2026-07-28 per-request envelope (params._meta) and result stamps.
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
# The body field each name-bearing method mirrors in the `Mcp-Name` header.
NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class RpcError(Exception):
    """A JSON-RPC error to answer with (the HTTP status is the era's business)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def capabilities() -> dict[str, Any]:
    """What Grove serves, the same in both eras, on /mcp and through the bridge. Nothing
    is pushed: Grove has no `subscriptions/listen` and sends no list-changed
    notifications, so the flags say false rather than being left to guess."""
    return {"tools": {"listChanged": False},
            "resources": {"subscribe": False, "listChanged": False},
            "prompts": {"listChanged": False}}


_B64_SENTINEL = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


def decode_header_value(value: str | None) -> str | None:
    """An `Mcp-Name` header as the body spells it: verbatim, or decoded from the
    `=?base64?…?=` form clients use for what HTTP cannot carry (non-ASCII, edge
    spaces). A malformed or non-canonical sentinel is None, so it never matches."""
    if value is None:
        return None
    found = _B64_SENTINEL.fullmatch(value)
    if found is None:
        return value
    payload = found.group("payload")
    try:
        decoded = base64.b64decode(payload, validate=True)
        if base64.b64encode(decoded).decode("ascii") != payload:
            return None
        return decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def error_result(code: str, message: str, details: dict[str, Any] | None = None) -> dict:
    """A tool result with `isError: true` that every client can show.

    The message comes first, as the text a person or a model reads; a second text
    block holds the machine-readable part, `{"code": …, …details}`. There is no
    `structuredContent`: it would have to match the tool's `outputSchema` (strict
    clients such as the MCP Inspector validate it even on errors and print a schema
    complaint instead of the message)."""
    detail = {"code": code, **{k: v for k, v in (details or {}).items() if v is not None}}
    return {"content": [{"type": "text", "text": message},
                        {"type": "text", "text": json.dumps(detail, ensure_ascii=False)}],
            "isError": True}


def message_kind(message: Any) -> tuple[str, str]:
    """What one JSON-RPC message is: ("request" | "notification" | "response", "") or
    ("invalid", why). Ids are strings or integers (MCP: never null, no fractions, no
    objects); a client's answer to a server request (`result`/`error`, no `method`)
    is a response, which needs no reply."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return "invalid", "Not a JSON-RPC 2.0 message."
    try:  # JSON may escape a lone surrogate (\\ud800), which no answer could carry
        json.dumps(message, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, RecursionError):
        return "invalid", "The message holds text that is not valid Unicode, or nests too deep."
    if "id" in message:
        ident = message["id"]
        if not (isinstance(ident, str) or (isinstance(ident, int)
                                           and not isinstance(ident, bool))):
            return "invalid", "A request id must be a string or an integer."
    if "method" not in message:
        if "id" in message and ("result" in message or "error" in message):
            return "response", ""
        return "invalid", "Not a JSON-RPC 2.0 request."
    if not isinstance(message["method"], str):
        return "invalid", "The method must be a string."
    return ("request" if "id" in message else "notification"), ""
