"""The owner's share pages: the Share box on note and notebook pages renders only what
the page's view gave it, and the Shares page's queries do not grow with its links."""

from __future__ import annotations

import pytest
from django.db import connection
from django.template import Context, Template
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext

from grove.models import Account
from sharing import services
from tests import factories

pytestmark = pytest.mark.django_db


def signed_in(owner) -> Client:
    client = Client()
    client.force_login(Account.objects.get(id=owner.account_id))
    return client


def test_the_share_box_renders_what_it_is_given(django_assert_num_queries):
    owner = factories.owner()
    note = factories.note(owner, "Shared.")
    share, _ = services.share_create(actor=owner, note_id=note.id)
    box = Template("{% load sharing %}{% share_box share note_id=note_id %}")
    request = RequestFactory().get(f"/notes/{note.id}/")
    with django_assert_num_queries(0):
        live = box.render(Context({"request": request, "share": share, "note_id": note.id}))
        none = box.render(Context({"request": request, "share": None, "note_id": note.id}))
    assert f'value="{share.url}"' in live and "Revoke link" in live
    assert "Create public link" in none and share.url not in none


def test_note_and_notebook_pages_show_their_live_link():
    owner = factories.owner()
    book = factories.notebook(owner, "Recipes")
    note = factories.note(owner, "Pancakes.", notebook_id=book.id)
    web = signed_in(owner)
    assert "Create public link" in web.get(f"/notes/{note.id}/").content.decode()
    note_share, _ = services.share_create(actor=owner, note_id=note.id)
    book_share, _ = services.share_create(actor=owner, notebook_id=book.id)
    assert f'value="{note_share.url}"' in web.get(f"/notes/{note.id}/").content.decode()
    assert f'value="{book_share.url}"' in web.get(f"/notebooks/{book.id}/").content.decode()


def test_the_shares_page_makes_as_many_queries_for_five_links_as_for_one(
        django_assert_num_queries):
    """No query per link: each row's title and availability come with the list."""
    owner = factories.owner()
    web = signed_in(owner)
    book = factories.notebook(owner, "Book 0")
    services.share_create(actor=owner, notebook_id=book.id)
    web.get("/shares/")  # warm: the session and anything cached once per process
    with CaptureQueriesContext(connection) as one:
        page = web.get("/shares/")
    assert page.content.decode().count("<tr data-share=") == 1
    for i in range(1, 5):  # notes and notebooks: both of a row's joins
        if i % 2:
            services.share_create(actor=owner, note_id=factories.note(owner, f"Note {i}").id)
        else:
            services.share_create(actor=owner,
                                  notebook_id=factories.notebook(owner, f"Book {i}").id)
    with django_assert_num_queries(len(one.captured_queries)):
        page = web.get("/shares/")
    assert page.content.decode().count("<tr data-share=") == 5


def test_a_public_page_names_no_kind():
    """Issue 36 item 3.9: a visitor sees what the note says and the day it changed — not
    how its owner files it ("FACT"); the JSON carries no more than the page shows."""
    owner = factories.owner()
    book = factories.notebook(owner, "Recipes")
    note = factories.note(owner, "# Pancakes\n\nFlour, eggs, milk.", kind="fact",
                          notebook_id=book.id)
    note_share, _ = services.share_create(actor=owner, note_id=note.id)
    book_share, _ = services.share_create(actor=owner, notebook_id=book.id)
    visitor = Client()
    for path in (f"/public/shares/{note_share.token}", f"/public/shares/{book_share.token}",
                 f"/public/shares/{book_share.token}/notes/{note.id}"):
        page = visitor.get(path).content.decode()
        assert "Pancakes" in page and "Updated " in page
        assert 'class="kind"' not in page and ">fact<" not in page.lower(), path
        data = visitor.get(path + ".json").json()["data"]
        for shown in data if isinstance(data, list) else [data]:
            assert set(shown) == {"id", "content", "updated"}, path
