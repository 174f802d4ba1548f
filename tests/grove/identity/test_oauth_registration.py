"""Open OAuth client registration (RFC 7591) kept in bounds: a limit per client address,
only the grant types Grove offers, and clients that never obtained a token cleared by
the periodic task."""

from __future__ import annotations

import base64
import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, RefreshToken

from grove.identity import services
from grove.models import Account
from grove.tasks import oauth_tokens_clear_task
from tests.grove.identity.oauth_helpers import REDIRECT, consent, exchange, new_flow, register

pytestmark = pytest.mark.django_db


def _register(address: str, **metadata: object) -> object:
    body = {"redirect_uris": [REDIRECT], "client_name": "Agent",
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], **metadata}
    return Client(REMOTE_ADDR=address).post("/o/register/", data=json.dumps(body),
                                            content_type="application/json")


def test_registrations_are_limited_per_address(settings):
    settings.GROVE_REGISTRATION_LIMIT = {"count": 3, "window": 3600}
    # a refused registration counts too
    assert _register("203.0.113.7", redirect_uris=["http://evil.example/cb"]).status_code == 400
    assert [_register("203.0.113.7").status_code for _ in range(3)] == [201, 201, 429]
    refused = _register("203.0.113.7")
    assert refused.status_code == 429
    assert refused["Content-Type"].startswith("application/json")
    assert refused.json()["error"] == "temporarily_unavailable"
    assert refused.json()["error_description"]
    assert 1 <= int(refused["Retry-After"]) <= 3600
    assert Application.objects.count() == 2  # the refused ones made nothing
    assert _register("198.51.100.2").status_code == 201  # another address is not held up


@pytest.mark.parametrize("grants", [
    ["client_credentials"], ["password"], ["implicit"],
    ["urn:ietf:params:oauth:grant-type:device_code"],
    ["authorization_code", "client_credentials"], ["refresh_token", "password"]])
def test_only_the_grant_types_grove_offers_can_be_registered(grants):
    response = _register("203.0.113.8", grant_types=grants)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"
    assert not Application.objects.exists()


@pytest.mark.parametrize("kind", ["desktop", "", "Native", 7, ["web"]])
def test_application_type_is_web_or_native(kind):
    refused = _register("203.0.113.10", application_type=kind)
    assert refused.status_code == 400
    assert refused.json() == {
        "error": "invalid_client_metadata",
        "error_description": "application_type is web or native (OpenID Connect "
                             f"Registration), not {kind!r}."}
    assert not Application.objects.exists()


def test_web_and_native_applications_register_and_cannot_change_to_another_type():
    for kind in ("web", "native"):
        assert _register("203.0.113.11", application_type=kind).status_code == 201
    made = _register("203.0.113.11").json()
    changed = Client().put(
        f"/o/register/{made['client_id']}/", content_type="application/json",
        data=json.dumps({"redirect_uris": [REDIRECT], "application_type": "browser",
                         "token_endpoint_auth_method": "none"}),
        headers={"Authorization": f"Bearer {made['registration_access_token']}"})
    assert changed.status_code == 400
    assert changed.json()["error"] == "invalid_client_metadata"


def test_a_registered_client_cannot_switch_to_another_grant_type():
    made = _register("203.0.113.9").json()
    changed = Client().put(
        f"/o/register/{made['client_id']}/", content_type="application/json",
        data=json.dumps({"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"],
                         "token_endpoint_auth_method": "client_secret_basic"}),
        headers={"Authorization": f"Bearer {made['registration_access_token']}"})
    assert changed.status_code == 400
    assert changed.json()["error"] == "invalid_client_metadata"
    app = Application.objects.get(client_id=made["client_id"])
    assert app.authorization_grant_type == Application.GRANT_AUTHORIZATION_CODE


@pytest.mark.parametrize("grant", ["client_credentials", "password"])
def test_the_token_endpoint_refuses_unoffered_grants_for_any_client(grant):
    # A client registered for that grant type before registration refused it.
    secret = "an old client's secret, long enough"  # noqa: S105
    old = Application.objects.create(
        name="Old", client_type=Application.CLIENT_CONFIDENTIAL, client_secret=secret,
        authorization_grant_type=(Application.GRANT_CLIENT_CREDENTIALS
                                  if grant == "client_credentials" else Application.GRANT_PASSWORD),
        redirect_uris="")
    Account.objects.create_user(username="owner", password="a long enough passphrase 42")
    basic = base64.b64encode(f"{old.client_id}:{secret}".encode()).decode()
    fields = {"grant_type": grant, "scope": "mcp", "username": "owner",
              "password": "a long enough passphrase 42"}
    for answer in (
            Client().post("/o/token/", fields, headers={"Authorization": f"Basic {basic}"}),
            Client().post("/o/token/", {**fields, "client_id": old.client_id,
                                        "client_secret": secret}),
            # the grant type in the query string instead of the body
            Client().post(f"/o/token/?grant_type={grant}",
                          {k: v for k, v in fields.items() if k != "grant_type"},
                          headers={"Authorization": f"Basic {basic}"})):
        assert answer.status_code == 400, answer.content
        assert answer.json()["error"] == "unsupported_grant_type"
    assert not AccessToken.objects.exists()


def test_clients_that_never_obtained_a_token_are_deleted_after_a_day():
    owner_web = Client()
    owner = Account.objects.create_user(username="owner", password="a long enough passphrase 42")
    owner_web.force_login(owner)
    unused, recent = register(name="Unused"), register(name="Recent")
    with_tokens = register(name="Has tokens")
    flow = new_flow(with_tokens)
    assert exchange(flow, consent(owner_web, flow)["code"])[0] == 200
    # Got a token once and reached /mcp (a pending connection); its tokens are gone since.
    approved = register(name="Connected")
    services.connection_for_oauth_token(account_id=owner.id, client_id=approved,
                                        client_name="Connected",
                                        token_issued_at=timezone.now())
    day_ago = timezone.now() - timedelta(hours=25)
    Application.objects.exclude(client_id=recent).update(created=day_ago)
    registration_tokens = AccessToken.objects.filter(application__client_id=unused)
    assert registration_tokens.exists()

    oauth_tokens_clear_task()

    left = set(Application.objects.values_list("client_id", flat=True))
    assert left == {recent, with_tokens, approved}
    assert not registration_tokens.exists()
    assert RefreshToken.objects.filter(application__client_id=with_tokens).exists()
