"""Issue 39's agent tools through the official MCP SDK client against a live Grove."""

from __future__ import annotations

import asyncio
import json
import time

import httpx2
import pytest
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client

from tests.agents.test_partial_edits import _stored, _world


@pytest.mark.slow
def test_the_sdk_client_appends_to_a_note(site_url, committed):
    owner, api, note = _world()

    async def append():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {api.key}"}, timeout=30)
        async with http, McpClient(streamable_http_client(f"{site_url}/mcp",
                                                          http_client=http)) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert tools["edit_note"].input_schema["required"] == ["noteId", "op"]
            return await client.call_tool("edit_note", {
                "noteId": str(note.id), "op": "append", "text": "- from the SDK"})

    result = asyncio.run(append())
    assert result.structured_content["id"] == f"note:{note.id}@2"
    assert _stored(owner, note.id)[0].endswith("- legal\n\n- from the SDK")


@pytest.mark.slow
def test_the_sdk_client_remembers_a_batch(site_url, committed):
    owner, api, _note = _world()

    async def batch():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {api.key}"}, timeout=30)
        async with http, McpClient(streamable_http_client(f"{site_url}/mcp",
                                                          http_client=http)) as client:
            return await client.call_tool("remember", {"items": [
                {"content": "Deploys go out on Tuesdays.", "kind": "decision"},
                {"content": "Deploys go out on Tuesdays.", "kind": "decision"},
                {"content": "x", "kind": "sonnet"}]})

    result = asyncio.run(batch())  # the SDK checks it against remember's outputSchema
    items = result.structured_content["items"]
    assert [item["status"] for item in items] == ["created", "created", "refused"]
    assert items[1]["similar"] == [items[0]["id"].split("@")[0]]
    assert items[2]["error"]["code"] == "invalid_item"


@pytest.mark.slow
def test_the_sdk_client_reads_as_of_a_time(site_url, committed):
    """`asOf` on get_note, list_notes, recall and the brief (issue 39), through the SDK
    client, which checks every result against the tool's outputSchema."""
    owner, api, note = _world()
    then = api.get(f"/notes/{note.id}").json()["data"]["updatedAt"]
    time.sleep(0.05)
    changed = api.patch(f"/notes/{note.id}", {"content": "Replaced entirely.",
                                              "expectedVersion": 1})
    assert changed.status_code == 200, changed.content

    async def read():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {api.key}"}, timeout=30)
        async with http, McpClient(streamable_http_client(f"{site_url}/mcp",
                                                          http_client=http)) as client:
            return {tool: await client.call_tool(tool, {**arguments, "asOf": then})
                    for tool, arguments in (("get_note", {"noteId": str(note.id)}),
                                            ("list_notes", {}),
                                            ("recall", {"query": "legal"}),
                                            ("brief", {"format": "json"}))}

    answers = asyncio.run(read())
    for tool, result in answers.items():
        assert not result.is_error, (tool, result.content)
        assert f"note:{note.id}@1" in json.dumps(result.structured_content), tool
        assert "Replaced entirely" not in json.dumps(result.structured_content), tool
    assert answers["list_notes"].structured_content["meta"]["asOf"]
