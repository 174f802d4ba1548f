"""The Recently deleted page and Undo in the library, over plain HTTP (no JavaScript):
what is offered, what a POST does, and bad input that gets a 4xx and changes nothing."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.db.models import F
from django.test import Client

from grove.models import Account
from notebooks import services
from notebooks.models import Note
from tests import factories
from tests.factories import op, tenant

pytestmark = pytest.mark.django_db


def follow(web: Client, response) -> str:
    assert response.status_code == 302, response.content[:500]
    return web.get(response["Location"]).content.decode()


def undo_form(page: str) -> dict[str, str]:
    """The Undo form of the flash message: where it posts and its hidden fields."""
    found = re.search(r'<form method="post" action="([^"]+)" class="inline undo">(.*?)</form>',
                      page, re.S)
    assert found, "no Undo offered"
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', found.group(2)))
    return {"action": found.group(1), **fields}


def post_undo(web: Client, page: str):
    form = undo_form(page)
    return web.post(form.pop("action"), form)


def test_the_page_lists_what_can_come_back_and_is_linked_from_the_sidebar(owner, web):
    garden = factories.notebook(owner, "Garden")
    factories.note(owner, "Figs need sun.", notebook_id=garden.id)
    note = factories.note(owner, "# Boiler\nThe code is 4711.")
    services.note_forget(actor=owner, operation_id=op(), items=[note.id])
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=garden.id)

    assert 'href="/trash/"' in web.get("/").content.decode()
    page = web.get("/trash/").content.decode()
    assert "Boiler" in page and "The code is 4711." in page
    assert "Garden" in page and "with 0 sub-notebooks and 1 note" in page
    assert f'action="/trash/notes/{note.id}/restore"' in page
    assert f'action="/trash/notebooks/{garden.id}/restore"' in page
    assert "Figs need sun." not in page  # it comes back with Garden


def test_restoring_from_the_page_opens_the_note_again(owner, web):
    note = factories.note(owner, "Back from the bin.")
    services.note_forget(actor=owner, operation_id=op(), items=[note.id])
    page = follow(web, web.post(f"/trash/notes/{note.id}/restore",
                                {"operation_id": str(uuid.uuid4()), "expected_version": 2}))
    assert "Restored." in page and "Back from the bin." in page
    assert factories.note_row(owner, note.id).status == "active"
    assert "Nothing deleted in the last 30 days." in web.get("/trash/").content.decode()


def test_restoring_a_notebook_from_the_page(owner, web):
    garden = factories.notebook(owner, "Garden")
    factories.note(owner, "Figs need sun.", notebook_id=garden.id)
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=garden.id)
    response = web.post(f"/trash/notebooks/{garden.id}/restore")
    assert response["Location"] == f"/?notebook={garden.id}"
    assert "Restored 1 notebook and 1 note." in follow(web, response)


def test_bad_input_is_a_4xx_that_changes_nothing(owner, web):
    note = factories.note(owner, "Deleted.")
    services.note_forget(actor=owner, operation_id=op(), items=[note.id])
    stranger = factories.owner()
    theirs = factories.note(stranger, "Theirs.")
    services.note_forget(actor=stranger, operation_id=op(), items=[theirs.id])
    their_book = factories.notebook(stranger, "Theirs")
    services.notebook_delete(actor=stranger, operation_id=op(), notebook_id=their_book.id)
    live = factories.note(owner, "Alive.")

    for path in (f"/trash/notes/{theirs.id}/restore", f"/trash/notes/{uuid.uuid4()}/restore",
                 f"/trash/notes/{live.id}/restore", "/trash/notes/not-a-uuid/restore",
                 f"/trash/notebooks/{their_book.id}/restore",
                 f"/trash/notebooks/{uuid.uuid4()}/restore"):
        assert web.post(path).status_code == 404, path
    for body in ({"operation_id": "nope"}, {"expected_version": "two"},
                 {"expected_version": "0"}):
        assert web.post(f"/trash/notes/{note.id}/restore", body).status_code == 400, body
    stale = web.post(f"/trash/notes/{note.id}/restore", {"expected_version": 1})
    assert stale.status_code == 409 and "nothing was undone" in stale.content.decode()
    assert web.get("/trash/?cursor=forged").status_code == 400
    assert web.get(f"/trash/notes/{note.id}/restore").status_code == 405
    assert factories.note_row(owner, note.id).status == "deleted"
    assert factories.note_row(stranger, theirs.id).status == "deleted"


def test_a_note_deleted_31_days_ago_is_not_offered_and_a_post_is_refused(owner, web):
    note = factories.note(owner, "Long gone.")
    services.note_forget(actor=owner, operation_id=op(), items=[note.id])
    with tenant(owner):
        Note.objects.filter(id=note.id).update(deleted_at=F("deleted_at") - timedelta(days=31))
    assert "Long gone." not in web.get("/trash/").content.decode()
    response = web.post(f"/trash/notes/{note.id}/restore")
    assert response.status_code == 410
    assert "can no longer be restored" in response.content.decode()
    assert factories.note_row(owner, note.id).status == "deleted"


def test_the_page_is_the_owners_alone(owner, web):
    assert Client().get("/trash/").status_code == 302  # to sign in


def test_the_page_makes_the_same_queries_for_more_rows(owner, web,
                                                       django_assert_max_num_queries):
    def delete_some(n):
        for i in range(n):
            nb = factories.notebook(owner, f"Book {uuid.uuid4()}")
            factories.note(owner, f"in book {i}", notebook_id=nb.id)
            services.notebook_delete(actor=owner, operation_id=op(), notebook_id=nb.id)
            note = factories.note(owner, f"note {i}")
            services.note_forget(actor=owner, operation_id=op(), items=[note.id])

    delete_some(2)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as few:
        assert web.get("/trash/").status_code == 200
    delete_some(6)
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = web.get("/trash/").content.decode()
    assert page.count("Restore</button>") == 16


# -- Undo ------------------------------------------------------------------------------------


def test_undo_an_archive(owner, web):
    note = factories.note(owner, "Shelve me.")
    page = follow(web, web.post(f"/notes/{note.id}/archive"))
    assert undo_form(page)["action"] == f"/notes/{note.id}/restore"
    assert "csrfmiddlewaretoken" in undo_form(page)
    page = follow(web, post_undo(web, page))
    assert "Restored." in page
    row = factories.note_row(owner, note.id)
    assert (row.status, row.version) == ("active", 3)


def test_undo_of_an_archive_refuses_a_note_changed_since(owner, web):
    note = factories.note(owner, "Shelve me.")
    page = follow(web, web.post(f"/notes/{note.id}/archive"))
    services.note_restore(actor=owner, operation_id=op(), items=[note.id])
    services.note_archive(actor=owner, operation_id=op(), items=[note.id])
    response = post_undo(web, page)
    assert response.status_code == 409 and "nothing was undone" in response.content.decode()
    assert factories.note_row(owner, note.id).status == "archived"


def test_undo_a_move(owner, web):
    garden = factories.notebook(owner, "Garden")
    note = factories.note(owner, "Figs.")
    page = follow(web, web.post(f"/notes/{note.id}/move", {
        "operation_id": str(uuid.uuid4()), "destination": str(garden.id), "origin": ""}))
    form = undo_form(page)
    assert (form["action"], form["destination"]) == (f"/notes/{note.id}/move", "")
    assert factories.note_row(owner, note.id).notebook_id == garden.id
    page = follow(web, post_undo(web, page))
    assert "Moved." in page
    assert factories.note_row(owner, note.id).notebook_id is None
    assert "Undo</button>" not in page  # an Undo is not undone in turn
    # The note page's form says where the note is, for the Undo of its move.
    page = web.get(f"/notes/{note.id}/").content.decode()
    assert re.search(r'name="origin" id="id_origin"', page)
    page = follow(web, web.post(f"/notes/{note.id}/move", {
        "operation_id": str(uuid.uuid4()), "destination": str(garden.id), "origin": ""}))
    page = follow(web, web.post(f"/notes/{note.id}/move", {
        "operation_id": str(uuid.uuid4()), "destination": str(garden.id),
        "origin": str(garden.id)}))
    assert "Undo</button>" not in page  # it did not move: nothing to undo


def test_undo_of_a_move_refuses_a_note_changed_since(owner, web):
    garden = factories.notebook(owner, "Garden")
    note = factories.note(owner, "Figs.")
    page = follow(web, web.post(f"/notes/{note.id}/move", {
        "operation_id": str(uuid.uuid4()), "destination": str(garden.id), "origin": ""}))
    services.note_update(actor=owner, operation_id=op(), note_id=note.id, content="Fig trees.")
    response = post_undo(web, page)
    assert response.status_code == 409 and "nothing was undone" in response.content.decode()
    assert factories.note_row(owner, note.id).notebook_id == garden.id


def test_undo_a_delete_and_find_recently_deleted(owner, web):
    note = factories.note(owner, "Oops.")
    page = follow(web, web.post(f"/notes/{note.id}/delete", {"confirm": "on"}))
    assert "Deleted." in page and '<a href="/trash/">Recently deleted</a>' in page
    assert undo_form(page)["action"] == f"/trash/notes/{note.id}/restore"
    page = follow(web, post_undo(web, page))
    assert "Restored." in page and "Oops." in page
    assert factories.note_row(owner, note.id).status == "active"


def test_undo_a_notebook_archive_and_delete(owner, web):
    garden = factories.notebook(owner, "Garden")
    factories.note(owner, "Figs.", notebook_id=garden.id)
    page = follow(web, web.post(f"/notebooks/{garden.id}/archive", {"confirm": "on"}))
    assert "Archived 1 notebook and 1 note." in page
    assert "Restored 1 notebook and 1 note." in follow(web, post_undo(web, page))
    page = follow(web, web.post(f"/notebooks/{garden.id}/delete", {"confirm": "on"}))
    assert undo_form(page)["action"] == f"/trash/notebooks/{garden.id}/restore"
    assert "Restored 1 notebook and 1 note." in follow(web, post_undo(web, page))


def test_undo_is_offered_once_and_a_forged_offer_is_ignored(owner, web):
    note = factories.note(owner, "Shelve me.")
    page = follow(web, web.post(f"/notes/{note.id}/archive"))
    assert "Undo" in page
    assert "Undo</button>" not in web.get(f"/notes/{note.id}/").content.decode()
    from notebooks.views.undo import Undo

    assert Undo.of("undo note-archive not-a-uuid 1 -") is None
    assert Undo.of("undo rm-rf " + str(note.id) + " 1 -") is None
    assert Undo.of("") is None


def test_a_stranger_cannot_undo(owner, web):
    note = factories.note(owner, "Shelve me.")
    page = follow(web, web.post(f"/notes/{note.id}/archive"))
    stranger = Client()
    stranger.force_login(Account.objects.get(id=factories.owner().account_id))
    form = undo_form(page)
    assert stranger.post(form.pop("action"), form).status_code == 404
    assert factories.note_row(owner, note.id).status == "archived"


def test_older_deletions_load_a_page_at_a_time(owner, web):
    from notebooks.rules import TRASH_PAGE_SIZE

    notes = [factories.note(owner, f"Deleted note number {i}.")
             for i in range(TRASH_PAGE_SIZE + 1)]
    services.note_forget(actor=owner, operation_id=op(), items=[n.id for n in notes])
    page = web.get("/trash/").content.decode()
    assert f"{TRASH_PAGE_SIZE + 1} deleted notes" in page
    assert page.count("Restore</button>") == TRASH_PAGE_SIZE
    older = re.search(r'<li class="more"><a href="([^"]+)"', page).group(1).replace("&amp;", "&")
    rest = web.get(older, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in rest and rest.count("Restore</button>") == 1
    assert 'class="more"' not in rest
    assert "Show older" not in web.get(older).content.decode()  # without htmx: the page
