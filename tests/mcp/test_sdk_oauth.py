"""End to end with the official MCP SDK's OAuth client against a live Grove: discovery →
dynamic registration → PKCE authorization (a scripted browser step: the website login
and the consent page) → token → tools/list → `remember` answers connection_required →
the owner approves with a one-notebook grant → the same call succeeds → recall sees only
that notebook → the owner revokes → the next call is refused.

Run with `-s` to see the transcript."""

from __future__ import annotations

import asyncio
import html
import re
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from grove.models import Account
from tests import factories

pytestmark = pytest.mark.slow
PASSWORD = "a long enough passphrase 42"  # noqa: S105
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Owner:
    """The owner's browser, scripted: a cookie session on the website."""

    def __init__(self, site: str, transcript: list[str]) -> None:
        self.site, self.transcript = site, transcript
        self.web = httpx2.AsyncClient(base_url=site, timeout=30)
        self.redirect: AuthorizationCodeResult | None = None

    async def sign_in(self, next_path: str) -> httpx2.Response:
        page = await self.web.get("/login/", params={"next": next_path})
        fields = dict(HIDDEN.findall(page.text))
        return await self.web.post("/login/", data={
            **fields, "username": "owner", "password": PASSWORD, "next": next_path},
            follow_redirects=True)

    async def consent(self, authorize_url: str) -> None:
        """The SDK's redirect handler: what a person does in the browser."""
        path = authorize_url[len(self.site):]
        page = await self.web.get(path)
        if "/login/" in str(page.url) or page.status_code == 302:
            page = await self.sign_in(path)
        name = re.search(r"Connect “([^”]+)” to Grove", page.text)
        self.transcript.append(f"consent page: Connect “{name.group(1) if name else '?'}” "
                               f"to Grove? (after the website login)")
        fields = {k: html.unescape(v) for k, v in HIDDEN.findall(page.text)}
        answer = await self.web.post(path, data={**fields, "allow": "Authorize"})
        assert answer.status_code == 302, answer.text[:300]
        query = parse_qs(urlsplit(answer.headers["Location"]).query)
        self.transcript.append("consent → redirect with code, state and iss")
        self.redirect = AuthorizationCodeResult(code=query["code"][0], state=query["state"][0],
                                                iss=query.get("iss", [None])[0])

    async def callback(self) -> AuthorizationCodeResult:
        assert self.redirect is not None
        return self.redirect

    async def form_post(self, path: str, data: dict[str, str | list[str]]) -> httpx2.Response:
        page = await self.web.get(path)
        fields = dict(HIDDEN.findall(page.text))
        return await self.web.post(path, data={**fields, **data})


def test_oauth_client_from_discovery_to_revocation(site_url, committed):
    account = Account.objects.create_user(username="owner", password=PASSWORD)
    actor = factories.Actor.for_session(account.id)
    garden = factories.notebook(actor, "Garden")
    diary = factories.notebook(actor, "Diary")
    factories.note(actor, "Diary: the tomatoes made me happy today.", notebook_id=diary.id)
    transcript: list[str] = []

    async def run() -> None:
        owner = Owner(site_url, transcript)
        storage = MemoryStorage()
        provider = OAuthClientProvider(
            server_url=f"{site_url}/mcp",
            client_metadata=OAuthClientMetadata(
                client_name="SDK agent", redirect_uris=["http://127.0.0.1/callback"],
                grant_types=["authorization_code", "refresh_token"],
                token_endpoint_auth_method="none"),
            storage=storage, redirect_handler=owner.consent, callback_handler=owner.callback)
        http = httpx2.AsyncClient(auth=provider, timeout=60)
        async with http, Client(streamable_http_client(f"{site_url}/mcp",
                                                       http_client=http)) as client:
            transcript.append(f"registered client {storage.client.client_id}; token "
                              f"issued ({storage.tokens.token_type})")
            listed = await client.list_tools()
            transcript.append(f"tools/list → {len(listed.tools)} tools")
            first = await client.call_tool("remember", {
                "content": "Tomatoes need staking in June.", "kind": "fact",
                "notebookId": str(garden.id)})
            details = first.structured_content
            assert first.is_error and details["code"] == "connection_required"
            assert details["clientId"] == storage.client.client_id
            transcript.append(f"tools/call remember → isError {details['code']}: "
                              f"{details['approvalUrl']}")

            approval = details["approvalUrl"]
            path = urlsplit(approval).path + "?" + urlsplit(approval).query
            approved = await owner.form_post(path, {
                "can_write": "on", "scope": "some", "notebooks": [str(garden.id)]})
            assert approved.status_code == 302, approved.text[:300]
            transcript.append("owner approved with a one-notebook grant (Garden)")

            second = await client.call_tool("remember", {
                "content": "Tomatoes need staking in June.", "kind": "fact",
                "notebookId": str(garden.id)})
            assert second.is_error is False
            transcript.append(f"tools/call remember → saved note "
                              f"{second.structured_content['note']['versionedId']}")
            found = await client.call_tool("recall", {"query": "tomatoes"})
            contents = [hit["note"]["content"] for hit in found.structured_content["data"]]
            assert contents == ["Tomatoes need staking in June."]  # the Diary stays hidden
            transcript.append(f"tools/call recall 'tomatoes' → {contents}")

            connections = await owner.web.get("/v1/connections")
            [oauth] = [c for c in connections.json()["data"] if c["kind"] == "oauth"]
            page = await owner.web.get("/connections/")
            token = dict(HIDDEN.findall(page.text))["csrfmiddlewaretoken"]
            gone = await owner.web.post(urljoin(site_url, f"/connections/{oauth['id']}/revoke"),
                                        data={"csrfmiddlewaretoken": token})
            assert gone.status_code == 302
            transcript.append("owner revoked the connection")

            owner.redirect = None
            after = await client.call_tool("recall", {"query": "tomatoes"})
            assert after.is_error is True
            assert after.structured_content["code"] == "connection_required"
            assert after.structured_content["approvalUrl"] != approval
            transcript.append("next tools/call → refused: the old token is gone; the client "
                              "signed in again and must be approved anew "
                              f"({after.structured_content['code']})")
        await owner.web.aclose()

    asyncio.run(run())
    print("\n".join(["", "SDK OAuth transcript:", *[f"  {i}. {line}" for i, line in
                                                     enumerate(transcript, 1)]]))
