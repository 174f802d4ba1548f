"""The official MCP Python SDK client (2.3) against a live Grove (uvicorn, real database)
in each of its modes — pinned to 2026-07-28, `auto` (which must now negotiate
2026-07-28) and `legacy` (the handshake, 2025-11-25) — using tools, resources (the test
provider and the real `notebooks.mcp_context` one) and prompts; and the stdio bridge
serving the same resources and prompts."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests import factories
from tests.api.conftest import new_key
from tests.mcp.catalog_fixtures import UNICODE_URI
from tests.mcp.test_sdk_client import _bridge

pytestmark = pytest.mark.slow

MODES = {"2026-07-28": "2026-07-28", "auto": "2026-07-28", "legacy": "2025-11-25"}


def _walnuts():
    owner = factories.owner()
    shared = factories.notebook(owner, "Shared")
    hidden = factories.notebook(owner, "Hidden")
    seen = factories.note(owner, "Walnuts keep a year in the freezer.", notebook_id=shared.id)
    unseen = factories.note(owner, "The walnut stash is behind the shed.",
                            notebook_id=hidden.id)
    key, _ = new_key(owner, all_notebooks=False, personal=False, notebooks=[shared.id])
    return shared, seen, unseen, key


async def _everything(client: Client, seen, unseen) -> dict:
    """Every method a client uses, the failures included, as plain data."""
    out: dict = {"version": client.protocol_version}
    out["tools"] = [t.name for t in (await client.list_tools()).tools]
    called = await client.call_tool("recall", {"query": "walnut"})
    out["recalled"] = [hit["content"] for hit in called.structured_content["data"]]
    uris, cursor, pages = [], None, 0
    while True:
        page = await client.list_resources(cursor=cursor)
        uris += [r.uri for r in page.resources]
        cursor, pages = page.next_cursor, pages + 1
        if not cursor:
            break
    out["resources"], out["pages"] = uris, pages
    templates = await client.list_resource_templates()
    out["templates"] = [t.uri_template for t in templates.resource_templates]
    read = await client.read_resource(f"note://{seen.id}")
    out["read"] = read.contents[0].text
    out["unicode"] = (await client.read_resource(UNICODE_URI)).contents[0].text
    try:
        await client.read_resource(f"note://{unseen.id}")
    except MCPError as exc:
        out["hidden"] = (exc.error.code, exc.error.data)
    out["prompts"] = [p.name for p in (await client.list_prompts()).prompts]
    got = await client.get_prompt("fixture_echo", {"topic": "walnuts"})
    out["prompt"] = [(m.role, m.content.text) for m in got.messages]
    brief = await client.get_prompt("load_my_context", {})
    out["brief"] = brief.messages[0].content.text
    try:
        await client.get_prompt("fixture_echo", {})
    except MCPError as exc:
        out["bad_prompt"] = (exc.error.code, exc.error.message)
    return out


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_client_uses_everything_in_each_mode(site_url, committed, catalog, mode):
    shared, seen, unseen, key = _walnuts()
    sent: Counter[str] = Counter()

    async def count(request) -> None:
        sent[request.headers.get("mcp-method") or "(handshake)"] += 1

    async def run():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"},
                                  timeout=httpx2.Timeout(30), event_hooks={"request": [count]})
        async with http, Client(streamable_http_client(f"{site_url}/mcp", http_client=http),
                                mode=mode) as client:
            found = await _everything(client, seen, unseen)
            found["server"] = client.server_info.name if client.server_info else None
            await client.list_tools()  # a 2026 client keeps the list for its ttlMs
            return found

    found = asyncio.run(run())
    assert found["version"] == MODES[mode]
    if mode == "auto":  # it probed, and adopted what discover said
        assert found["server"] == "grove"
    assert found["tools"][:5] == ["brief", "whoami", "recent_activity", "truth",
                                  "update_vision"]
    assert "remember" in found["tools"] and "ask" in found["tools"]
    assert found["recalled"] == ["Walnuts keep a year in the freezer."]
    assert found["resources"][:5] == [f"fixture://item/{n}" for n in range(5)]
    assert found["resources"][5:] == ["brief://all", f"brief://{shared.id}",
                                      f"notebook://{shared.id}", f"note://{seen.id}"]
    assert found["pages"] == 4
    assert {"fixture://item/{n}", "note://{id}", "brief://{notebookId}"} <= set(
        found["templates"])
    assert "Walnuts keep a year in the freezer." in found["read"]
    assert found["unicode"] == "Item été"
    not_found = -32002 if mode == "legacy" else -32602
    assert found["hidden"] == (not_found, {"uri": f"note://{unseen.id}",
                                           "code": "resource_not_found"})
    assert found["prompts"] == ["fixture_echo", "load_my_context", "save_handoff",
                                "end_of_session"]
    assert found["prompt"] == [("user", "Tell me about walnuts (plain)."),
                               ("assistant", "Gladly.")]
    assert "Walnuts keep a year" in found["brief"] and "behind the shed" not in found["brief"]
    assert found["bad_prompt"][0] == -32602 and "topic: required" in found["bad_prompt"][1]
    if mode == "legacy":
        assert sent["(handshake)"] >= 2 and sent["tools/list"] == 0  # no 2026 headers
    else:
        assert sent["tools/list"] == 1  # the second list came from the client's cache
        assert sent["server/discover"] == (1 if mode == "auto" else 0)


def test_the_stdio_bridge_serves_resources_and_prompts(site_url, committed, catalog):
    """The bridge forwards resources/* and prompts/* to /mcp: the same listing, reads,
    errors (code and data) and prompts as a direct client in the handshake era."""
    shared, seen, unseen, key = _walnuts()

    async def bridged():
        async with Client(_bridge(site_url, key)) as client:
            found = await _everything(client, seen, unseen)
            found["capabilities"] = client.server_capabilities
            return found

    async def direct():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
        async with http, Client(streamable_http_client(f"{site_url}/mcp", http_client=http),
                                mode="legacy") as client:
            return await _everything(client, seen, unseen)

    over_stdio = asyncio.run(bridged())
    capabilities = over_stdio.pop("capabilities")
    assert capabilities.resources is not None and capabilities.resources.subscribe is False
    assert capabilities.prompts is not None and capabilities.tools is not None
    assert over_stdio == asyncio.run(direct())
    assert over_stdio["version"] == "2025-11-25"  # stdio stays in the handshake era
    assert over_stdio["hidden"][0] == -32002 and over_stdio["pages"] == 4
