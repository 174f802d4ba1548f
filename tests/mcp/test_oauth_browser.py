"""OAuth consent in real Chromium, CSP enforced (never bypassed), against a fresh
`grove serve --port N` with nothing else set.

Chromium applies the consent page's `form-action` to the redirect that answers the
*Continue* POST, so the page must allow exactly the client's validated redirect target.
The main test is an app's whole first contact: the official MCP SDK's
`OAuthClientProvider` with a loopback callback, the owner signing in and clicking
Continue in Chromium, the callback receiving `code` and `iss`, `connection_required`
with the approval link, approval on the Connections page, tool calls within the grant,
revocation. The others send the browser to an https app (the navigation request is
seen leaving Grove) and to an app's own scheme.

Playwright's async API runs in a thread of its own: pytest-playwright's sync API keeps
an event loop marked as running in the main thread once a browser test has run."""

from __future__ import annotations

import asyncio
import http.server
import json
import re
import secrets
import threading
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
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
from playwright.async_api import Page, async_playwright
from playwright.async_api import expect as async_expect

from tests.grove.identity.oauth_helpers import pkce
from tests.mcp.conftest import PASSWORD, Served, sign_in
from tests.mcp.helpers import error_of

pytestmark = pytest.mark.slow


def run_in_thread(main: Callable[[], Awaitable[Any]]) -> Any:
    """asyncio.run(main()) in a fresh thread; its exception re-raised here."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=600)
    assert not thread.is_alive(), "the browser flow did not finish in 10 minutes"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


class Callback:
    """The app's loopback redirect listener (RFC 8252): records each query it gets."""

    def __init__(self) -> None:
        self.queries: list[dict[str, str]] = []
        self.arrived = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if urlsplit(self.path).path != "/callback":  # e.g. the browser's favicon
                    self.send_response(204)
                    self.end_headers()
                    return
                outer.queries.append({k: v[0] for k, v in
                                      parse_qs(urlsplit(self.path).query).items()})
                outer.arrived.set()
                body = b"<p>Signed in. You can close this window.</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.uri = f"http://127.0.0.1:{self.port}/callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    async def next_query(self) -> dict[str, str]:
        arrived = await asyncio.to_thread(self.arrived.wait, 30)
        assert arrived, "the browser never reached the app's callback"
        self.arrived.clear()
        return self.queries[-1]

    def close(self) -> None:
        self.server.shutdown()


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


def watch(page: Page) -> list[str]:
    """Console errors — every CSP violation is one — and uncaught page errors."""
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    return problems


