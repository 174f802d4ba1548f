"""The note page: edit guarded by the version (a stale edit keeps the draft and shows
the newer text), archive/restore, delete with confirmation, restore a revision. The
editor, its preview and task-list boxes: tests/notebooks/test_editor.py."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from grove.models import Account
from notebooks import services
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


def edit(web, note_id, content, version, kind="fact"):
    return web.post(f"/notes/{note_id}/edit", {
        "operation_id": str(uuid.uuid4()), "expected_version": version, "content": content,
        "kind": kind})


def test_edit_saves_a_new_version(owner, web):
    note = factories.note(owner, "first")
    response = edit(web, note.id, "second **bold**", 1, kind="decision")
    assert response.status_code == 302 and response["Location"] == f"/notes/{note.id}/"
    page = web.get(f"/notes/{note.id}/").content.decode()
    assert "<strong>bold</strong>" in page and 'data-version="2"' in page
    assert factories.note_row(owner, note.id).kind == "decision"


def test_a_stale_edit_is_a_conflict_that_loses_nothing(owner, web):
    note = factories.note(owner, "original")
    services.note_update(actor=owner, operation_id=op(), note_id=note.id,
                         content="changed in another tab")
    stale = edit(web, note.id, "my careful draft", 1)
    assert stale.status_code == 409
    page = stale.content.decode()
    assert "changed in another tab" in page  # the newer text
    assert "my careful draft" in page  # the draft, kept in the form
    assert 'name="expected_version" value="2"' in page  # saving again is a knowing overwrite
    assert factories.note_row(owner, note.id).content == "changed in another tab"
    again = edit(web, note.id, "my careful draft", 2)
    assert again.status_code == 302
    assert factories.note_row(owner, note.id).content == "my careful draft"


def test_archive_restore_and_delete_with_confirmation(owner, web):
    note = factories.note(owner, "short-lived")
    assert web.post(f"/notes/{note.id}/archive").status_code == 302
    assert factories.note_row(owner, note.id).status == "archived"
    assert "Restore</button>" in web.get(f"/notes/{note.id}/").content.decode()
    assert web.post(f"/notes/{note.id}/restore").status_code == 302
    assert factories.note_row(owner, note.id).status == "active"
    unconfirmed = web.post(f"/notes/{note.id}/delete")
    assert unconfirmed.status_code == 400
    assert factories.note_row(owner, note.id).status == "active"
    assert web.post(f"/notes/{note.id}/delete", {"confirm": "on"}).status_code == 302
    assert factories.note_row(owner, note.id).status == "deleted"
    assert web.get(f"/notes/{note.id}/").status_code == 404
    assert web.post(f"/notes/{note.id}/frobnicate").status_code == 404


def test_restore_an_old_revision(owner, web):
    note = factories.note(owner, "version one")
    services.note_update(actor=owner, operation_id=op(), note_id=note.id, content="version two")
    page = web.get(f"/notes/{note.id}/").content.decode()
    assert "Restore this revision" in page
    assert web.post(f"/notes/{note.id}/revisions/1/restore").status_code == 302
    row = factories.note_row(owner, note.id)
    assert (row.content, row.version) == ("version one", 3)


def test_strangers_get_404_for_every_action(owner):
    note = factories.note(owner, "mine")
    stranger = Client()
    stranger.force_login(Account.objects.get(id=factories.owner().account_id))
    assert stranger.get(f"/notes/{note.id}/").status_code == 404
    assert edit(stranger, note.id, "hijacked", 1).status_code == 404
    for action in ("archive", "restore"):
        assert stranger.post(f"/notes/{note.id}/{action}").status_code == 404
    assert stranger.post(f"/notes/{note.id}/delete", {"confirm": "on"}).status_code == 404
    assert stranger.post(f"/notes/{note.id}/revisions/1/restore").status_code == 404
    row = factories.note_row(owner, note.id)
    assert (row.content, row.status, row.version) == ("mine", "active", 1)
    assert Client().get(f"/notes/{note.id}/").status_code == 302  # anonymous → sign in


def test_the_note_page_costs_the_same_queries_however_long_its_history(owner, web):
    """Pinned: the page reads the note, its revisions and its share link in one selector
    call, so more revisions (or notebooks in the sidebar) never mean more queries — nor
    do the editor, the toolbar's panels or a task list's boxes to tick."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries(url):
        with CaptureQueriesContext(connection) as captured:
            assert web.get(url).status_code == 200
        return len(captured.captured_queries)

    short = factories.note(owner, "short history")
    long = factories.note(owner, "long history")
    for n in range(5):
        services.note_update(actor=owner, operation_id=op(), note_id=long.id,
                             content=f"long history, take {n}\n\n" + "- [ ] a box\n" * n)
    factories.notebook(owner, "Work")
    factories.notebook(owner, "Home")
    queries(f"/notes/{short.id}/")  # warm: what a first request sets up is not counted
    # The session and the account, then two tenant transactions: the page's one read
    # (the note, its history, its share link, whether it is declared ground truth, and
    # its links both ways and its neighbourhood: three more) and the sidebar's notebooks
    # (with their note counts, one grouped query, and the Pinned and tag counts, one
    # more).
    assert queries(f"/notes/{short.id}/") == queries(f"/notes/{long.id}/") == 22
    assert queries(f"/notes/{long.id}/?v=2") == 22  # an older version: the same read


