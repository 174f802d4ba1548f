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
    # (the note, its history, its share link and whether it is declared ground truth)
    # and the sidebar's notebooks (with their note counts, one grouped query, and the
    # Pinned and tag counts, one more).
    assert queries(f"/notes/{short.id}/") == queries(f"/notes/{long.id}/") == 19
    assert queries(f"/notes/{long.id}/?v=2") == 19  # an older version: the same read
