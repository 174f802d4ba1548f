"""Reading Grove's tool results as an MCP client does."""

from __future__ import annotations

import json
from typing import Any


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
