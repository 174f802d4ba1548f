"""The parts of MCP that `/mcp` and the stdio bridge share, free of Django (the bridge
imports this module without settings): the protocol revisions Grove speaks and the
shape of a tool error."""

from __future__ import annotations

import json
from typing import Any

# The initialize-handshake era, newest first.
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


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


PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


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
