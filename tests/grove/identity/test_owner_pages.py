"""The owner's pages: the first visit's setup, sign-in and sign-out, the apps challenge."""

import pytest
from django.test import Client, override_settings

from grove.models import Account

pytestmark = pytest.mark.django_db

PASSWORD = "a long enough passphrase 42"  # noqa: S105


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
