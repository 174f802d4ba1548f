"""The MCP Inspector CLI (`npx @modelcontextprotocol/inspector --cli`), a strict client
Grove does not control, against a fresh `grove serve --port N`. It validates every
structuredContent against the tool's outputSchema — errors included — so error results
must carry none: it then shows the tool's own message (and the approval link).

Inspector 2.x ends a `tools/call` whose result has `isError: true` with its own exit code
5 (`TOOL_ERROR`, "the tool reported an error") and `tool_is_error` on stderr, after
printing the result; a schema complaint or a failed call would be another code."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest

from tests.conftest import require_program
from tests.mcp.conftest import Served, pending_client_token

pytestmark = pytest.mark.slow


TOOL_ERROR = 5  # the Inspector's exit code for a result with isError: true


def inspector(served: Served, token: str, *args: str) -> tuple[int, dict, str]:
    npx = require_program("npx")
    result = subprocess.run(
        [npx, "-y", "@modelcontextprotocol/inspector@2", "--cli", f"{served.url}/mcp",
         "--transport", "http", "--header", f"Authorization: Bearer {token}",
         "--format", "json", *args],
        capture_output=True, text=True, timeout=300, check=False)
    output = result.stdout
    assert "{" in output, result.stdout[-2000:] + result.stderr[-2000:]
    envelope = json.loads(output[output.index("{"):])
    problems = "\n".join(line for line in result.stderr.splitlines()
                         if not line.startswith("npm warn"))
    return result.returncode, envelope, problems


def test_the_inspector_lists_the_tools_and_finds_them_portable(served):
    """--strict lints every schema for portability (single-type fields, …): no finding."""
    code, listed, problems = inspector(served, served.key, "--method", "tools/list",
                                       "--strict")
    assert code == 0, problems
    assert "schemaFindings" not in listed and "Warning" not in problems
    names = {tool["name"] for tool in listed["result"]["tools"]}
    assert {"remember", "recall", "forget", "list_notebooks"} <= names
    assert all(tool["annotations"]["openWorldHint"] is False
               for tool in listed["result"]["tools"])


def test_the_inspector_shows_a_tool_error_as_the_message(served):
    code, shown, problems = inspector(served, served.key, "--method", "tools/call",
                                      "--tool-name", "get_note", "--tool-arg",
                                      f"noteId={uuid.uuid4()}")
    assert code == TOOL_ERROR and '"tool_is_error"' in problems, problems
    assert "must have required property" not in problems  # no schema complaint
    result = shown["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"] == "No such note."
    assert json.loads(result["content"][1]["text"]) == {"code": "note_not_found"}


def test_the_inspector_shows_the_approval_link_of_a_pending_app(served):
    token = pending_client_token(served)
    code, shown, problems = inspector(served, token, "--method", "tools/call",
                                      "--tool-name", "recall", "--tool-arg", "query=anything")
    assert code == TOOL_ERROR and '"tool_is_error"' in problems, problems
    result = shown["result"]
    message = result["content"][0]["text"]
    detail = json.loads(result["content"][1]["text"])
    assert detail["code"] == "connection_required"
    assert detail["approvalUrl"].startswith(f"{served.url}/connections/")
    assert detail["approvalUrl"] in message and "has not approved this app" in message


def test_the_inspector_calls_a_tool_within_the_grant(served):
    code, shown, problems = inspector(served, served.key, "--method", "tools/call",
                                      "--tool-name", "remember", "--tool-arg",
                                      "content=Inspector was here.", "--tool-arg", "kind=fact")
    assert code == 0, problems
    saved = shown["result"]
    assert saved["isError"] is False
    assert saved["structuredContent"]["id"].startswith("note:")
