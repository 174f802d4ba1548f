"""A note's links both ways read the same everywhere (issue 38 item 4): REST
`GET /v1/notes/{id}`, the `get_note` tool (over both MCP eras and through the official
MCP SDK client against a live Grove) and the `note://` resource, field by field; the
website's note page shows the same links and backlinks."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest
from django.test import Client as DjangoClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from grove.models import Account
from tests import factories
from tests.api.conftest import Caller, data, new_key
from tests.mcp.helpers import handshake, modern


def _world():
    owner = factories.owner()
    target = factories.note(owner, "# Target\n\n## Costs\n\nSeven.", kind="note")
    hub = factories.note(owner, "# Hub\n\nSee [[Target#Costs|costs]] and [[Ghost]].",
                         kind="note")
    citing = factories.note(owner, "# Notes on hub\n\nBack to [[Hub]].", kind="note")
    return owner, target, hub, citing


@pytest.mark.django_db
def test_rest_the_tool_the_resource_and_the_page_say_the_same_links():
    owner, target, hub, citing = _world()
    key, _ = new_key(owner)
    rest = data(Caller(DjangoClient(), key).get(f"/notes/{hub.id}"))
    assert rest["links"] == [
        {"target": "Target", "heading": "Costs", "label": "costs", "form": "wiki",
         "noteId": str(target.id), "title": "Target"},
        {"target": "Ghost", "form": "wiki"}]
    assert rest["backlinks"] == [{"noteId": str(citing.id), "title": "Notes on hub",
                                  "context": "Notes on hub Back to Hub."}]
    for answer in (handshake(key, "tools/call", {"name": "get_note",
                                                 "arguments": {"noteId": str(hub.id)}}),
                   modern(key, "tools/call", {"name": "get_note",
                                              "arguments": {"noteId": str(hub.id)}})):
        result = answer.json()["result"]
        record = result["structuredContent"]["record"]
        assert (record["links"], record["backlinks"]) == (rest["links"], rest["backlinks"])
        said = json.loads(result["content"][0]["text"])["record"]
        assert (said["links"], said["backlinks"]) == (rest["links"], rest["backlinks"])
    resource = modern(key, "resources/read", {"uri": f"note://{hub.id}"})
    [contents] = resource.json()["result"]["contents"]
    assert (f"- Target#Costs → note:{target.id} (Target)\n- Ghost → no note (unresolved)\n"
            in contents["text"])
    assert f"Linked from:\n- note:{citing.id} (Notes on hub): Notes on hub Back to Hub.\n" \
        in contents["text"]
    web = DjangoClient()
    web.force_login(Account.objects.get(id=owner.account_id))
    page = web.get(f"/notes/{hub.id}/").content.decode()
    assert f'href="/notes/{target.id}/#h-costs" class="wikilink"' in page
    assert 'href="/notes/new?title=Ghost" class="wikilink missing"' in page
    assert f'<a href="/notes/{citing.id}/">Notes on hub</a>' in page


@pytest.mark.slow
def test_the_sdk_client_reads_links_and_backlinks(site_url, committed):
    owner, target, hub, citing = _world()
    key, _ = new_key(owner)

    async def read():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
        async with http, Client(streamable_http_client(f"{site_url}/mcp",
                                                       http_client=http)) as client:
            return await client.call_tool("get_note", {"noteId": str(target.id)})

    result = asyncio.run(read())
    record = result.structured_content["record"]
    assert record["links"] == []
    assert record["backlinks"] == [{"noteId": str(hub.id), "title": "Hub",
                                    "context": "Hub See costs and Ghost."}]
