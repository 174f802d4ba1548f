"""Grove's OAuth 2.1 authorization server (django-oauth-toolkit + grove/identity/oauth.py):
discovery metadata, open registration, the PKCE code flow through the website login and
consent page, tokens bound to /mcp only, refresh rotation with reuse detection."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client
from oauth2_provider.models import AccessToken, RefreshToken

from grove.models import Account
from tests.grove.identity.oauth_helpers import (
    REDIRECT,
    consent,
    exchange,
    new_flow,
    refresh,
    register,
)

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


def test_a_loopback_server_is_named_as_the_client_reached_it():
    """An app given http://localhost:PORT/mcp checks that the metadata names exactly that
    (the MCP SDK refuses a mismatch); a loopback base URL answers to its siblings."""
    port = settings.TEST_SITE_PORT
    for host in (f"localhost:{port}", f"[::1]:{port}", f"127.0.0.1:{port}"):
        meta = Client().get("/.well-known/oauth-protected-resource/mcp",
                            HTTP_HOST=host).json()
        assert meta["resource"] == f"http://{host}/mcp"
        assert meta["authorization_servers"] == [settings.GROVE_ISSUER]  # one issuer
        challenge = Client().post("/mcp", data="{}", content_type="application/json",
                                  HTTP_HOST=host)["WWW-Authenticate"]
        assert f'resource_metadata="http://{host}/.well-known/' in challenge
    # Any other Host is refused before it is named anywhere.
    assert Client().get("/.well-known/oauth-protected-resource/mcp",
                        HTTP_HOST="evil.example").status_code == 400


def test_a_token_for_a_loopback_sibling_works_at_mcp(owner_web):
    sibling = f"http://localhost:{settings.TEST_SITE_PORT}/mcp"
    flow = new_flow(register())
    status, tokens = exchange(flow, consent(owner_web, flow, resource=sibling)["code"],
                              resource=sibling)
    assert status == 200
    assert AccessToken.objects.get(scope="mcp").resource == [sibling]
    assert _mcp_status(tokens["access_token"]) == 200


@pytest.mark.parametrize("uri", [
    "https://claude.ai/cb https://evil.example/", "https://evil.example@claude.ai/cb",
    "http://[::1]:8823/cb", "https://claude.ai./cb", "https://claude_ai.com/cb",
    "https://claude.ai:99999/cb", "https://a.example/cb\u0000", "https://a.example/\tcb",
    "http://evil.example/cb", "javascript:/x", "https://x.example/cb#frag"])
def test_registration_refuses_redirect_uris_no_browser_should_be_sent_to(uri):
    body = '{"redirect_uris": ["' + uri + '"], "token_endpoint_auth_method": "none"}'
    bad = Client().post("/o/register/", data=body, content_type="application/json")
    assert bad.status_code == 400, (uri, bad.content)
    assert bad.json()["error"] in ("invalid_redirect_uri", "invalid_client_metadata")


def test_text_no_database_can_hold_is_a_400_not_a_500():
    assert Client().post("/o/register/", data='{"client_name": "\\ud800", '
                         '"redirect_uris": ["https://a.example/cb"]}',
                         content_type="application/json").status_code == 400
    for data in ({"grant_type": "authorization_code", "client_id": "x", "code": "\x00"},
                 {"grant_type": "refresh_token", "client_id": "\x00", "refresh_token": "r"}):
        answer = Client().post("/o/token/", data)
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_request"
    device = Client().post("/o/token/", {
        "grant_type": "urn:ietf:params:oauth:grant-type:device_code", "client_id": "x"})
    assert device.status_code == 400 and device.json()["error"] == "unsupported_grant_type"


def test_the_consent_page_refuses_what_it_cannot_send_the_browser_to(owner_web):
    from oauth2_provider.models import Application

    flow = new_flow(register())
    assert owner_web.get(flow.authorize_query(client_id="\x00")).status_code == 400
    short = owner_web.get(flow.authorize_query(code_challenge="short"))
    assert short.status_code == 400 and "RFC 7636" in short.content.decode()
    # A client registered some other way (a metadata document) with an address the
    # policy cannot name: an explanation, not a Continue button that goes nowhere.
    Application.objects.filter(client_id=flow.client_id).update(
        redirect_uris="http://[::1]:8823/cb")
    page = owner_web.get(flow.authorize_query(redirect_uri="http://[::1]:8823/cb"))
    assert page.status_code == 400
    assert 'data-code="invalid_redirect_uri"' in page.content.decode()
    assert "authorizationForm" not in page.content.decode()


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


@pytest.mark.parametrize("extra", [{"scope": "bogus"}, {"response_type": "token"},
                                   {"scope": "mcp openid"}])
def test_an_error_before_consent_stays_on_grove(owner_web, extra):
    """Registration is open, so anyone can register their own return address: a link
    to the consent page that fails validation must not send a signed-in owner there
    with what the link put in `state` (RFC 9700 §4.11.2)."""
    flow = new_flow(register(redirect="https://attacker.example/cb"),
                    redirect="https://attacker.example/cb")
    page = owner_web.get(flow.authorize_query(state="the owner's wifi password", **extra))
    assert page.status_code == 400
    assert "attacker.example" not in page.get("Location", "")
    assert "data-code=" in page.content.decode()


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

    from tests.grove.identity.oauth_helpers import CIMD_CLIENT

    assert Client().get("/.well-known/oauth-authorization-server").json()[
        "client_id_metadata_document_supported"] is True
    fetcher = "tests.grove.identity.oauth_helpers.FakeMetadataFetcher"
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