# -- a note's title (issue 36 item 3.1): one rule, and the page shows it as the title ---------

UNMARKED = "**Staging** checklist\nrun migrations\ndeploy web\n\nThen tell the team."


def test_a_title_written_without_a_hash_is_the_pages_heading(owner, web):
    """The first line is the note's title on its page (and in an older version of it),
    not the start of a run-on paragraph; the lines under it stay lines."""
    note = factories.note(owner, UNMARKED)
    services.note_update(actor=owner, operation_id=op(), note_id=note.id,
                         content=UNMARKED + "\n\nAnd the on-call.")
    for path in (f"/notes/{note.id}/", f"/notes/{note.id}/?v=1"):
        page = web.get(path).content.decode()
        content = page.split('<div class="content markdown">', 1)[1].split("</div>", 1)[0]
        assert content.startswith('<h1 id="h-staging-checklist"><strong>Staging</strong> '
                                  "checklist</h1>"), content
        assert "<p>run migrations<br>\ndeploy web</p>" in content
        assert "<p>Then tell the team.</p>" in content
    # A title written as a heading is unchanged, and so is a note that opens with a list.
    heading = factories.note(owner, "# Oven\nSet it low.")
    page = web.get(f"/notes/{heading.id}/").content.decode()
    assert "<h1>Oven</h1>\n<p>Set it low.</p>" in page
    listed = factories.note(owner, "- eggs\n- milk")
    page = web.get(f"/notes/{listed.id}/").content.decode()
    assert "<ul>\n<li>eggs</li>\n<li>milk</li>\n</ul>" in page


def test_the_preview_shows_the_title_as_the_page_does(owner, web):
    response = web.post("/notes/preview", {"title": "Staging checklist",
                                           "content": "run migrations\ndeploy web"})
    assert response.status_code == 200
    assert "<h1>Staging checklist</h1>\n<p>run migrations<br>\ndeploy web</p>" \
        in response.content.decode()


def test_one_title_everywhere(owner, web):
    """The library, the note page (its heading and the tab), the share page, the shares
    list, the brief, MCP's resource list and the export's file name all name a note by
    the same rule (`grove.interfaces.rendering.note_title`)."""
    import io
    import re
    import zipfile

    from notebooks.mcp_context import RESOURCES
    from notebooks.selectors.brief import brief_get
    from sharing import services as sharing

    note = factories.note(owner, UNMARKED, pinned=True)
    title = "Staging checklist"
    library = web.get("/").content.decode()
    assert re.search(rf'class="title"[^>]*>\s*{title}\s*<', library)
    page = web.get(f"/notes/{note.id}/").content.decode()
    assert f"<title>{title} · Grove</title>" in page
    share, _ = sharing.share_create(actor=owner, note_id=note.id)
    assert share.title == title
    public = Client().get(f"/public/shares/{share.token}").content.decode()
    assert f"<title>{title}</title>" in public \
        and '<h1 id="h-staging-checklist"><strong>Staging</strong> checklist' in public
    assert f"by the owner: {title}\n" in brief_get(actor=owner).markdown
    resources, _ = RESOURCES.list_page(owner, None)
    assert title in [r.title for r in resources if r.uri == f"note://{note.id}"]
    response = web.get("/v1/export/markdown")
    names = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))).namelist()
    assert f"{title}.md" in names


# -- words for people (issue 36 item 3.9) ------------------------------------------------------

