"""Grove's OAuth 2.1 authorization server (django-oauth-toolkit + grove/oauth.py):
discovery metadata, open registration, the PKCE code flow through the website login and
consent page, tokens bound to /mcp only, refresh rotation with reuse detection."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client
from oauth2_provider.models import AccessToken, RefreshToken

from grove.models import Account
from tests.grove.oauth_helpers import REDIRECT, consent, exchange, new_flow, refresh, register

pytestmark = pytest.mark.django_db
PASSWORD = "a long enough passphrase 42"  # noqa: S105


@pytest.fixture
def owner_web() -> Client:
    client = Client()
    client.force_login(Account.objects.create_user(username="owner", password=PASSWORD))
    return client


def test_authorization_server_metadata():
    meta = Client().get("/.well-known/oauth-authorization-server").json()
    issuer = settings.GROVE_ISSUER
    assert meta["issuer"] == issuer
    assert meta["authorization_endpoint"] == f"{issuer}/o/authorize/"
    assert meta["token_endpoint"] == f"{issuer}/o/token/"
    assert meta["registration_endpoint"] == f"{issuer}/o/register/"
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert "none" in meta["token_endpoint_auth_methods_supported"]
    assert set(meta["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    assert meta["response_types_supported"] == ["code"]
    assert meta["authorization_response_iss_parameter_supported"] is True


def test_protected_resource_metadata_names_the_same_issuer():
    for path in ("/.well-known/oauth-protected-resource/mcp",
                 "/.well-known/oauth-protected-resource"):
        meta = Client().get(path).json()
        assert meta["resource"] == settings.GROVE_MCP_RESOURCE
        assert meta["authorization_servers"] == [settings.GROVE_ISSUER]
        assert meta["bearer_methods_supported"] == ["header"]


def test_registration_is_open_and_makes_a_public_client():
    response = Client().post("/o/register/", data=(
        '{"redirect_uris": ["cursor://anysphere.cursor-mcp/oauth/callback", '
        '"http://127.0.0.1/callback"], "client_name": "Cursor", '
        '"token_endpoint_auth_method": "none", '
        '"grant_types": ["authorization_code", "refresh_token"]}'),
        content_type="application/json")
    assert response.status_code == 201
    body = response.json()
    assert body["token_endpoint_auth_method"] == "none" and "client_secret" not in body
    for uri in ("javascript:/x", "http://evil.example/cb", "https://x.example/cb#frag"):
        bad = Client().post("/o/register/", data=f'{{"redirect_uris": ["{uri}"], '
                            '"token_endpoint_auth_method": "none"}',
                            content_type="application/json")
        assert bad.status_code == 400, uri


def test_the_code_flow_issues_tokens_bound_to_mcp(owner_web):
    flow = new_flow(register(name="Claude"))
    page = owner_web.get(flow.authorize_query()).content.decode()
    assert "Connect “Claude” to Grove?" in page and "client.example" in page
    answer = consent(owner_web, flow, state="s" * 3000)  # long states survive
    assert answer["state"] == "s" * 3000 and answer["iss"] == settings.GROVE_ISSUER
    status, tokens = exchange(flow, answer["code"])
    assert status == 200 and tokens["token_type"] == "Bearer"
    stored = AccessToken.objects.get(scope="mcp")
    assert stored.resource == [settings.GROVE_MCP_RESOURCE]
    assert stored.token == ""  # only a checksum is stored


def test_a_token_requested_without_resource_is_bound_to_mcp_anyway(owner_web):
    flow = new_flow(register())
    answer = consent(owner_web, flow, resource="")
    status, _ = exchange(flow, answer["code"])
    assert status == 200
    assert AccessToken.objects.get(scope="mcp").resource == [settings.GROVE_MCP_RESOURCE]


def test_other_audiences_are_invalid_target(owner_web):
    flow = new_flow(register())
    page = owner_web.get(flow.authorize_query(resource="https://elsewhere.example/api"))
    assert page.status_code == 400 and 'data-code="invalid_target"' in page.content.decode()
    answer = consent(owner_web, flow)
    status, body = exchange(flow, answer["code"], resource="https://elsewhere.example/api")
    assert status == 400 and body["error"] == "invalid_target"
    assert not AccessToken.objects.filter(scope="mcp").exists()


def test_plain_pkce_and_missing_pkce_are_refused_before_consent(owner_web):
    flow = new_flow(register())
    for extra in ({"code_challenge_method": "plain"}, {"code_challenge_method": ""}):
        page = owner_web.get(flow.authorize_query(**extra))
        assert page.status_code == 400, extra
        assert "S256" in page.content.decode()


def test_redirect_uri_mismatch_is_refused(owner_web):
    flow = new_flow(register())
    page = owner_web.get(flow.authorize_query(redirect_uri="https://evil.example/cb"))
    assert page.status_code == 400
    assert "evil.example" not in page.get("Location", "")


def test_the_consent_page_needs_the_website_login():
    flow = new_flow(register())
    response = Client().get(flow.authorize_query())
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_refresh_rotates_and_reuse_revokes_the_family(owner_web):
    flow = new_flow(register())
    _, tokens = exchange(flow, consent(owner_web, flow)["code"])
    status, second = refresh(flow.client_id, tokens["refresh_token"])
    assert status == 200 and second["refresh_token"] != tokens["refresh_token"]
    reused, body = refresh(flow.client_id, tokens["refresh_token"])  # replay the old one
    assert reused == 400 and body["error"] == "invalid_grant"
    after, _ = refresh(flow.client_id, second["refresh_token"])  # the family is revoked
    assert after == 400
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()


def test_a_code_works_once_and_only_with_its_verifier(owner_web):
    flow = new_flow(register())
    code = consent(owner_web, flow)["code"]
    wrong = new_flow(flow.client_id)
    wrong.client_id = flow.client_id
    status, body = exchange(wrong, code)
    assert status == 400 and body["error"] == "invalid_grant"
    assert REDIRECT.startswith("https://")


def _mcp_status(access_token: str) -> int:
    return Client().post("/mcp", data='{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
                         content_type="application/json",
                         headers={"Authorization": f"Bearer {access_token}"}).status_code


def test_a_code_used_twice_revokes_what_it_bought(owner_web):
    """RFC 6749 §4.1.2: the second use means the code leaked — refuse it and revoke the
    tokens issued from it, including those the refresh token has rotated into since."""
    flow = new_flow(register())
    code = consent(owner_web, flow)["code"]
    status, tokens = exchange(flow, code)
    assert status == 200 and _mcp_status(tokens["access_token"]) == 200
    status, rotated = refresh(flow.client_id, tokens["refresh_token"])
    assert status == 200 and _mcp_status(rotated["access_token"]) == 200
    # Another client presenting the code changes nothing for this one.
    stranger = new_flow(register(name="Other"))
    assert exchange(stranger, code)[1]["error"] == "invalid_grant"
    assert _mcp_status(rotated["access_token"]) == 200

    again, body = exchange(flow, code)
    assert again == 400 and body["error"] == "invalid_grant"
    assert _mcp_status(tokens["access_token"]) == 401
    assert _mcp_status(rotated["access_token"]) == 401
    assert refresh(flow.client_id, rotated["refresh_token"])[0] == 400
    assert not RefreshToken.objects.filter(revoked__isnull=True).exists()
    # A fresh sign-in works as before.
    fresh = new_flow(flow.client_id)
    status, later = exchange(fresh, consent(owner_web, fresh)["code"])
    assert status == 200 and _mcp_status(later["access_token"]) == 200


def test_a_client_id_metadata_document_names_the_client(owner_web):
    from django.test import override_settings

    from tests.grove.oauth_helpers import CIMD_CLIENT

    assert Client().get("/.well-known/oauth-authorization-server").json()[
        "client_id_metadata_document_supported"] is True
    fetcher = "tests.grove.oauth_helpers.FakeMetadataFetcher"
    with override_settings(OAUTH2_PROVIDER={**settings.OAUTH2_PROVIDER,
                                            "CIMD_METADATA_FETCHER": fetcher}):
        flow = new_flow(CIMD_CLIENT)
        page = owner_web.get(flow.authorize_query()).content.decode()
        assert "Connect “Document Agent” to Grove?" in page
        status, tokens = exchange(flow, consent(owner_web, flow)["code"])
        assert status == 200 and tokens["access_token"]
        unknown = new_flow("https://other.example/client.json")
        assert owner_web.get(unknown.authorize_query()).status_code == 400


def test_password_and_implicit_grants_are_refused(owner_web):
    client_id = register()
    password = Client().post("/o/token/", {"grant_type": "password", "username": "owner",
                                           "password": PASSWORD, "client_id": client_id})
    assert password.status_code in (400, 401)
    assert password.json()["error"] in ("unsupported_grant_type", "unauthorized_client",
                                        "invalid_grant")
    flow = new_flow(client_id)
    implicit = owner_web.get(flow.authorize_query(response_type="token"))
    assert implicit.status_code in (302, 400)
    assert "access_token" not in implicit.get("Location", "")



def test_expired_tokens_are_cleared_by_the_periodic_task(owner_web):
    from datetime import timedelta

    from django.utils import timezone

    from grove.tasks import oauth_tokens_clear_task

    flow = new_flow(register())
    exchange(flow, consent(owner_web, flow)["code"])
    live = AccessToken.objects.filter(scope="mcp")
    assert live.count() == 1
    oauth_tokens_clear_task()
    assert live.count() == 1  # not expired: kept
    live.update(expires=timezone.now() - timedelta(days=1))
    RefreshToken.objects.update(revoked=timezone.now() - timedelta(days=60))
    oauth_tokens_clear_task()
    assert not AccessToken.objects.filter(scope="mcp").exists()