async def sign_in_if_asked(page: Page) -> None:
    if "/login/" in page.url:
        await page.get_by_label("Username").fill("owner")
        await page.get_by_label("Password").fill(PASSWORD)
        await page.get_by_role("button", name="Sign in").click()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_an_app_connects_by_oauth_in_chromium(served: Served, browser_type_launch_args,
                                              host: str):
    """`host`: the app is given http://<host>:N/mcp — the printed address, or localhost
    (metadata and challenge then name localhost; the issuer stays the served address)."""
    base = served.url.replace("127.0.0.1", host)
    issuer = served.url
    agent = f"Grove test agent ({host})"
    planted = f"Tomatoes need staking in June ({host})."
    callback = Callback()
    transcript: list[str] = []

    async def main() -> None:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(**browser_type_launch_args)
            # The window the app opens for consent: not signed in to Grove yet.
            app_window = await (await browser.new_context()).new_page()
            app_problems = watch(app_window)

            async def consent(authorization_url: str) -> None:
                assert authorization_url.startswith(f"{issuer}/o/authorize/?")
                await app_window.goto(authorization_url)
                await sign_in_if_asked(app_window)
                await async_expect(app_window.get_by_role("heading")).to_have_text(
                    f"Connect “{agent}” to Grove?")
                await async_expect(app_window.locator(".redirect-host")).to_have_text(
                    f"127.0.0.1:{callback.port}")
                await app_window.get_by_role("button", name="Continue").click()
                await app_window.wait_for_url(f"{callback.uri}?**")
                transcript.append("consent: signed in, Continue → the app's callback")

            async def code() -> AuthorizationCodeResult:
                query = await callback.next_query()
                assert query["iss"] == issuer  # RFC 9207, the served address
                return AuthorizationCodeResult(code=query["code"], state=query["state"],
                                               iss=query["iss"])

            storage = MemoryStorage()
            provider = OAuthClientProvider(
                server_url=f"{base}/mcp",
                client_metadata=OAuthClientMetadata(
                    client_name=agent, redirect_uris=[callback.uri],
                    grant_types=["authorization_code", "refresh_token"],
                    token_endpoint_auth_method="none"),
                storage=storage, redirect_handler=consent, callback_handler=code)
            http = httpx2.AsyncClient(auth=provider, timeout=60)
            async with http, Client(streamable_http_client(f"{base}/mcp",
                                                           http_client=http)) as client:
                tools = await client.list_tools()
                assert len(tools.tools) >= 13
                first = await client.call_tool("remember", {
                    "content": planted, "kind": "fact",
                    "notebookId": served.notebooks["Garden"]})
                assert first.is_error
                error = error_of(first)
                assert error["code"] == "connection_required"
                approval = error["approvalUrl"]
                assert approval.startswith(f"{issuer}/connections/")  # the served address
                assert approval in first.content[0].text
                assert error["clientId"] == storage.client.client_id
                transcript.append(f"remember → connection_required: {approval}")

                # The owner, in their own browser, approves with a one-notebook grant.
                owner = await (await browser.new_context()).new_page()
                owner_problems = watch(owner)
                await owner.goto(f"{issuer}/connections/")
                await sign_in_if_asked(owner)
                pending = owner.locator("[data-pending]", has_text=agent)
                await async_expect(pending).to_be_visible()
                await pending.get_by_role("link", name="Review").click()
                await async_expect(owner.locator("#approve")).to_contain_text(
                    storage.client.client_id)
                await async_expect(owner.locator("#approve")).to_contain_text(
                    f"127.0.0.1:{callback.port}")
                # Least privilege: the form starts read-only with no notebook ticked.
                await async_expect(owner.get_by_label("May save and change notes")) \
                    .not_to_be_checked()
                await owner.get_by_label("May save and change notes").check()
                await owner.get_by_label("Garden").check()
                await owner.get_by_role("button", name="Approve").click()
                await async_expect(owner.get_by_text(f"Approved {agent}.")) \
                    .to_be_visible()
                row = owner.locator("tr", has_text=agent)
                await async_expect(row.locator(
                    f'code[title="{storage.client.client_id}"]')).to_be_visible()
                await async_expect(row).to_contain_text(f"back to 127.0.0.1:{callback.port}")
                transcript.append("owner approved on the Connections page (Garden, write)")

                second = await client.call_tool("remember", {
                    "content": planted, "kind": "fact",
                    "notebookId": served.notebooks["Garden"]})
                assert not second.is_error, second.content
                found = await client.call_tool("recall", {"query": "tomatoes"})
                assert not found.is_error, found.content
                contents = [item["content"] for item in found.structured_content["data"]]
                assert planted in contents and not any("Diary" in c for c in contents)
                outside = await client.call_tool("remember", {
                    "content": "Should not land.", "kind": "fact",
                    "notebookId": served.notebooks["Diary"]})
                assert error_of(outside)["code"] == "notebook_not_found"
                transcript.append("tools within the grant: remember + recall; Diary refused")

                # Revoking asks first, then ends the app's access for good.
                await row.get_by_role("link", name="Revoke").click()
                await async_expect(owner.get_by_role("heading")).to_contain_text(
                    f"Revoke “{agent}”?")
                await owner.get_by_role("button", name="Revoke for good").click()
                await async_expect(owner.locator("tr", has_text=agent)) \
                    .to_contain_text("revoked")
                after = await client.call_tool("recall", {"query": "tomatoes"})
                assert after.is_error
                assert error_of(after)["code"] == "connection_required"
                assert error_of(after)["approvalUrl"] != approval
                transcript.append("revoked: the app signed in again and waits for approval")
                assert owner_problems == []
            assert app_problems == []
            await browser.close()

    try:
        run_in_thread(main)
    finally:
        callback.close()
    print("\n".join(["", "OAuth in Chromium:", *transcript]))


# -- the redirect leaves Grove, for an https app and an app's own scheme -------------------


