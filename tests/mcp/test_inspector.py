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
import time
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


def inspector_refusal(served: Served, token: str, *args: str) -> tuple[int, str]:
    """(exit code, message) of a request the server answered with a JSON-RPC error: the
    Inspector prints `{"error": {…, "message": …}}` on stderr and nothing on stdout."""
    npx = require_program("npx")
    result = subprocess.run(
        [npx, "-y", "@modelcontextprotocol/inspector@2", "--cli", f"{served.url}/mcp",
         "--transport", "http", "--header", f"Authorization: Bearer {token}",
         "--format", "json", *args],
        capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode != 0 and "{" not in result.stdout, result.stdout[-2000:]
    [line] = [line for line in result.stderr.splitlines() if line.startswith('{"error"')]
    return result.returncode, json.loads(line)["error"]["message"]


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



def test_the_inspector_edits_part_of_a_note_and_sees_a_refusal_by_code(served):
    """`edit_note` (issue 39): a section replaced as one revision, then an absent text
    refused with its code — no schema complaint either way."""
    saved = served.api("POST", "/v1/notes", json={
        "content": "# Beds\n\n## Tomatoes\n\nWater daily.\n\n## Beans\n\nLater.",
        "kind": "note"}).json()["data"]
    code, shown, problems = inspector(
        served, served.key, "--method", "tools/call", "--tool-name", "edit_note",
        "--tool-arg", f"noteId=note:{saved['id']}@1", "--tool-arg", "op=replace_section",
        "--tool-arg", "heading=Tomatoes", "--tool-arg", "text=Water every other day.")
    assert code == 0, problems
    assert shown["result"]["structuredContent"]["id"] == f"note:{saved['id']}@2"
    now = served.api("GET", f"/v1/notes/{saved['id']}").json()["data"]
    assert now["content"] == ("# Beds\n\n## Tomatoes\n\nWater every other day.\n\n"
                              "## Beans\n\nLater.")
    code, shown, problems = inspector(
        served, served.key, "--method", "tools/call", "--tool-name", "edit_note",
        "--tool-arg", f"noteId={saved['id']}", "--tool-arg", "op=replace_text",
        "--tool-arg", "find=Water daily.", "--tool-arg", "text=x")
    assert code == TOOL_ERROR and "must have required property" not in problems, problems
    assert json.loads(shown["result"]["content"][1]["text"])["code"] == \
        "edit_target_not_found"



def test_the_inspector_remembers_a_batch(served):
    items = json.dumps([{"content": "Inspector batch one.", "kind": "fact"},
                        {"content": "Inspector batch two.", "kind": "fact",
                         "notebookId": served.notebooks["Garden"]}])
    code, shown, problems = inspector(served, served.key, "--method", "tools/call",
                                      "--tool-name", "remember", "--tool-arg",
                                      f"items={items}")
    assert code == 0, problems
    said = shown["result"]["structuredContent"]["items"]
    assert [item["status"] for item in said] == ["created", "created"]


def test_the_inspector_reads_a_note_and_recalls_as_of_a_time(served):
    """`asOf` (issue 39): what a note said before its last change, by get_note and by
    recall, with the instant used said."""
    saved = served.api("POST", "/v1/notes", json={
        "content": "Inspector pricing: the Basic plan costs 4 dollars.",
        "kind": "fact"}).json()["data"]
    then = served.api("GET", f"/v1/notes/{saved['id']}").json()["data"]["updatedAt"]
    time.sleep(0.05)
    served.api("PATCH", f"/v1/notes/{saved['id']}", json={
        "content": "Inspector pricing: the Basic plan costs 6 dollars.", "expectedVersion": 1})
    code, shown, problems = inspector(
        served, served.key, "--method", "tools/call", "--tool-name", "get_note",
        "--tool-arg", f"noteId={saved['id']}", "--tool-arg", f"asOf={then}")
    assert code == 0, problems
    read = shown["result"]["structuredContent"]
    assert (read["id"], read["content"]) == (
        f"note:{saved['id']}@1", "Inspector pricing: the Basic plan costs 4 dollars.")
    code, shown, problems = inspector(
        served, served.key, "--method", "tools/call", "--tool-name", "recall",
        "--tool-arg", "query=Inspector pricing Basic plan", "--tool-arg", f"asOf={then}")
    assert code == 0, problems
    found = shown["result"]["structuredContent"]
    # Among the served account's other notes: this one, as it read then, never as now.
    said = {item["id"]: item["content"] for item in found["data"]}
    assert said[f"note:{saved['id']}@1"] == \
        "Inspector pricing: the Basic plan costs 4 dollars."
    assert f"note:{saved['id']}@2" not in said
    assert found["meta"]["asOf"]


# -- resources and prompts (the real catalog, notebooks.mcp_context) --------------------------


def test_the_inspector_lists_and_reads_resources(served):
    code, listed, problems = inspector(served, served.key, "--method", "resources/list")
    assert code == 0, problems
    uris = [resource["uri"] for resource in listed["result"]["resources"]]
    diary = served.notebooks["Diary"]
    assert uris[:1] == ["brief://all"] and f"notebook://{diary}" in uris
    [found] = served.api("GET", "/v1/notes", params={"notebookId": diary}).json()["data"]
    note = f"note://{found['note']['id']}"
    assert note in uris
    code, templates, problems = inspector(served, served.key,
                                          "--method", "resources/templates/list")
    assert code == 0, problems
    assert {t["uriTemplate"] for t in templates["result"]["resourceTemplates"]} == {
        "note://{id}", "note://{id}@{version}", "notebook://{id}", "brief://{notebookId}"}
    code, read, problems = inspector(served, served.key, "--method", "resources/read",
                                     "--uri", note)
    assert code == 0, problems
    [content] = read["result"]["contents"]
    assert content["uri"] == note and "the tomatoes made me happy" in content["text"]
    _code, message = inspector_refusal(served, served.key, "--method", "resources/read",
                                       "--uri", f"note://{uuid.uuid4()}")
    assert message == "Resource not found."


def test_the_inspector_lists_and_gets_prompts(served):
    code, listed, problems = inspector(served, served.key, "--method", "prompts/list")
    assert code == 0, problems
    prompts = {prompt["name"]: prompt for prompt in listed["result"]["prompts"]}
    assert list(prompts) == ["load_my_context", "save_handoff", "end_of_session"]
    assert prompts["save_handoff"]["arguments"][0] == {
        "name": "taskId", "description": "The task (stable, e.g. a ticket or branch).",
        "required": True}
    code, got, problems = inspector(served, served.key, "--method", "prompts/get",
                                    "--prompt-name", "save_handoff",
                                    "--prompt-args", "taskId=tomato-beds")
    assert code == 0, problems
    [message] = got["result"]["messages"]
    assert message["role"] == "user" and 'task "tomato-beds"' in message["content"]["text"]
    code, brief, problems = inspector(served, served.key, "--method", "prompts/get",
                                      "--prompt-name", "load_my_context", "--prompt-args",
                                      f"notebookId={served.notebooks['Diary']}")
    assert code == 0, problems
    assert "the tomatoes made me happy" in brief["result"]["messages"][0]["content"]["text"]


def test_the_inspector_shows_a_pending_app_where_to_approve_it_for_resources(served):
    token = pending_client_token(served, "Inspector resources")
    code, listed, problems = inspector(served, token, "--method", "resources/list")
    assert code == 0 and listed["result"]["resources"] == [], problems
    _code, message = inspector_refusal(served, token, "--method", "resources/read",
                                       "--uri", "brief://all")
    assert "has not approved this app" in message and f"{served.url}/connections/" in message
    _code, message = inspector_refusal(served, token, "--method", "prompts/get",
                                       "--prompt-name", "end_of_session")
    assert "has not approved this app" in message
