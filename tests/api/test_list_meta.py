"""Every list-shaped answer says the same things about itself (SPEC §4, issue 36 4.3):
`meta = {returned, available, truncated, limit, nextCursor?}` with `available` a real
count and `truncated` true whenever fewer came back than are available — over REST, the
MCP tools (the official SDK client, output validation on) and a share's public JSON. One
builder (`grove.kernel.schemas.ListMeta.of`) makes them all."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import httpx2
import pytest
from django.test import Client
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client

from grove.models import Account
from sharing import services as sharing
from tests import factories
from tests.api.conftest import new_key

pytestmark = pytest.mark.slow

KEYS = {"returned", "available", "truncated", "limit"}


def _consistent(where: str, items: list[Any], meta: dict[str, Any]) -> None:
    assert KEYS <= set(meta), (where, meta)
    assert "next_cursor" not in meta, where  # camelCase, as every answer
    returned, available = meta["returned"], meta["available"]
    assert returned == len(items), (where, meta)
    assert 0 <= returned <= available, (where, meta)
    # A lower bound (recall's availableAtLeast) may hide more than it counted.
    assert meta["truncated"] is (returned < available or bool(meta.get("availableAtLeast"))
                                 or meta.get("nextCursor") is not None), (where, meta)
    assert returned <= meta["limit"], (where, meta)
    cursor = meta.get("nextCursor")
    assert cursor is None or (isinstance(cursor, str) and meta["truncated"]), (where, meta)


def _seed(owner) -> tuple[Any, list[Any]]:
    garden = factories.notebook(owner, "Garden")
    for name in ("Kitchen", "Attic"):
        factories.notebook(owner, name)
    notes = [factories.note(owner, f"Garden note {i}: tomatoes want sun.",
                            notebook_id=garden.id) for i in range(3)]
    factories.note(owner, "Prefers tea.", kind="preference")
    return garden, notes


def _rest(url: str, key: str, session: Client, notes: list[Any], garden: Any
          ) -> dict[str, dict[str, Any]]:
    answers: dict[str, dict[str, Any]] = {}
    with httpx.Client(base_url=f"{url}/v1", timeout=30,
                      headers={"Authorization": f"Bearer {key}"}) as api:
        for name, method, path, body in [
            ("notes", "GET", "/notes?limit=2", None),
            ("notes, all", "GET", "/notes", None),
            ("search", "POST", "/notes/search", {"query": "tomatoes", "limit": 2}),
            ("notebooks", "GET", "/notebooks?limit=2", None),
            ("recall", "POST", "/recall", {"query": "tomatoes", "limit": 1}),
            ("recall profile", "POST", "/recall", {}),
            ("activity", "GET", "/activity?limit=2", None),
            ("revisions", "GET", f"/notes/{notes[0].id}/revisions", None),
            ("vision revisions", "GET", f"/notebooks/{garden.id}/vision/revisions", None),
            ("conversations", "GET", "/conversations", None),
            ("conversation search", "POST", "/conversations/search", {}),
        ]:
            answer = api.request(method, path, json=body)
            assert answer.status_code == 200, (name, answer.text)
            answers[f"REST {name}"] = answer.json()
    for name, path in [("connections", "/v1/connections"), ("shares", "/v1/shares")]:
        answer = session.get(path)
        assert answer.status_code == 200, (name, answer.content)
        answers[f"REST {name}"] = answer.json()
    return answers


def _mcp(url: str, key: str) -> dict[str, dict[str, Any]]:
    calls = {"list_notes": {"limit": 2}, "recall": {"query": "tomatoes", "limit": 1},
             "list_notebooks": {"limit": 2}, "recent_activity": {"limit": 2}}

    async def steps() -> dict[str, dict[str, Any]]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
        found = {}
        async with http, McpClient(streamable_http_client(f"{url}/mcp",
                                                          http_client=http)) as client:
            for tool, arguments in calls.items():
                result = await client.call_tool(tool, arguments)
                assert not result.is_error, (tool, result.content)
                found[f"MCP {tool}"] = result.structured_content
        return found

    return asyncio.run(steps())


def test_every_list_says_the_same_about_itself(site_url, committed):
    owner = factories.owner()
    garden, notes = _seed(owner)
    key, _ = new_key(owner)
    session = Client()
    session.force_login(Account.objects.get(id=owner.account_id))
    share, _ = sharing.share_create(actor=owner, notebook_id=garden.id)
    answers = _rest(site_url, key, session, notes, garden)
    answers.update(_mcp(site_url, key))
    first = Client().get(f"/public/shares/{share.token}/notes.json", {"limit": 2}).json()
    answers["share page 1"] = first
    answers["share page 2"] = Client().get(f"/public/shares/{share.token}/notes.json", {
        "limit": 2, "cursor": first["meta"]["nextCursor"]}).json()
    answers["share page"] = Client().get(f"/public/shares/{share.token}.json").json()

    for where, body in answers.items():
        _consistent(where, body["data"], body["meta"])
    # Both sides of `truncated`, and real counts where the page is cut.
    assert answers["REST notes"]["meta"]["available"] == 4
    assert answers["REST notes, all"]["meta"]["truncated"] is False
    assert answers["MCP list_notebooks"]["meta"] == {
        "returned": 2, "available": 3, "truncated": True, "limit": 2,
        "nextCursor": answers["MCP list_notebooks"]["meta"]["nextCursor"]}
    assert answers["MCP list_notes"]["meta"]["available"] == 4
    assert answers["share page 1"]["meta"]["available"] == 3
    second = answers["share page 2"]["meta"]
    assert (second["returned"], second["available"], second["truncated"]) == (1, 3, True)
    assert second["nextCursor"] is None  # the last page: nothing after it, still not all
    assert answers["share page"]["meta"]["truncated"] is False


def test_the_builder_never_claims_fewer_than_it_returned():
    from grove.kernel.schemas import ListMeta

    meta = ListMeta.of(returned=3, available=2, limit=5)
    assert (meta.available, meta.truncated) == (3, False)
    paged = ListMeta.of(returned=2, available=2, limit=2, next_cursor=str(uuid.uuid4()))
    assert paged.truncated is True
