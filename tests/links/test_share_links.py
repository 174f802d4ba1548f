"""Links on public share pages (issue 38 item 6): a link to a note inside the share's
scope works for the visitor; any other link is plain text and the page carries no id or
title of a note outside the share — whatever the link's form."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.test import Client

from sharing import services as sharing
from tests import factories

pytestmark = pytest.mark.django_db

TEXT = ("# Hub\n\nInside: [[Inside note#Part two]] and [in md](Inside%20note.md).\n"
        "Outside: [[c-alias|elsewhere]], [[Outside/c-alias]], "
        "[md out](../Outside/c-alias.md).\nMissing: [[Nobody wrote this]].")


def visit(url: str) -> str:
    response = Client().get(urlsplit(url).path)
    assert response.status_code == 200
    return response.content.decode()


def test_a_notebook_share_links_inside_itself_and_names_nothing_outside():
    owner = factories.owner()
    shared = factories.notebook(owner, "Shared")
    outside = factories.notebook(owner, "Outside")
    inside = factories.note(owner, "# Inside note\n\n## Part two\n\nIn.", kind="note",
                            notebook_id=shared.id)
    secret = factories.note(owner, "---\naliases: [c-alias]\n---\n# Classified Title\n\nNo.",
                            kind="note", notebook_id=outside.id)
    hub = factories.note(owner, TEXT, kind="note", notebook_id=shared.id)
    share, _ = sharing.share_create(actor=owner, notebook_id=shared.id)
    page = visit(f"{share.url}/notes/{hub.id}")
    token = urlsplit(share.url).path.rsplit("/", 1)[-1]
    inside_page = f"/public/shares/{token}/notes/{inside.id}"
    assert f'href="{inside_page}#h-part-two"' in page
    assert f'href="{inside_page}"' in page
    assert 'id="h-part-two"' in visit(f"{share.url}/notes/{inside.id}")
    for word in (str(secret.id), "Classified Title", "\"/notes/"):
        assert word not in page, word
    assert "/public/shares/" in page and 'href="../Outside' not in page
    assert "elsewhere" in page and "Nobody wrote this" in page
    hub_body = page[page.index("<h1"):page.index("Nobody wrote this")]
    assert hub_body.count('class="wikilink"') == 2 and "missing" not in hub_body


def test_a_note_share_links_to_no_other_note():
    owner = factories.owner()
    other = factories.note(owner, "# Inside note\n\nNot shared.", kind="note")
    hub = factories.note(owner, TEXT, kind="note")
    share, _ = sharing.share_create(actor=owner, note_id=hub.id)
    page = visit(share.url)
    assert str(other.id) not in page and 'class="wikilink' not in page
    assert "Inside note &gt; Part two" in page  # the link's words, as text
