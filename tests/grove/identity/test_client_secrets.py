"""Confidential OAuth clients' secrets (grove/identity/client_secrets.py): drawn by the
server, stored with the one-round client-secret hasher, old password-hasher hashes still
valid (and stored again on their first right use), people's passwords on the password
hasher; failed client authentications limited per client and address. With Grove's own
`PASSWORD_HASHERS` (the suite's settings use MD5 for passwords)."""

from __future__ import annotations

import base64
import json

import pytest
from django.conf import global_settings
from django.contrib.auth.hashers import check_password, get_hasher, identify_hasher, make_password
from django.test import Client
from oauth2_provider.models import Application

import grove.settings as grove_settings
from grove.kernel import throttle
from grove.models import Account
from tests.grove.identity.oauth_helpers import REDIRECT, consent, new_flow

pytestmark = pytest.mark.django_db

PASSWORD = "a long enough passphrase 42"  # noqa: S105
FAST = "client_secret_pbkdf2_sha256"


@pytest.fixture
def grove_hashers(settings):
    """Grove's production hashers (the suite's settings swap the password one for MD5):
    its own list, or Django's where it sets none."""
    settings.PASSWORD_HASHERS = getattr(grove_settings, "PASSWORD_HASHERS",
                                        global_settings.PASSWORD_HASHERS)


@pytest.fixture
def owner_web() -> Client:
    web = Client()
    web.force_login(Account.objects.create_user(username="owner", password=PASSWORD))
    return web


def _register(address: str = "203.0.113.20", **metadata: object) -> dict:
    answer = Client(REMOTE_ADDR=address).post("/o/register/", content_type="application/json",
                                              data=json.dumps({
        "redirect_uris": [REDIRECT], "client_name": "Confidential agent",
        "token_endpoint_auth_method": "client_secret_basic",
        "grant_types": ["authorization_code", "refresh_token"], **metadata}))
    assert answer.status_code == 201, answer.content
    return answer.json()


def _basic(client_id: str, secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(
        f"{client_id}:{secret}".encode()).decode()}


def _token(client_id: str, secret: str, address: str = "203.0.113.20", **fields: str):
    return Client(REMOTE_ADDR=address).post("/o/token/", fields,
                                            headers=_basic(client_id, secret))


def _sign_in(owner_web: Client, client_id: str, secret: str) -> dict:
    """Consent, then the code exchanged with the client's secret (HTTP Basic)."""
    flow = new_flow(client_id)
    code = consent(owner_web, flow)["code"]
    answer = _token(client_id, secret, grant_type="authorization_code", code=code,
                    redirect_uri=flow.redirect, code_verifier=flow.verifier)
    assert answer.status_code == 200, answer.content
    return answer.json()


def _stored(client_id: str) -> str:
    return Application.objects.get(client_id=client_id).client_secret


def test_a_registered_confidential_client_signs_in_with_its_secret_stored_fast(
        grove_hashers, owner_web):
    chosen = "a secret the client would like to keep"  # noqa: S105
    made = _register(client_secret=chosen)  # not the client's to choose: ignored
    secret = made["client_secret"]
    assert secret != chosen and len(secret) == 128  # drawn by the server
    assert identify_hasher(_stored(made["client_id"])).algorithm == FAST
    assert secret not in _stored(made["client_id"])

    tokens = _sign_in(owner_web, made["client_id"], secret)
    refreshed = _token(made["client_id"], secret, grant_type="refresh_token",
                       refresh_token=tokens["refresh_token"])
    assert refreshed.status_code == 200, refreshed.content
    # client_secret_post works too; the chosen secret and no secret do not
    posted = Client().post("/o/token/", {
        "grant_type": "refresh_token", "refresh_token": refreshed.json()["refresh_token"],
        "client_id": made["client_id"], "client_secret": secret})
    assert posted.status_code == 200, posted.content
    for given in (chosen, ""):
        refused = _token(made["client_id"], given, grant_type="refresh_token",
                         refresh_token=posted.json()["refresh_token"])
        assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"


def test_an_update_cannot_set_the_secret_either(grove_hashers):
    made = _register()
    stored = _stored(made["client_id"])
    changed = Client().put(
        f"/o/register/{made['client_id']}/", content_type="application/json",
        data=json.dumps({"redirect_uris": [REDIRECT], "client_secret": "mine now",
                         "token_endpoint_auth_method": "client_secret_basic"}),
        headers={"Authorization": f"Bearer {made['registration_access_token']}"})
    assert changed.status_code == 200, changed.content
    assert "client_secret" not in changed.json()
    assert _stored(made["client_id"]) == stored


