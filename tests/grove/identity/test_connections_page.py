"""The Connections page: create an API key (secret shown once), see every connection
with its grant, revoke."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from grove.models import Account
from tests import factories
from tests.api.conftest import Caller, data, error

pytestmark = pytest.mark.django_db


def signed_in(owner) -> Client:
    client = Client()
    client.force_login(Account.objects.get(id=owner.account_id))
    return client


def shown_key(html: str) -> str:
    match = re.search(r'id="new-key" type="text" readonly value="(grv_[^"]+)"', html)
    assert match, html[:2000]
    return match.group(1)


def test_create_a_read_only_key_for_one_notebook_and_revoke_it():
    owner = factories.owner()
    work = factories.notebook(owner, "Work")
    factories.notebook(owner, "Home")
    web = signed_in(owner)
    page = web.get("/connections/")
    assert page.status_code == 200 and "No connections yet." in page.content.decode()
    assert "Work" in page.content.decode() and "Home" in page.content.decode()

    created = web.post("/connections/", {"name": "reader", "scope": "some",
                                         "notebooks": [str(work.id)]})
    assert created.status_code == 200
    assert "no-store" in created["Cache-Control"]
    key = shown_key(created.content.decode())
    factories.note(owner, "work note", notebook_id=work.id)
    factories.note(owner, "personal note")
    api = Caller(Client(), key)
    assert [n["note"]["content"] for n in data(api.get("/notes"))] == ["work note"]
    error(api.post("/notes", {"content": "x", "kind": "fact", "notebookId": str(work.id)}), 403,
          "insufficient_capability")

    listing = web.get("/connections/").content.decode()
    assert key not in listing  # shown once only
    assert "reader" in listing and "<td>read</td>" in listing
    assert "<td>Work</td>" in listing  # what the key sees
    assert "never" not in listing  # the key has been used
    connection_id = re.search(r'data-connection="([0-9a-f-]+)"', listing).group(1)
    revoked = web.post(f"/connections/{connection_id}/revoke")
    assert revoked.status_code == 302
    error(api.get("/notes"), 401, "invalid_token")
    assert 'data-status="revoked"' in web.get("/connections/").content.decode()


def test_all_notebooks_with_write_and_personal():
    owner = factories.owner()
    web = signed_in(owner)
    created = web.post("/connections/", {"name": "agent", "scope": "all", "can_write": "on",
                                         "personal": "on"})
    api = Caller(Client(), shown_key(created.content.decode()))
    assert api.post("/notes", {"content": "from an agent", "kind": "fact"}).status_code == 201
    assert "every notebook + Personal" in web.get("/connections/").content.decode()


def test_bad_form_is_400_and_creates_nothing():
    owner = factories.owner()
    web = signed_in(owner)
    bad = web.post("/connections/", {"name": "", "scope": "some"})
    assert bad.status_code == 400
    assert "No connections yet." in bad.content.decode()
    forged = web.post("/connections/", {"name": "x", "scope": "some",
                                        "notebooks": ["00000000-0000-0000-0000-000000000000"]})
    assert forged.status_code == 400


def test_strangers_and_anonymous_are_kept_out():
    owner = factories.owner()
    web = signed_in(owner)
    shown_key(web.post("/connections/", {"name": "mine", "scope": "all"}).content.decode())
    connection_id = re.search(r'data-connection="([0-9a-f-]+)"',
                              web.get("/connections/").content.decode()).group(1)
    stranger = signed_in(factories.owner())
    assert stranger.post(f"/connections/{connection_id}/revoke").status_code == 404
    assert "mine" not in stranger.get("/connections/").content.decode()
    anonymous = Client()
    assert anonymous.get("/connections/").status_code == 302
    assert anonymous.post(f"/connections/{connection_id}/revoke").status_code == 302
    assert 'data-status="active"' in web.get("/connections/").content.decode()


def test_posts_need_csrf():
    owner = factories.owner()
    web = Client(enforce_csrf_checks=True)
    web.force_login(Account.objects.get(id=owner.account_id))
    assert web.post("/connections/", {"name": "x", "scope": "all"}).status_code == 403


def test_each_active_connection_links_to_what_it_reads():
    owner = factories.owner()
    active = factories.connection(owner, all_notebooks=True)
    revoked = factories.connection(owner, status="revoked")
    page = signed_in(owner).get("/connections/").content.decode()
    assert f'href="/agents/brief/?connection={active.connection_id}">What it reads</a>' in page
    assert f"?connection={revoked.id}" not in page
