"""A read of everything the runtime database role may read yields no working secret.

One of each bearer secret is made for real against the live test server — a website
session (signed in through the login form), an API key, an OAuth access and refresh
token, an unredeemed authorization code, a registration access token and a confidential
client's secret, a share link — then every table the runtime role (the `default`
connection) may SELECT is read whole, outside any tenant and inside the account's, and
every value found is tried as each kind of secret against the server: as the session
cookie (not signed in), as a bearer token on /mcp and /v1 and on the client's
registration (401), as a refresh token and as the code with the right PKCE verifier
(invalid_grant), as a share link (404). The real secrets still work afterwards, so a
value that worked could not have hidden behind a broken server."""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import pytest
from django.db import connection

from grove.identity import services
from grove.kernel.actor import Actor
from grove.kernel.tenancy import tenant
from grove.models import Account
from tests.grove.identity.oauth_helpers import REDIRECT, Flow, new_flow
from tests.grove.runtime.processes import CSRF, OWNER_PASSWORD

pytestmark = pytest.mark.slow


def _sign_in(web: httpx.Client) -> str:
    page = web.get("/login/")
    answer = web.post("/login/", data={"csrfmiddlewaretoken": CSRF.search(page.text).group(1),
                                       "username": "owner", "password": OWNER_PASSWORD})
    assert answer.status_code == 302, answer.text[:300]
    return web.cookies["sessionid"]


def _register(site: str, **metadata: Any) -> dict[str, Any]:
    answer = httpx.post(f"{site}/o/register/", timeout=30, json={
        "client_name": "At rest", "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"], **metadata})
    assert answer.status_code == 201, answer.text
    return answer.json()


def _consent(web: httpx.Client, flow: Flow) -> str:
    """The consent page in the signed-in browser session, Continue; the code."""
    url = flow.authorize_query()
    page = web.get(url)
    assert page.status_code == 200, page.text[:300]
    form = {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}
    form.update(csrfmiddlewaretoken=CSRF.search(page.text).group(1), allow="Authorize")
    answer = web.post(url, data=form)
    assert answer.status_code == 302, answer.text[:300]
    return parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]


def _exchange(site: str, flow: Flow, code: str, auth: tuple[str, str] | None = None
              ) -> httpx.Response:
    return httpx.post(f"{site}/o/token/", timeout=30, auth=auth, data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": flow.redirect,
        "client_id": flow.client_id, "code_verifier": flow.verifier})


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
        if value[:1] in "[{":
            try:
                yield from _leaves(json.loads(value))
            except ValueError:
                pass
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(key)
            yield from _leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, bytes | memoryview):
        raw = bytes(value)
        yield raw.hex()
        yield base64.urlsafe_b64encode(raw).decode().rstrip("=")
    elif isinstance(value, uuid.UUID):
        yield str(value)
        yield value.hex


def _readable_tables() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm') "
            "AND has_table_privilege(c.oid, 'SELECT') ORDER BY 1")
        return [row[0] for row in cursor.fetchall()]


def _everything_readable(account_id: uuid.UUID) -> tuple[set[str], list[str]]:
    """Every value of every row the runtime role can read, outside any tenant and in the
    account's own (where row-level security shows its rows); and the tables read."""
    tables = _readable_tables()
    values: set[str] = set()

    def read_all() -> None:
        with connection.cursor() as cursor:
            for table in tables:
                cursor.execute(f'SELECT * FROM "{table}"')  # noqa: S608 - catalog names
                for row in cursor.fetchall():
                    for column in row:
                        values.update(_leaves(column))

    read_all()
    with tenant(account_id):
        read_all()
    return values, tables


@pytest.fixture
def generous_limits(settings):
    settings.GROVE_ADDRESS_RATE_LIMIT = 100_000
    settings.GROVE_PUBLIC_RATE_LIMIT = 100_000
    settings.GROVE_API_RATE_LIMIT = 100_000


