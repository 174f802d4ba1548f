"""The library's bulk bar over plain HTTP (no JavaScript): the boxes and the bar on the
page, what a POST does, the message and its Undo, and bad input that gets a 4xx with a
stable code and changes nothing."""

from __future__ import annotations

import html
import re
import uuid

import pytest
from django.test import Client

from notebooks import services
from notebooks.rules import BATCH_MAX
from tests import factories
from tests.factories import op
from tests.notebooks.test_trash_views import undo_form

pytestmark = pytest.mark.django_db


def ticked(*notes) -> list[str]:
    return [f"{note.id}@{note.version}" for note in notes]


def bulk(web: Client, action: str, notes: list[str], **fields):
    return web.post("/notes/bulk", {"operation_id": str(uuid.uuid4()), "action": action,
                                    "note": notes, **fields})


def post_undo(web: Client, page: str):
    """Press the flash message's Undo, as a browser would (its values unescaped)."""
    form = {name: html.unescape(value) for name, value in undo_form(page).items()}
    return web.post(form.pop("action"), form)


def flashes(page: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", "", text)).strip()
            for text in re.findall(r'<div class="flash [a-z]+">(.*?)</div>', page, re.S)]


def test_each_row_has_a_box_of_the_bulk_form_with_its_version(owner, web):
    work = factories.notebook(owner, "Work")
    note = factories.note(owner, "Tick me")
    page = web.get("/").content.decode()
    assert (f'<input type="checkbox" class="pick" name="note" value="{note.id}@1" '
            f'form="bulk"') in page
    assert '<form id="bulk" class="bulk" method="post" action="/notes/bulk"' in page
    assert f'<option value="{work.id}">Work</option>' in page
    assert 'value="archive"' in page and 'value="restore"' not in page
    archived = web.get("/", {"status": "archived"}).content.decode()
    assert 'id="bulk"' not in archived  # nothing listed: no bar
    services.note_archive(actor=owner, operation_id=op(), items=[note.id])
    archived = web.get("/", {"status": "archived"}).content.decode()
    assert 'value="restore"' in archived and 'value="archive"' not in archived
    partial = web.get("/", {"q": "tick", "status": "archived"},
                      headers={"HX-Request": "true"}).content.decode()
    assert 'id="bulk"' in partial
    assert 'name="next" value="/?q=tick&amp;status=archived"' in partial


def test_a_bulk_move_goes_back_to_the_same_library_page_with_undo(owner, web):
    work = factories.notebook(owner, "Work")
    notes = [factories.note(owner, f"Note {n}") for n in range(7)]
    response = bulk(web, "move", ticked(*notes), destination=str(work.id),
                    next="/?q=note&sort=updated_desc")
    assert response.status_code == 302
    assert response["Location"] == "/?q=note&sort=updated_desc"
    page = web.get(response["Location"]).content.decode()
    assert flashes(page) == ["Moved 7 notes to Work. Undo"]
    assert all(factories.note_row(owner, n.id).notebook_id == work.id for n in notes)
    form = undo_form(page)
    assert form["action"] == "/notes/bulk/undo"
    assert form["next"] == "/?q=note&amp;sort=updated_desc"
    undone = post_undo(web, page)
    assert undone["Location"] == "/?q=note&sort=updated_desc"
    assert flashes(web.get(undone["Location"]).content.decode()) == [
        "Undone: 7 notes are back as they were."]
    assert all(factories.note_row(owner, n.id).notebook_id is None for n in notes)


def test_notes_changed_meanwhile_are_named_and_left_as_they_were(owner, web):
    notes = [factories.note(owner, f"Note {n}") for n in range(4)]
    seen = ticked(*notes)  # the versions the page showed
    for note in notes[:2]:
        services.note_update(actor=owner, operation_id=op(), note_id=note.id, content="new")
    response = bulk(web, "move", seen, destination="personal")
    page = web.get(response["Location"]).content.decode()
    assert flashes(page) == ["2 notes were in Personal already.",
                             "2 notes changed meanwhile and were left as they were."]
    response = bulk(web, "archive", seen)
    page = web.get(response["Location"]).content.decode()
    assert flashes(page) == ["Archived 2 notes. Undo",
                             "2 notes changed meanwhile and were left as they were."]
    assert [factories.note_row(owner, n.id).status for n in notes] == [
        "active", "active", "archived", "archived"]


def test_bulk_tag_and_delete_say_what_they_did_and_offer_undo(owner, web):
    a = factories.note(owner, "one")
    b = factories.note(owner, "two", tags=["idea"])
    page = web.get(bulk(web, "tag", ticked(a, b), tag="Idea")["Location"]).content.decode()
    assert flashes(page) == ["Tagged 1 note “Idea”. 1 note had it already. Undo"]
    assert factories.note_row(owner, a.id).tags == ["idea"]
    a, b = factories.note_row(owner, a.id), factories.note_row(owner, b.id)
    page = web.get(bulk(web, "delete", ticked(a, b))["Location"]).content.decode()
    assert flashes(page) == ["Deleted 2 notes. Undo · Recently deleted"]
    assert web.get(post_undo(web, page)["Location"]).status_code == 200
    assert factories.note_row(owner, a.id).status == "active"