def test_a_secret_stored_with_the_password_hasher_still_works_and_is_stored_again(
        grove_hashers, owner_web):
    secret = "s" * 64 + "an older client's secret"  # noqa: S105
    old = Application.objects.create(
        name="Old", client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, redirect_uris=REDIRECT,
        client_secret=make_password(secret, hasher="pbkdf2_sha256"))  # as stored before
    before = _stored(old.client_id)
    assert before.startswith("pbkdf2_sha256$")

    wrong = _token(old.client_id, secret + "x", grant_type="refresh_token", refresh_token="r")
    assert wrong.status_code == 401
    assert _stored(old.client_id) == before  # a wrong secret changes nothing

    tokens = _sign_in(owner_web, old.client_id, secret)
    after = _stored(old.client_id)
    assert identify_hasher(after).algorithm == FAST
    assert check_password(secret, after) and not check_password(secret + "x", after)
    again = _token(old.client_id, secret, grant_type="refresh_token",
                   refresh_token=tokens["refresh_token"])
    assert again.status_code == 200, again.content


def test_peoples_passwords_keep_the_password_hasher(grove_hashers):
    assert get_hasher("default").algorithm == "pbkdf2_sha256"
    owner = Account.objects.create_user(username="owner", password=PASSWORD)
    assert owner.password.startswith("pbkdf2_sha256$1500000$")
    assert Client().login(username="owner", password=PASSWORD)
    owner.refresh_from_db()
    assert identify_hasher(owner.password).algorithm == "pbkdf2_sha256"
    # A password hash from the client-secret hasher (only a database write could put one
    # there) is moved to the password hasher at the next sign-in.
    Account.objects.filter(id=owner.id).update(password=make_password(PASSWORD, hasher=FAST))
    assert Client().login(username="owner", password=PASSWORD)
    owner.refresh_from_db()
    assert identify_hasher(owner.password).algorithm == "pbkdf2_sha256"


def test_failed_client_authentication_is_limited_per_client_and_address(settings,
                                                                        monkeypatch):
    settings.GROVE_CLIENT_AUTH_LIMIT = {"count": 3, "window": 60}
    monkeypatch.setattr(throttle, "clock", lambda: 8_000_010.0)  # one window throughout
    guessed, other = _register(), _register()
    here, elsewhere = "203.0.113.30", "198.51.100.30"

    def attempt(made: dict, secret: str, address: str):
        return _token(made["client_id"], secret, address, grant_type="refresh_token",
                      refresh_token="not a refresh token")

    assert [attempt(guessed, "wrong", here).status_code for _ in range(3)] == [401] * 3
    refused = attempt(guessed, "wrong", here)
    assert refused.status_code == 429
    assert refused.json()["error"] == "temporarily_unavailable"
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert "no-store" in refused["Cache-Control"]
    # From that address, that client's wrong secrets stay refused, and its right one is
    # still answered (authenticated: its refresh token is what is wrong) — as is the
    # same client from elsewhere and another client from that address.
    assert attempt(guessed, "wrong again", here).status_code == 429
    for made, address in ((guessed, here), (guessed, elsewhere), (other, here)):
        answer = attempt(made, made["client_secret"], address)
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_grant"
    # The body's client_id is counted as the Basic one is
    body = Client(REMOTE_ADDR=here).post("/o/token/", {
        "grant_type": "refresh_token", "refresh_token": "x", "client_id": guessed["client_id"],
        "client_secret": "wrong in the body"})
    assert body.status_code == 429
    # The window over, it may try again
    monkeypatch.setattr(throttle, "clock", lambda: 8_000_070.0)
    answer = attempt(guessed, guessed["client_secret"], here)
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_grant"


def test_past_the_limit_a_secret_stored_with_the_password_hasher_is_not_checked(
        grove_hashers, settings, monkeypatch):
    """Its check costs a third of a second: past the limit even the right secret waits
    for the window, so a flood of guesses cannot buy that work."""
    settings.GROVE_CLIENT_AUTH_LIMIT = {"count": 2, "window": 60}
    monkeypatch.setattr(throttle, "clock", lambda: 9_000_010.0)
    secret = "s" * 64 + "an older client's secret"  # noqa: S105
    old = Application.objects.create(
        name="Old", client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, redirect_uris=REDIRECT,
        client_secret=make_password(secret, hasher="pbkdf2_sha256"))
    before = _stored(old.client_id)
    for _ in range(2):
        assert _token(old.client_id, "wrong", grant_type="refresh_token",
                      refresh_token="r").status_code == 401
    refused = _token(old.client_id, secret, grant_type="refresh_token", refresh_token="r")
    assert refused.status_code == 429
    assert _stored(old.client_id) == before  # not checked: not stored again either
