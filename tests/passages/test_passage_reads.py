"""A citation names a passage — `note:<uuid>@<version>#<position>` — and every reader
returns just that passage (issue 37; docs/api.md "Documents and passages"): REST's
`GET /v1/get/…`, the `get_note` tool (through the official MCP SDK client against a live
Grove) and the `note://` resource, field by field the same; a past version's passage is
that version's text; a passage the version does not have is the same 404 everywhere."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from django.test import Client as DjangoClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from notebooks import services
from passages.rules import pieces
from tests import factories
from tests.api.conftest import Caller, data, error, new_key
from tests.factories import op
from tests.mcp.helpers import error_of, handshake, modern
from tests.passages.test_sync import document


def _world():
    owner = factories.owner()
    text = document(12)
    note = factories.note(owner, text, kind="note")
    edited = text.replace("## Section 7\n\n", "## Section 7\n\nRevised opening. ")
    services.note_update(actor=owner, operation_id=op(), note_id=note.id, content=edited,
                         expected_version=1)
    key, _ = new_key(owner)
    return owner, note, text, edited, key


@pytest.mark.django_db
def test_a_passage_of_a_version_reads_the_same_over_rest_the_tool_and_the_resource():
    _, note, text, edited, key = _world()
    api = Caller(DjangoClient(), key)
    cut_now, cut_then = pieces("note", edited), pieces("note", text)
    section_7 = next(p for p in cut_now if p.headings[-1:] == ("Section 7",)
                     and "Revised opening." in p.text)
    cited = f"note:{note.id}@2#{section_7.position}"

    rest = data(api.get(f"/get/{cited.replace('#', '%23')}"))
    assert rest["content"] == section_7.text
    assert rest["passage"] == {"id": cited, "position": section_7.position,
                               "of": len(cut_now), "headings": list(section_7.headings)}
    assert (rest["kind"], rest["version"], rest["id"]) == ("note", 2, str(note.id))

    for answer in (handshake(key, "tools/call", {"name": "get_note",
                                                 "arguments": {"noteId": cited}}),
                   modern(key, "tools/call", {"name": "get_note",
                                              "arguments": {"noteId": cited}})):
        result = answer.json()["result"]
        structured = result["structuredContent"]
        assert structured["content"] == section_7.text
        # The tool's compact passage: the citation, how many, the trail (as REST's).
        assert structured["passage"] == {key: rest["passage"][key]
                                         for key in ("id", "of", "headings")}
        assert structured["record"]["content"] == rest["content"]
        assert structured["id"] == f"note:{note.id}@2"
        assert cited in result["content"][0]["text"]  # the text a model reads names it

    resource = modern(key, "resources/read", {"uri": f"note://{note.id}@2#{section_7.position}"})
    [contents] = resource.json()["result"]["contents"]
    assert section_7.text in contents["text"] and cited in contents["text"]

    # Version 1's passage of the same position is version 1's text.
    old = data(api.get(f"/get/note:{note.id}@1%23{section_7.position}"))
    assert old["content"] == cut_then[section_7.position - 1].text != section_7.text
    assert old["passage"]["id"] == f"note:{note.id}@1#{section_7.position}"


@pytest.mark.django_db
def test_a_passage_the_version_does_not_have_is_passage_not_found_everywhere():
    owner, note, _, edited, key = _world()
    fact = factories.note(owner, "Herons nest in the alders.", kind="fact")
    api = Caller(DjangoClient(), key)
    count = len(pieces("note", edited))
    missing = f"note:{note.id}@2#{count + 1}"
    body = error(api.get(f"/get/{missing.replace('#', '%23')}"), 404, "passage_not_found")
    assert body["details"]["passages"] == count
    tool = handshake(key, "tools/call", {"name": "get_note", "arguments": {"noteId": missing}})
    assert error_of(tool.json()["result"])["code"] == "passage_not_found"
    # A memory record is one passage: #1 is all of it, #2 is not there.
    whole = data(api.get(f"/get/note:{fact.id}@1%231"))
    assert whole["content"] == "Herons nest in the alders." and whole["passage"]["of"] == 1
    error(api.get(f"/get/note:{fact.id}@1%232"), 404, "passage_not_found")
    # Not a passage: refused by the id's form, never read.
    for bad in (f"note:{note.id}@2%230", f"note:{note.id}%231", f"note:{note.id}@2%23x"):
        assert api.get(f"/get/{bad}").status_code in (400, 422), bad
    # A passage of a note the key cannot see is the same 404 as no note at all.
    stranger, _ = new_key(factories.owner())
    hidden = Caller(DjangoClient(), stranger).get(f"/get/note:{note.id}@2%231")
    assert hidden.status_code == 404


@pytest.mark.slow
def test_the_sdk_client_cites_a_passage_from_recall_and_reads_it(site_url, committed):
    """What an agent does: recall finds the document, cites the passage; get_note with
    that citation returns the passage — through the official MCP SDK client."""
    owner = factories.owner()
    text = document(40).replace("## Section 33\n\n",
                                "## Section 33\n\nThe kingfisher hunts from the old pier. ")
    note = factories.note(owner, text, kind="note")
    from grove.kernel import jobs
    from notebooks.services.indexing import EMBED

    while jobs.run_batch(account_id=owner.account_id, kind=EMBED):
        pass
    key, _ = new_key(owner)

    async def steps(client):
        found = await client.call_tool("recall", {"query": "kingfisher pier"})
        cited = found.structured_content["data"][0]["passage"]["id"]
        read = await client.call_tool("get_note", {"noteId": cited})
        return found, cited, read

    async def session():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
        async with http, Client(streamable_http_client(f"{site_url}/mcp",
                                                       http_client=http)) as client:
            return await steps(client)

    found, cited, read = asyncio.run(session())
    top = found.structured_content["data"][0]
    assert top["id"] == f"note:{note.id}@1" and "kingfisher" in top["content"]
    assert top["passage"]["headings"] == ["Field manual", "Section 33"]
    assert "passage" in found.content[0].text  # the text a model reads names it too
    assert cited.startswith(f"note:{note.id}@1#")
    assert read.structured_content["content"] == top["content"]
    assert read.structured_content["passage"]["id"] == cited
