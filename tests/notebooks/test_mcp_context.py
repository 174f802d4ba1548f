"""The notebooks app's MCP resources and prompts (notebooks/mcp_context.py), called as
`/mcp` calls them: what a URI reads, that grants apply exactly as to the tools, that a
versioned URI is that exact revision, that listing pages within the grant, and what the
prompts render. (The transport — both protocol eras, the SDK client, the Inspector — is
tested in tests/mcp.)"""

from __future__ import annotations

import uuid

import pytest

from grove.kernel.errors import Forbidden, Invalid, NotFound
from notebooks import services
from notebooks.mcp_context import PROMPTS, RESOURCES
from notebooks.selectors.resources import RESOURCE_PAGE
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db

PROMPT = {p.name: p for p in PROMPTS}


@pytest.fixture
def owner():
    return factories.owner("alice")


def _text(actor, uri: str) -> str:
    [content] = RESOURCES.read(actor, uri)
    assert content.uri == uri and content.mime_type == "text/markdown"
    return content.text


def test_a_note_resource_and_its_exact_revisions(owner):
    garden = factories.notebook(owner, "Garden")
    note = factories.note(owner, "Water twice a week.", notebook_id=garden.id)
    services.note_update(actor=owner, operation_id=op(), note_id=note.id,
                         content="Water every day in July.")
    now = _text(owner, f"note://{note.id}")
    assert now.startswith(f"note:{note.id}@2 — fact, Garden, ")
    assert "Water every day in July." in now
    first = _text(owner, f"note://{note.id}@1")
    assert first.startswith(f"note:{note.id}@1 — fact, Garden, ")
    assert "Water twice a week." in first and "July" not in first
    with pytest.raises(NotFound):
        RESOURCES.read(owner, f"note://{note.id}@3")


def test_a_foreign_or_ungranted_uri_is_the_same_not_found_as_an_unknown_one(owner):
    garden = factories.notebook(owner, "Garden")
    diary = factories.notebook(owner, "Diary")
    secret = factories.note(owner, "Diary secret.", notebook_id=diary.id)
    stranger = factories.owner()
    theirs = factories.note(stranger, "Another account's note.")
    their_book = factories.notebook(stranger, "Theirs")
    agent = factories.connection(owner, notebooks=[garden.id])
    for uri in (f"note://{secret.id}", f"note://{secret.id}@1", f"note://{theirs.id}",
                f"note://{uuid.uuid4()}", f"notebook://{diary.id}",
                f"notebook://{their_book.id}", f"notebook://{uuid.uuid4()}",
                f"brief://{diary.id}", f"brief://{their_book.id}", "note://not-an-id"):
        with pytest.raises(NotFound):
            RESOURCES.read(agent, uri)
    # Personal is not granted: said plainly (it always exists), as the tools say it.
    with pytest.raises(Forbidden) as personal:
        RESOURCES.read(agent, "brief://personal")
    assert personal.value.code == "personal_not_granted"
    assert RESOURCES.read(agent, "https://example.com/") is None  # not this provider's


def test_a_notebook_resource_lists_its_live_notes(owner):
    garden = factories.notebook(owner, "Garden")
    kept = factories.note(owner, "Compost weekly.\nMore detail.", notebook_id=garden.id)
    gone = factories.note(owner, "Archived idea.", notebook_id=garden.id)
    services.note_archive(actor=owner, operation_id=op(), items=[str(gone.id)])
    factories.note(owner, "Elsewhere.")
    text = _text(owner, f"notebook://{garden.id}")
    assert text.splitlines()[0] == f"# Garden (notebook:{garden.id}): 1 live notes, newest first"
    assert f"- {kept.versioned_id} fact, " in text and "Compost weekly." in text
    assert "Archived idea." not in text and "Elsewhere." not in text


def test_a_brief_resource_is_the_brief(owner):
    garden = factories.notebook(owner, "Garden")
    factories.note(owner, "Mulch in autumn.", notebook_id=garden.id)
    from notebooks.selectors import brief_get

    assert _text(owner, f"brief://{garden.id}") == brief_get(actor=owner,
                                                            notebook_id=garden.id).markdown
    assert "Mulch in autumn." in _text(owner, "brief://all")
    assert "Mulch in autumn." not in _text(owner, "brief://personal")