def test_no_value_the_runtime_role_can_read_works_as_a_secret(site_url, committed,
                                                              generous_limits):
    site = site_url
    owner = Account.objects.create_user(username="owner", password=OWNER_PASSWORD)
    actor = Actor.for_session(owner.id)

    web = httpx.Client(base_url=site, timeout=30)
    session_cookie = _sign_in(web)
    api_key = services.connection_create_key(actor=actor, name="laptop", all_notebooks=True,
                                             personal=True).key
    from notebooks.services import note_remember
    from sharing.services import share_create

    note = note_remember(actor=actor, operation_id=uuid.uuid4(), kind="fact",
                         content="The shed key hangs behind the door.")
    share_link = share_create(actor=actor, note_id=note.note.id)[0].token

    public = _register(site, token_endpoint_auth_method="none")
    flow = new_flow(public["client_id"])
    tokens = _exchange(site, flow, _consent(web, flow))
    assert tokens.status_code == 200, tokens.text
    access, refresh = tokens.json()["access_token"], tokens.json()["refresh_token"]
    pending = new_flow(public["client_id"])
    unredeemed_code = _consent(web, pending)
    confidential = _register(site)  # RFC 7591's default: client_secret_basic
    secrets = {"session": session_cookie, "api key": api_key, "access token": access,
               "refresh token": refresh, "authorization code": unredeemed_code,
               "registration token": public["registration_access_token"],
               "client secret": confidential["client_secret"], "share link": share_link}

    values, tables = _everything_readable(owner.id)
    assert {"django_session", "oauth2_provider_accesstoken", "oauth2_provider_refreshtoken",
            "oauth2_provider_grant", "grove_connection", "sharing_share"} <= set(tables)

    # No secret is stored as it is, in any column or inside any JSON.
    stored = {name for name, secret in secrets.items()
              if any(secret in value for value in values)}
    assert stored == set()

    # No stored value works as any of them.
    candidates = sorted(v for v in values if 8 <= len(v) <= 512 and not re.search(r"\s", v))
    mcp_ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    management = f"/o/register/{public['client_id']}/"
    with httpx.Client(base_url=site, timeout=30) as visitor:
        for value in candidates:
            visitor.cookies.clear()
            visitor.cookies.set("sessionid", value)
            page = visitor.get("/settings/")
            assert page.status_code == 302 and "/login/" in page.headers["Location"], value
            bearer = {"Authorization": f"Bearer {value}"}
            assert visitor.post("/mcp", json=mcp_ping, headers=bearer).status_code == 401, value
            assert visitor.get("/v1/whoami", headers=bearer).status_code == 401, value
            assert visitor.get(management, headers=bearer).status_code == 401, value
            refreshed = visitor.post("/o/token/", data={
                "grant_type": "refresh_token", "refresh_token": value,
                "client_id": public["client_id"]})
            assert refreshed.status_code == 400, value
            assert refreshed.json()["error"] == "invalid_grant", value
            redeemed = visitor.post("/o/token/", data={
                "grant_type": "authorization_code", "code": value,
                "redirect_uri": REDIRECT, "client_id": public["client_id"],
                "code_verifier": pending.verifier})
            assert redeemed.status_code == 400, value
            assert redeemed.json()["error"] == "invalid_grant", value
            shared = visitor.get(f"/public/shares/{quote(value, safe='')}")
            assert shared.status_code == 404, value

    # The real ones worked all along.
    assert visitor_signed_in(site, session_cookie)
    assert httpx.post(f"{site}/mcp", json=mcp_ping, timeout=30,
                      headers={"Authorization": f"Bearer {access}"}).status_code == 200
    assert httpx.get(f"{site}/v1/whoami", timeout=30,
                     headers={"Authorization": f"Bearer {api_key}"}).status_code == 200
    assert httpx.get(f"{site}{management}", timeout=30, headers={
        "Authorization": f"Bearer {public['registration_access_token']}"}).status_code == 200
    assert httpx.get(f"{site}/public/shares/{share_link}", timeout=30).status_code == 200
    assert _exchange(site, pending, unredeemed_code).status_code == 200
    assert httpx.post(f"{site}/o/token/", timeout=30, data={
        "grant_type": "refresh_token", "refresh_token": refresh,
        "client_id": public["client_id"]}).status_code == 200
    print(f"\n{len(tables)} tables read, {len(values)} values, {len(candidates)} tried "
          "as every kind of secret")


def visitor_signed_in(site: str, cookie: str) -> bool:
    with httpx.Client(base_url=site, timeout=30) as browser:
        browser.cookies.set("sessionid", cookie)
        return browser.get("/settings/").status_code == 200
