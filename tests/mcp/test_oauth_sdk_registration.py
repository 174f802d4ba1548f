"""What a dynamic client registration makes, as docs/agents.md says ("OAuth details"):
RFC 7591 decides by `token_endpoint_auth_method` — `none` is a public client (PKCE, no
secret); `client_secret_basic`, `client_secret_post` or nothing at all (RFC 7591's
default is `client_secret_basic`) is a confidential client whose secret is returned once.
Each registers through the official MCP SDK's `OAuthClientProvider` against the live
test server, signs in (the consent page posted by the owner's browser session, over
HTTP: the Chromium flow is tests/mcp/test_oauth_browser.py) and lists the tools."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from oauth2_provider.models import Application

from grove.models import Account
from tests.grove.runtime.processes import CSRF, OWNER_PASSWORD
from tests.mcp.test_oauth_browser import MemoryStorage, run_in_thread

pytestmark = pytest.mark.slow

CALLBACK = "http://127.0.0.1:9/callback"  # never reached: the owner's answer is read here


def _owner_browser(site: str) -> httpx.Client:
    Account.objects.create_user(username="owner", password=OWNER_PASSWORD)
    web = httpx.Client(base_url=site, timeout=30)
    page = web.get("/login/")
    answer = web.post("/login/", data={"csrfmiddlewaretoken": CSRF.search(page.text).group(1),
                                       "username": "owner", "password": OWNER_PASSWORD})
    assert answer.status_code == 302, answer.text[:300]
    return web


DOCS = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def documented_client_types() -> dict[str | None, str]:
    """docs/agents.md's table: `token_endpoint_auth_method` (None: left out) → the
    client Grove makes (`public` or `confidential`)."""
    text = DOCS.read_text()
    table = text[text.index("| `token_endpoint_auth_method` | the client Grove makes |"):]
    rows = re.findall(r"^\s*\| (`[a-z_]+`|left out[^|]*) \| (public|confidential)\b",
                      table.split("\n\n")[0], re.MULTILINE)
    return {(None if method.startswith("left out") else method.strip("`")): kind
            for method, kind in rows}


def test_the_docs_name_every_way_to_register():
    assert set(documented_client_types()) == {None, "none", "client_secret_basic",
                                              "client_secret_post"}


@pytest.mark.parametrize("method", [None, "client_secret_basic", "client_secret_post",
                                    "none"])
def test_a_registration_makes_the_client_the_docs_describe(site_url, committed, method):
    client_type = documented_client_types()[method]
    named = "none" if client_type == Application.CLIENT_PUBLIC else "client_secret_basic"
    requested = {} if method is None else {"token_endpoint_auth_method": method}
    web = _owner_browser(site_url)
    answered: dict[str, str] = {}

    async def consent(authorization_url: str) -> None:
        page = web.get(authorization_url)
        assert page.status_code == 200, page.text[:300]
        form = {k: v[0] for k, v in parse_qs(urlsplit(authorization_url).query).items()}
        form.update(csrfmiddlewaretoken=CSRF.search(page.text).group(1), allow="Authorize")
        answer = web.post(authorization_url, data=form)
        assert answer.status_code == 302, answer.text[:300]
        answered.update({k: v[0] for k, v in
                         parse_qs(urlsplit(answer.headers["Location"]).query).items()})

    async def code() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=answered["code"], state=answered["state"],
                                       iss=answered["iss"])

    storage = MemoryStorage()
    metadata = OAuthClientMetadata(client_name="SDK defaults", redirect_uris=[CALLBACK],
                                   **requested)
    provider = OAuthClientProvider(server_url=f"{site_url}/mcp", client_metadata=metadata,
                                   storage=storage, redirect_handler=consent,
                                   callback_handler=code)

    async def main() -> int:
        http = httpx2.AsyncClient(auth=provider, timeout=60)
        async with http, Client(streamable_http_client(f"{site_url}/mcp",
                                                       http_client=http)) as client:
            return len((await client.list_tools()).tools)

    assert run_in_thread(main) >= 13
    registered = storage.client
    app = Application.objects.get(client_id=registered.client_id)
    assert app.client_type == client_type
    assert registered.token_endpoint_auth_method == named
    if client_type == Application.CLIENT_PUBLIC:
        assert registered.client_secret is None
        return
    # Confidential: the secret was shown once and is kept only as a hash; refreshing
    # needs it.
    assert registered.client_secret and registered.client_secret not in app.client_secret
    refresh = {"grant_type": "refresh_token", "refresh_token": storage.tokens.refresh_token}
    without = httpx.post(f"{site_url}/o/token/", data={**refresh,
                                                      "client_id": registered.client_id})
    assert without.status_code == 401 and without.json()["error"] == "invalid_client"
    with_secret = httpx.post(f"{site_url}/o/token/", data=refresh,
                             auth=(registered.client_id, registered.client_secret))
    assert with_secret.status_code == 200, with_secret.text
