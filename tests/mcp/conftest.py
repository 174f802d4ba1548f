"""A fresh `grove serve --port N` with nothing else set, as a newcomer starts it, shared
by the tests that connect real clients to it: the owner account created through the
setup form, notebooks and notes saved over REST with a key from `grove key create`."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from tests.grove.runtime.processes import (
    CSRF,
    OWNER_PASSWORD,
    Serve,
    make_home,
    owner_and_key,
    remove_home,
)

PASSWORD = OWNER_PASSWORD


@dataclass
class Served:
    serve: Serve
    key: str  # an API key with every notebook and Personal
    notebooks: dict[str, str] = field(default_factory=dict)  # name → id

    @property
    def url(self) -> str:
        return self.serve.url

    def api(self, method: str, path: str, **kwargs) -> httpx.Response:
        return httpx.request(method, self.url + path, timeout=30,
                             headers={"Authorization": f"Bearer {self.key}"}, **kwargs)


def sign_in(web: httpx.Client) -> None:
    page = web.get("/login/")
    answer = web.post("/login/", data={"csrfmiddlewaretoken": CSRF.search(page.text).group(1),
                                       "username": "owner", "password": PASSWORD})
    assert answer.status_code == 302, answer.text[:300]


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    home = make_home()
    serve = Serve(home)
    try:
        serve.wait_ready(timeout=180)
        ready = Served(serve=serve, key=owner_and_key(serve, "setup"))
        for name in ("Garden", "Diary"):
            answer = ready.api("POST", "/v1/notebooks", json={"name": name})
            assert answer.status_code == 201, answer.text
            ready.notebooks[name] = answer.json()["data"]["id"]
        diary = ready.api("POST", "/v1/notes", json={
            "content": "Diary: the tomatoes made me happy today.", "kind": "fact",
            "notebookId": ready.notebooks["Diary"]})
        assert diary.status_code == 201, diary.text
        yield ready
    finally:
        if serve.proc.poll() is None:
            serve.stop(signal.SIGTERM)
        remove_home(home)


def pending_client_token(served: Served, name: str = "Inspector test") -> str:
    """An access token of a freshly registered OAuth client the owner has not approved:
    the code flow driven over HTTP (this is not the consent test — that one runs in
    Chromium, tests/mcp/test_oauth_browser.py)."""
    from urllib.parse import parse_qs, urlencode, urlsplit

    from tests.grove.identity.oauth_helpers import pkce

    redirect = "http://127.0.0.1:9/callback"
    client_id = httpx.post(f"{served.url}/o/register/", timeout=30, json={
        "client_name": name, "redirect_uris": [redirect], "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"]}).json()["client_id"]
    verifier, challenge = pkce()
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect,
             "code_challenge": challenge, "code_challenge_method": "S256", "state": "s",
             "scope": "mcp", "resource": f"{served.url}/mcp"}
    with httpx.Client(base_url=served.url, timeout=30) as web:
        sign_in(web)
        path = "/o/authorize/?" + urlencode(query)
        page = web.get(path)
        answer = web.post(path, data={**query, "allow": "Authorize",
                                      "csrfmiddlewaretoken": CSRF.search(page.text).group(1)})
        assert answer.status_code == 302, answer.text[:300]
        code = parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]
    tokens = httpx.post(f"{served.url}/o/token/", timeout=30, data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": redirect,
        "client_id": client_id, "code_verifier": verifier}).json()
    return tokens["access_token"]


@pytest.fixture
def catalog(settings) -> Iterator[None]:
    """The test-only provider and prompt (tests/mcp/catalog_fixtures.py) before the real
    modules, in this process (the Django test client and the `site_url` server)."""
    from grove.interfaces.mcp_catalog import prompts, resource_providers
    from grove.interfaces.mcp_tools import tools

    def forget() -> None:
        tools.cache_clear()
        resource_providers.cache_clear()
        prompts.cache_clear()

    settings.GROVE_MCP_TOOL_MODULES = ["tests.mcp.catalog_fixtures",
                                       *settings.GROVE_MCP_TOOL_MODULES]
    forget()
    yield
    forget()


@pytest.fixture
def pending_token(db) -> str:
    """An access token of an OAuth client the owner has not approved (the code flow
    through Django's test client): authenticated, and nothing granted yet."""
    from django.test import Client

    from grove.models import Account
    from tests.grove.identity.oauth_helpers import consent, exchange, new_flow, register

    owner = Account.objects.create_user(username="owner", password=PASSWORD)
    web = Client()
    web.force_login(owner)
    flow = new_flow(register(name="Pending agent"))
    status, tokens = exchange(flow, consent(web, flow)["code"])
    assert status == 200, tokens
    return tokens["access_token"]