def test_restore_in_the_archived_list(owner, web):
    note = factories.note(owner, "back")
    services.note_archive(actor=owner, operation_id=op(), items=[note.id])
    note = factories.note_row(owner, note.id)
    response = bulk(web, "restore", ticked(note), next="/?status=archived")
    page = web.get(response["Location"]).content.decode()
    assert flashes(page) == ["Restored 1 note."]  # no Undo for a restore
    assert factories.note_row(owner, note.id).status == "active"


@pytest.mark.parametrize(("fields", "code"), [
    ({"action": "move", "note": []}, "empty_batch"),
    ({"action": "move"}, "destination_required"),
    ({"action": "move", "destination": "elsewhere"}, "invalid_id"),
    ({"action": "tag"}, "tag_required"),
    ({"action": "tag", "tag": "no such tag!"}, "invalid_tags"),
    ({"action": "explode"}, "invalid_choice"),
    ({"action": "archive", "note": ["not-a-note@1"]}, "invalid_item"),
    ({"action": "archive", "note": ["00000000-0000-0000-0000-000000000001@x"]},
     "invalid_item"),
    ({"action": "archive", "note": ["00000000-0000-0000-0000-000000000001@0"]},
     "invalid_version"),
    ({"action": "archive", "operation_id": "nope"}, "invalid"),
])
def test_bad_input_is_a_400_with_a_code_and_changes_nothing(owner, web, fields, code):
    note = factories.note(owner, "unchanged")
    data = {"operation_id": str(uuid.uuid4()), "note": ticked(note), **fields}
    response = web.post("/notes/bulk", data)
    assert response.status_code == 400, response.content[:300]
    assert f'data-code="{code}"' in response.content.decode()
    assert factories.note_row(owner, note.id).version == 1


def test_more_than_a_batch_is_refused_before_anything_changes(owner, web):
    note = factories.note(owner, "unchanged")
    many = ticked(note) + [f"{uuid.uuid4()}@1" for _ in range(BATCH_MAX)]
    response = bulk(web, "archive", many)
    assert response.status_code == 400
    assert 'data-code="batch_too_large"' in response.content.decode()
    assert factories.note_row(owner, note.id).status == "active"


def test_a_foreign_or_missing_notebook_is_a_404_and_nothing_moves(owner, web):
    note = factories.note(owner, "stays")
    theirs = factories.notebook(factories.owner(), "Theirs")
    for place in (theirs.id, uuid.uuid4()):
        response = bulk(web, "move", ticked(note), destination=str(place))
        assert response.status_code == 404
    assert factories.note_row(owner, note.id).version == 1


def test_the_way_back_stays_in_the_library(owner, web):
    note = factories.note(owner, "x")
    for unsafe in ("https://evil.example/", "//evil.example/", "/settings/", "/\\evil"):
        response = bulk(web, "archive", ticked(factories.note_row(owner, note.id)),
                        next=unsafe)
        assert response["Location"] == "/", unsafe
        services.note_restore(actor=owner, operation_id=op(), items=[note.id])


def test_a_stranger_cannot_touch_the_notes_nor_undo_the_batch(owner, web):
    note = factories.note(owner, "mine")
    stranger = factories.owner()
    other = Client()
    from grove.models import Account
    other.force_login(Account.objects.get(id=stranger.account_id))
    response = bulk(other, "archive", ticked(note))
    page = other.get(response["Location"]).content.decode()
    assert flashes(page) == ["1 note was not found (deleted meanwhile?) and left out."]
    assert factories.note_row(owner, note.id).status == "active"
    batch = op()
    services.note_archive(actor=owner, operation_id=batch, items=[note.id])
    response = other.post("/notes/bulk/undo", {"operation_id": str(op()), "batch": str(batch)})
    assert response.status_code == 404
    assert factories.note_row(owner, note.id).status == "archived"


def test_undo_of_something_changed_since_says_so(owner, web):
    note = factories.note(owner, "x")
    page = web.get(bulk(web, "archive", ticked(note))["Location"]).content.decode()
    services.note_restore(actor=owner, operation_id=op(), items=[note.id])
    again = web.get(post_undo(web, page)["Location"]).content.decode()
    assert flashes(again) == [
        "Nothing was undone. 1 note changed meanwhile and was left as it was."]
    bad = web.post("/notes/bulk/undo", {"operation_id": "x", "batch": str(op())})
    assert bad.status_code == 400
    assert web.get("/notes/bulk").status_code == 405
