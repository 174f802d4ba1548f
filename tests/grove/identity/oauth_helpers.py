"""OAuth helpers for tests: PKCE pairs, client registration and the code flow through
Django's test client (the owner signed in)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit

from django.conf import settings
from django.test import Client

from grove.identity.client_metadata import ClientDocumentFetcher

REDIRECT = "https://client.example/callback"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.rstrip(b"=").decode()


def register(client: Client | None = None, *, redirect: str = REDIRECT,
             name: str = "Test agent") -> str:
    response = (client or Client(enforce_csrf_checks=True)).post(
        "/o/register/", data=json.dumps({
            "redirect_uris": [redirect], "client_name": name,
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"]}),
        content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["client_id"]


@dataclass
class Flow:
    client_id: str
    verifier: str
    challenge: str
    state: str
    redirect: str = REDIRECT

    def authorize_query(self, **extra: str) -> str:
        params = {"response_type": "code", "client_id": self.client_id,
                  "redirect_uri": self.redirect, "code_challenge": self.challenge,
                  "code_challenge_method": "S256", "state": self.state, "scope": "mcp",
                  "resource": settings.GROVE_MCP_RESOURCE}
        params.update(extra)
        return "/o/authorize/?" + urlencode({k: v for k, v in params.items() if v != ""})


def new_flow(client_id: str, redirect: str = REDIRECT) -> Flow:
    verifier, challenge = pkce()
    return Flow(client_id, verifier, challenge, secrets.token_urlsafe(16), redirect)


def consent(owner_web: Client, flow: Flow, **extra: str) -> dict[str, str]:
    """GET the consent page, POST "Continue"; the redirect's query parameters."""
    page = owner_web.get(flow.authorize_query(**extra))
    assert page.status_code == 200, page.content[:500]
    form = {field: value[0] for field, value in parse_qs(
        urlsplit(flow.authorize_query(**extra)).query).items()}
    form["allow"] = "Authorize"
    answer = owner_web.post(flow.authorize_query(**extra), form)
    assert answer.status_code == 302, answer.content[:500]
    location = urlsplit(answer["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == flow.redirect
    return {k: v[0] for k, v in parse_qs(location.query).items()}


def exchange(flow: Flow, code: str, **extra: str) -> tuple[int, dict]:
    response = Client().post("/o/token/", {
        "grant_type": "authorization_code", "code": code, "redirect_uri": flow.redirect,
        "client_id": flow.client_id, "code_verifier": flow.verifier, **extra})
    assert response["Content-Type"].startswith("application/json")
    return response.status_code, response.json()


def refresh(client_id: str, token: str) -> tuple[int, dict]:
    response = Client().post("/o/token/", {"grant_type": "refresh_token",
                                           "refresh_token": token, "client_id": client_id})
    return response.status_code, response.json()


CIMD_CLIENT = "https://agent.example/oauth/client.json"


class _KnownDocument:
    """Stands in for the network in CIMD tests: one known client document."""

    def fetch(self, client_id: str) -> tuple[dict, int]:
        from oauth2_provider.cimd import CIMDError

        if client_id != CIMD_CLIENT:
            raise CIMDError("unknown document")
        return ({"client_id": CIMD_CLIENT, "client_name": "Document Agent",
                 "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
                 "grant_types": ["authorization_code", "refresh_token"],
                 "response_types": ["code"]}, 300)


class FakeMetadataFetcher(ClientDocumentFetcher):
    """Grove's fetcher (its checks of the document) over `_KnownDocument`."""

    transport = _KnownDocument