def authorization_url(served: Served, redirect_uri: str, name: str) -> tuple[str, str]:
    registered = httpx.post(f"{served.url}/o/register/", timeout=30, json={
        "client_name": name, "redirect_uris": [redirect_uri],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"]})
    assert registered.status_code == 201, registered.text
    _verifier, challenge = pkce()
    state = secrets.token_urlsafe(16)
    query = urlencode({"response_type": "code", "client_id": registered.json()["client_id"],
                       "redirect_uri": redirect_uri, "code_challenge": challenge,
                       "code_challenge_method": "S256", "state": state, "scope": "mcp",
                       "resource": f"{served.url}/mcp"})
    return f"{served.url}/o/authorize/?{query}", state


async def signed_in_consent(browser: Any, served: Served, url: str) -> tuple[Page, list[str]]:
    page = await (await browser.new_context()).new_page()
    problems = watch(page)
    await page.goto(url)
    await sign_in_if_asked(page)
    await async_expect(page.get_by_role("button", name="Continue")).to_be_visible()
    return page, problems


CLAUDE = "https://claude.ai/api/mcp/auth_callback"
CURSOR = "cursor://anysphere.cursor-mcp/oauth/callback"


def answer_at_claude(served: Served, launch_args: dict, url: str,
                     button: str) -> tuple[str, str]:
    """Open the consent page at `url` signed in, click `button`; the URL of the one
    navigation request that left Grove for claude.ai (a route stands in for it) and the
    consent page's CSP header. No console error (a CSP violation would be one)."""

    async def main() -> tuple[str, str]:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(**launch_args)
            page, problems = await signed_in_consent(browser, served, url)
            header = (await page.reload()).headers["content-security-policy"]
            left: list[str] = []

            async def arrive(route: Any) -> None:
                left.append(route.request.url)
                await route.fulfill(status=200, content_type="text/html", body="<p>ok</p>")

            await page.route("https://claude.ai/**", arrive)
            await page.get_by_role("button", name=button).click()
            await page.wait_for_url(f"{CLAUDE}?**")
            assert problems == []
            await browser.close()
            assert len(left) == 1, left
            return left[0], header

    return run_in_thread(main)


def test_consent_sends_the_browser_on_to_an_https_app(served: Served,
                                                       browser_type_launch_args):
    url, state = authorization_url(served, CLAUDE, "Claude")
    arrived, header = answer_at_claude(served, browser_type_launch_args, url, "Continue")
    query = {k: v[0] for k, v in parse_qs(urlsplit(arrived).query).items()}
    assert arrived.startswith(CLAUDE + "?")
    assert query["state"] == state and query["iss"] == served.url and query["code"]
    # Exactly the app's origin is added to form-action, nothing more.
    directive = re.search(r"form-action ([^;]+)", header).group(1).split()
    assert directive == ["'self'", "https://claude.ai"]


def test_consent_sends_the_browser_on_to_an_apps_own_scheme(served: Served,
                                                             browser_type_launch_args):
    url, _state = authorization_url(served, CURSOR, "Cursor")

    async def main() -> tuple[list[str], list[str], str]:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(**browser_type_launch_args)
            page, problems = await signed_in_consent(browser, served, url)
            header = (await page.reload()).headers["content-security-policy"]
            # The navigation request that leaves Grove for the app's scheme (Chromium
            # hands it to the OS, which has no handler here, and aborts it).
            asked: list[str] = []
            page.on("request", lambda request: asked.append(request.url))
            await page.get_by_role("button", name="Continue").click()
            for _ in range(100):  # the navigation is handed to the OS, not loaded
                if any(u.startswith("cursor:") for u in asked) or problems:
                    break
                await asyncio.sleep(0.1)
            await browser.close()
            return asked, problems, header

    asked, problems, header = run_in_thread(main)
    directive = re.search(r"form-action ([^;]+)", header).group(1).split()
    assert directive == ["'self'", "cursor:"]
    assert not [p for p in problems if "Content Security Policy" in p], problems
    handed = [u for u in asked if u.startswith(CURSOR + "?")]
    assert handed, (asked, problems)
    query = {k: v[0] for k, v in parse_qs(urlsplit(handed[0]).query).items()}
    assert query["code"] and query["iss"] == served.url


def test_error_redirects_carry_the_issuer(served: Served, browser_type_launch_args):
    """Cancel on the consent page: the app gets access_denied, with `iss` (RFC 9207)."""
    url, state = authorization_url(served, CLAUDE, "Claude")
    arrived, _header = answer_at_claude(served, browser_type_launch_args, url, "Cancel")
    query = {k: v[0] for k, v in parse_qs(urlsplit(arrived).query).items()}
    assert query == {"error": "access_denied", "state": state, "iss": served.url}


def test_the_served_address_is_the_public_one(served: Served):
    """No GROVE_BASE_URL: the challenge, both metadata documents and the Origin check
    name the address `grove serve --port N` listens on."""
    base = served.url
    assert "GROVE_BASE_URL" not in served.serve.output()  # nothing to report
    unauthenticated = httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1,
                                                      "method": "ping"})
    assert unauthenticated.status_code == 401
    challenge = unauthenticated.headers["WWW-Authenticate"]
    assert f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"' in challenge
    assert 'scope="mcp"' in challenge
    resource = httpx.get(f"{base}/.well-known/oauth-protected-resource/mcp").json()
    assert resource["resource"] == f"{base}/mcp"
    assert resource["authorization_servers"] == [base]
    server = httpx.get(f"{base}/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == base
    assert server["authorization_endpoint"] == f"{base}/o/authorize/"
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Authorization": f"Bearer {served.key}"}
    same = httpx.post(f"{base}/mcp", json=ping, headers={**headers, "Origin": base})
    assert same.status_code == 200, same.text
    assert same.json()["result"] == {}
    foreign = httpx.post(f"{base}/mcp", json=ping,
                         headers={**headers, "Origin": "http://evil.example"})
    assert foreign.status_code == 403
    assert json.loads(foreign.text)["error"]["code"] == -32600
    # A share link made on the website names it too.
    with httpx.Client(base_url=base, timeout=30) as web:
        sign_in(web)
        note = served.api("POST", "/v1/notes", json={"content": "Shared recipe.",
                                                     "kind": "fact"}).json()["data"]
        shared = web.post("/v1/shares", json={"noteId": note["id"]},
                          headers={"X-CSRFToken": web.cookies["csrftoken"], "Origin": base})
        assert shared.status_code == 201, shared.text
        url = shared.json()["data"]["url"]
        assert url.startswith(f"{base}/public/shares/")
        assert "Shared recipe." in httpx.get(url).text