def test_listing_pages_within_the_grant(owner):
    garden = factories.notebook(owner, "Garden")
    diary = factories.notebook(owner, "Diary")
    for i in range(RESOURCE_PAGE + 5):
        factories.note(owner, f"Garden note {i}.", notebook_id=garden.id)
    factories.note(owner, "Diary note.", notebook_id=diary.id)
    agent = factories.connection(owner, notebooks=[garden.id])
    first, cursor = RESOURCES.list_page(agent, None)
    uris = [r.uri for r in first]
    assert uris[:3] == ["brief://all", f"brief://{garden.id}", f"notebook://{garden.id}"]
    assert cursor is not None
    second, after = RESOURCES.list_page(agent, cursor)
    assert after is None
    notes = [u for u in uris + [r.uri for r in second] if u.startswith("note://")]
    assert len(notes) == len(set(notes)) == RESOURCE_PAGE + 5
    everything = " ".join(uris + [r.uri for r in second])
    assert str(diary.id) not in everything and "brief://personal" not in everything
    for name in (r.title for r in first + second):
        assert "Diary" not in name
    owner_page, _ = RESOURCES.list_page(owner, None)
    assert "brief://personal" in [r.uri for r in owner_page]
    with pytest.raises(Invalid):
        RESOURCES.list_page(agent, cursor[:-3] + "abc")
    with pytest.raises(Invalid):  # bound to the caller
        RESOURCES.list_page(owner, cursor)


def test_the_prompts_render(owner):
    garden = factories.notebook(owner, "Garden")
    factories.note(owner, "Beds 3 and 4 need compost.", kind="handoff", task_id="beds",
                   notebook_id=garden.id)
    description, [message] = PROMPT["load_my_context"].render(
        owner, {"notebookId": str(garden.id), "timeZone": "Europe/Berlin"})
    assert message.role == "user" and "(Europe/Berlin)" in message.text
    assert "Beds 3 and 4 need compost." in message.text
    _, [handoff] = PROMPT["save_handoff"].render(owner, {"taskId": "beds",
                                                         "notebookId": str(garden.id)})
    assert '"taskId": "beds"' in handoff.text and "Beds 3 and 4 need compost." in handoff.text
    assert "`remember`" in handoff.text
    _, [fresh] = PROMPT["save_handoff"].render(owner, {"taskId": "new-task"})
    assert "live handoff now" not in fresh.text
    _, [ending] = PROMPT["end_of_session"].render(owner, {})
    assert "`update_memory`" in ending.text and "`recall`" in ending.text
    with pytest.raises(Invalid):
        PROMPT["save_handoff"].render(owner, {})
    with pytest.raises(Invalid):
        PROMPT["load_my_context"].render(owner, {"notebookId": "not-a-place"})
    agent = factories.connection(owner, notebooks=[])
    with pytest.raises(NotFound):
        PROMPT["load_my_context"].render(agent, {"notebookId": str(garden.id)})
    with pytest.raises(NotFound):
        PROMPT["save_handoff"].render(agent, {"taskId": "beds",
                                              "notebookId": str(garden.id)})


def test_the_interface_reads_through_selectors():
    """The MCP resources and prompts module parses, calls one selector and shapes: it opens
    no tenant transaction, pages nothing and queries no model itself (the reads live in
    `notebooks.selectors.resources`); the transport signs no cursor of its own."""
    import ast
    from pathlib import Path

    import grove.interfaces.mcp_resources
    import notebooks.mcp_context

    for module, refused in ((notebooks.mcp_context, {"grove.kernel.tenancy",
                                                      "grove.kernel.paging",
                                                      "notebooks.selectors.access"}),
                            (grove.interfaces.mcp_resources, {"django.core.signing"})):
        tree = ast.parse(Path(module.__file__).read_text())
        imported = {node.module for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom)} | {
            alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
            for alias in node.names}
        assert not imported & refused, (module.__name__, imported & refused)
        assert ".objects." not in Path(module.__file__).read_text(), module.__name__
