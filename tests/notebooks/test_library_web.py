"""The library's pages without a browser: create forms, escaping, another account's
notes never shown, the notebook tree."""

import re
import uuid

import pytest

from grove.models import Account
from notebooks import selectors, services
from tests import factories
from tests.grove.identity.test_owner_pages import PASSWORD, setup_owner

pytestmark = pytest.mark.django_db


def test_library_page_creates_and_lists_notebooks_and_notes(client):
    setup_owner(client)
    account = Account.objects.get()
    actor = factories.Actor.for_session(account.id)
    response = client.post("/notebooks/new", {"operation_id": uuid.uuid4(), "name": "Recipes"})
    assert response.status_code == 302
    [notebook] = selectors.notebook_list(actor=actor)
    operation = uuid.uuid4()
    form = {"operation_id": operation, "content": "Bread needs **time**.", "kind": "fact",
            "notebook": str(notebook.id), "task_id": ""}
    assert client.post("/notes/new", form).status_code == 302
    assert client.post("/notes/new", form).status_code == 302  # double submit: saved once
    [note] = selectors.note_list(actor=actor)
    assert (note.notebook_id, note.source_agent) == (notebook.id, "website")
    page = client.get("/")
    assert page.status_code == 200
    assert b"Recipes" in page.content and b"Bread needs time." in page.content


def test_new_note_page_shows_service_errors_in_place(client):
    setup_owner(client)
    response = client.post("/notes/new", {"operation_id": uuid.uuid4(), "content": "x",
                                          "kind": "handoff", "notebook": "", "task_id": ""})
    assert response.status_code == 400
    assert b"A handoff needs a taskId." in response.content


def test_stored_html_is_escaped(client):
    setup_owner(client)
    client.post("/notes/new", {"operation_id": uuid.uuid4(),
                               "content": "<script>alert(1)</script>", "kind": "fact"})
    page = client.get("/")
    assert b"<script>alert(1)</script>" not in page.content
    assert b"&lt;script&gt;" in page.content


def test_other_accounts_notes_never_show(client):
    stranger = factories.owner("stranger")
    factories.note(stranger, "stranger's secret")
    client.force_login(Account.objects.create_user(username="me", password=PASSWORD))
    assert b"stranger&#x27;s secret" not in client.get("/").content


def test_library_shows_the_notebook_tree(client):
    account = Account.objects.create_user(username="tree", password=PASSWORD)
    actor = factories.Actor.for_session(account.id)
    top = factories.notebook(actor, "Top")
    factories.notebook(actor, "Child", parent=top.id)
    factories.notebook(actor, "Another top")
    client.force_login(account)
    html = client.get("/").content.decode()
    order = [html.index(name) for name in (">Another top<", ">Top<", ">Child<")]
    assert order == sorted(order)
    assert f'data-depth="0" data-notebook="{top.id}"' in html
    # The parent folds its children away (<details>, open until the owner folds it).
    folded = re.search(rf'<details class="branch" data-notebook="{top.id}" open>(.*?)</details>',
                       html, re.S)
    assert folded is not None
    assert re.search(r'data-depth="1" data-notebook="[^"]+">\s*<a class="notebook" [^>]*>'
                     r'<span class="name">Child</span>', folded.group(1))


@pytest.mark.parametrize("notebook", ["not-an-id", "stranger's", "deleted"])
def test_a_note_posted_into_a_notebook_it_cannot_use_is_a_form_error(client, notebook):
    """A post goes straight to the service, which checks the notebook: a malformed id is
    the form's error, someone else's or a deleted one the service's — shown on the form
    with the notebooks to pick from, and nothing saved."""
    account = Account.objects.create_user(username="me", password=PASSWORD)
    me = factories.Actor.for_session(account.id)
    kitchen = factories.notebook(me, "Kitchen")
    ids = {"not-an-id": "not-an-id",
           "stranger's": str(factories.notebook(factories.owner("stranger"), "Theirs").id)}
    gone = factories.notebook(me, "Gone")
    services.notebook_delete(actor=me, operation_id=uuid.uuid4(), notebook_id=gone.id)
    ids["deleted"] = str(gone.id)
    client.force_login(account)
    response = client.post("/notes/new", {"operation_id": uuid.uuid4(), "content": "Flour",
                                          "kind": "fact", "notebook": ids[notebook]})
    assert response.status_code == 400
    page = response.content.decode()
    assert f'<option value="{kitchen.id}">Kitchen</option>' in page  # the picker is back
    assert "Gone<" not in page and "Theirs" not in page
    assert selectors.note_list(actor=me) == []
