"""The website minimum: owner setup, login, logout, the library page with create forms."""

import re
import uuid

import pytest
from django.test import Client, override_settings

from grove.models import Account
from notebooks import selectors
from tests import factories

pytestmark = pytest.mark.django_db

PASSWORD = "a long enough passphrase 42"


def setup_owner(client: Client, username: str = "owner"):
    return client.post("/setup/", {
        "username": username, "email": "", "password": PASSWORD, "password_again": PASSWORD,
    })


def test_first_visit_leads_to_owner_setup(client):
    response = client.get("/", follow=True)
    assert response.redirect_chain[-1][0] == "/setup/"
    assert b"Create owner account" in response.content


def test_owner_setup_creates_the_account_once(client):
    response = setup_owner(client)
    assert response.status_code == 302 and response.url == "/"
    assert Account.objects.count() == 1
    assert client.get("/").status_code == 200
    # The setup page is gone for everybody once an account exists.
    assert Client().get("/setup/").status_code == 404
    assert setup_owner(Client(), "intruder").status_code == 404
    assert Account.objects.count() == 1


def test_owner_setup_validates(client):
    response = client.post("/setup/", {"username": "o", "password": PASSWORD,
                                       "password_again": "different"})
    assert response.status_code == 400
    weak = client.post("/setup/", {"username": "o", "password": "password",
                                   "password_again": "password"})
    assert weak.status_code == 400
    assert Account.objects.count() == 0


def test_login_logout(client):
    Account.objects.create_user(username="alice", password=PASSWORD)
    assert client.get("/").url.startswith("/login/")
    bad = client.post("/login/", {"username": "alice", "password": "wrong"})
    assert bad.status_code == 400 and b"correct username and password" in bad.content
    good = client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert good.status_code == 302
    assert client.get("/").status_code == 200
    assert client.get("/logout/").status_code == 405  # logout is a POST
    client.post("/logout/")
    assert client.get("/").status_code == 302


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


def test_posts_need_csrf():
    account = factories.account()
    client = Client(enforce_csrf_checks=True)
    client.force_login(account)
    response = client.post("/notebooks/new", {"operation_id": uuid.uuid4(), "name": "x"})
    assert response.status_code == 403
    assert selectors.notebook_list(actor=factories.Actor.for_session(account.id)) == []


def test_security_headers(client):
    response = client.get("/login/", follow=True)
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"


def test_openai_apps_challenge(client):
    assert client.get("/.well-known/openai-apps-challenge").status_code == 404
    with override_settings(OPENAI_APPS_CHALLENGE="abc123-token"):
        response = client.get("/.well-known/openai-apps-challenge")
        assert response.status_code == 200
        assert response.content == b"abc123-token"
        assert response["Content-Type"].startswith("text/plain")
        assert response["Cache-Control"] == "no-store"
        assert response["X-Content-Type-Options"] == "nosniff"
        head = client.head("/.well-known/openai-apps-challenge")
        assert head.status_code == 200 and head.content == b""


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
    assert re.search(r'data-depth="1" data-notebook="[^"]+"><a [^>]*>Child</a>', html)