def test_a_note_changed_a_moment_ago_was_updated_just_now(owner, web):
    from datetime import timedelta

    from django.utils import timezone

    from notebooks.models import Note

    fresh = factories.note(owner, "Fresh")
    older = factories.note(owner, "Older")
    with factories.tenant(owner):
        Note.objects.filter(id=older.id).update(
            updated_at=timezone.now() - timedelta(hours=3, minutes=5))
    page = web.get("/").content.decode().replace("\xa0", " ")  # timesince's spaces
    row = page.split(f'id="note-{fresh.id}"', 1)[1].split("</li>", 1)[0]
    assert "updated just now" in row and "0 minutes" not in row
    row = page.split(f'id="note-{older.id}"', 1)[1].split("</li>", 1)[0]
    assert "updated 3 hours, 5 minutes ago" in row


def test_history_says_what_each_change_did_in_words(owner, web):
    note = factories.note(owner, "First words")
    services.note_update(actor=owner, operation_id=op(), note_id=note.id,
                         content="Second words")
    services.note_restore_revision(actor=owner, operation_id=op(), note_id=note.id,
                                   revision=1)
    page = web.get(f"/notes/{note.id}/").content.decode()
    history = page.split('id="history"', 1)[1].split("</section>", 1)[0]
    words = [w for w in ("Created", "Edited", "Restored from an earlier version")
             if f">{w}</span>" in history]
    assert words == ["Created", "Edited", "Restored from an earlier version"]
    for raw in ("> · create", " · update ·", "restore_revision ·"):
        assert raw not in history
    diff = web.get(f"/notes/{note.id}/diff?a=1&b=2", HTTP_HX_REQUEST="true").content.decode()
    assert "Changes from v1 (created) to v2 (edited)" in diff


def test_an_older_version_lists_its_own_facts(owner, web):
    """The facts under an older version are that version's, named as such — not the
    current note's under an old text."""
    garden = factories.notebook(owner, "Garden")
    note = factories.note(owner, "Water twice a week", kind="fact", tags=["summer"])
    services.note_update(actor=owner, operation_id=op(), note_id=note.id,
                         content="Water every day", kind="decision", tags=["july"])
    services.note_move(actor=owner, operation_id=op(), note_ids=[note.id],
                       notebook_id=garden.id)
    page = web.get(f"/notes/{note.id}/?v=1").content.decode()
    facts = page.split('<dl class="facts"', 1)[1].split("</dl>", 1)[0]
    assert 'aria-label="Version 1"' in facts
    assert "1 of 3 — this page shows version 1" in facts and "the current one" in facts
    assert "<dd>fact</dd>" in facts and "<dd>Personal</dd>" in facts
    assert "<dd>summer</dd>" in facts and "july" not in facts and "Garden" not in facts
    assert f"note:{note.id}@1" in facts and "current version" not in facts
    head = page.split('<header class="note-head">', 1)[1].split("</header>", 1)[0]
    assert '<span class="kind">fact</span> · Personal' in head
    current = web.get(f"/notes/{note.id}/").content.decode()
    facts = current.split('<dl class="facts"', 1)[1].split("</dl>", 1)[0]
    assert "<dd>Garden</dd>" in facts and "july" in facts and f"note:{note.id}@3" in facts


def test_a_long_notes_page_does_not_carry_every_revision_whole(owner, web):
    """History lists a long note's revisions without their texts (each is read or
    compared on its own), so eight saves of a 150 KB note are not a 1.7 MB page; a short
    revision's text is still there to unfold."""
    text = "# Field manual\n\n" + "\n\n".join(
        f"## Section {i}\n\n" + "Moraine samples stay cold. " * 70 for i in range(80))
    note = factories.note(owner, text, kind="note")
    for version in range(1, 8):
        services.note_update(actor=owner, operation_id=op(), note_id=note.id,
                             content=text + f"\n\nEdit {version}.", expected_version=version)
    page = web.get(f"/notes/{note.id}/").content.decode()
    # The text, its editor's copy and its preview: three times, not eleven.
    assert len(text) > 150_000 and len(page) < 4 * len(text)
    assert page.count("characters: read it, or compare it above") == 8
    short = factories.note(owner, "Leeks overwinter.", kind="note")
    assert "<summary>Text</summary><pre>Leeks overwinter.</pre>" in \
        web.get(f"/notes/{short.id}/").content.decode()
