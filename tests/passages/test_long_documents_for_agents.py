"""What an agent reads of a long document (issue 37 item 4): a declared 80,000-character
spec is represented by its manifest and the passages that matter — under budget — in
the brief (with `truth: full`), in the `truth` tool, in query-free recall (the profile)
and in recall that finds it; a pinned long document in the brief is its digest too.
Through the services, and once through the official MCP SDK client against a live
Grove."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from notebooks import services
from notebooks.selectors.brief import brief_get
from notebooks.selectors.passage_rank import DIGEST_MAX_CHARS
from notebooks.selectors.recall import recall
from notebooks.selectors.truth import truth_for_agent
from passages.rules import pieces
from tests import factories
from tests.api.conftest import new_key
from tests.passages.test_sync import document

CLUE = "The kingfisher hunts from the old pier at dawn."


def spec_of(owner):
    """An 80,000-character spec declared as the ground truth of the notebook it is in."""
    text = document(44).replace("## Section 31\n\n", f"## Section 31\n\n{CLUE} ")
    assert 80_000 <= len(text) <= 90_000
    specs = factories.notebook(owner, "Specs")
    spec = factories.note(owner, text, kind="note", notebook_id=specs.id)
    services.truth_declare(actor=owner, notebook_id=specs.id, note_ids=[spec.id])
    return spec, text


@pytest.mark.django_db
def test_the_brief_gives_a_declared_spec_as_its_manifest_and_the_passages_that_matter():
    owner = factories.owner()
    spec, text = spec_of(owner)
    of = len(pieces("note", text))
    focused = brief_get(actor=owner, notebook_id=spec.notebook_id, truth="full",
                        focus="kingfisher pier")
    assert focused.meta.tokens <= focused.meta.budget_tokens
    markdown = focused.markdown
    assert f"a document in {of} passages" in markdown
    assert f"A document of {len(text):,} characters in {of} passages" in markdown
    assert "those that match the focus 'kingfisher pier'" in markdown
    assert CLUE in markdown and f"note:{spec.id}@1#" in markdown
    assert len(markdown) < DIGEST_MAX_CHARS + 6_000  # the digest, never the 80,000
    opening = brief_get(actor=owner, notebook_id=spec.notebook_id, truth="full").markdown
    assert "its opening" in opening and CLUE not in opening
    assert f"[note:{spec.id}@1#1 — Field manual]" in opening
    manifest = brief_get(actor=owner, notebook_id=spec.notebook_id).markdown  # manifest
    assert f"a document in {of} passages" in manifest and "A document of" not in manifest


@pytest.mark.django_db
def test_the_truth_tool_and_the_profile_give_the_spec_under_budget():
    owner = factories.owner()
    spec, text = spec_of(owner)
    told = truth_for_agent(actor=owner, notebook_id=spec.notebook_id, full=True)
    [declared] = told.notes
    assert declared.content is not None and len(declared.content) <= DIGEST_MAX_CHARS + 400
    assert declared.content.startswith(f"[A document of {len(text):,} characters")
    # Query-free recall: the declared spec answers with its opening passage.
    profile = recall(actor=owner, place=spec.notebook_id, max_chars=3000)
    [item] = [i for i in profile.data if i.note.id == spec.id]
    assert item.passage is not None and item.passage.id == f"note:{spec.id}@1#1"
    assert len(item.note.content) <= 1200 and text.startswith(item.note.content)
    # Recall with a query: the passage that holds the answer.
    found = recall(actor=owner, place=spec.notebook_id, query="kingfisher pier")
    [hit] = [i for i in found.data if i.note.id == spec.id]
    assert CLUE in hit.note.content and len(hit.note.content) <= 1200


@pytest.mark.django_db
def test_a_pinned_long_document_in_the_brief_is_its_digest():
    owner = factories.owner()
    text = document(30)
    factories.note(owner, text, kind="note", pinned=True)
    brief = brief_get(actor=owner, format="json")
    [note] = [n for n in brief.facts if n.pinned]
    assert note.content.startswith(f"[A document of {len(text):,} characters")
    assert len(note.content) < DIGEST_MAX_CHARS + 400
    assert brief.meta.tokens <= brief.meta.budget_tokens


@pytest.mark.slow
def test_an_agent_reads_the_spec_through_the_sdk_client(site_url, committed):
    owner = factories.owner()
    spec, _ = spec_of(owner)
    key, _ = new_key(owner)

    async def session():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
        async with http, Client(streamable_http_client(f"{site_url}/mcp",
                                                       http_client=http)) as client:
            place = f"notebook:{spec.notebook_id}"
            brief = await client.call_tool("brief", {"focus": "kingfisher pier",
                                                     "truth": "full", "notebookId": place})
            truth = await client.call_tool("truth", {"full": True, "notebookId": place})
            return brief, truth

    brief, truth = asyncio.run(session())
    text = brief.content[0].text
    assert CLUE in text and f"note:{spec.id}@1#" in text and len(text) < 20_000
    [declared] = truth.structured_content["notes"]
    assert declared["content"].startswith("[A document of")
