"""OAuth clients on /mcp need the owner's approval (SPEC §5): an authenticated but
unapproved client may initialize and list tools; every tool call answers
`connection_required` with the approval link and client id (HTTP 200, isError); the
owner approves with a grant; edits and revocation invalidate requests; after revocation
only a token issued later can ask again. Adversarial token cases: wrong audience,
expired, the registration token."""

from __future__ import annotations

import json
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken

from grove.identity import selectors, services
from grove.kernel.tenancy import tenant
from grove.models import Account, Connection
from tests import factories
from tests.grove.identity.oauth_helpers import REDIRECT, consent, exchange, new_flow, register
from tests.mcp.helpers import error_of

pytestmark = pytest.mark.django_db
PASSWORD = "a long enough passphrase 42"  # noqa: S105


@pytest.fixture
def owner_account() -> Account:
    return Account.objects.create_user(username="owner", password=PASSWORD)


@pytest.fixture
def owner_web(owner_account) -> Client:
    client = Client()
    client.force_login(owner_account)
    return client


def token_for(owner_web: Client, client_id: str, redirect: str = REDIRECT) -> dict:
    flow = new_flow(client_id, redirect)
    status, tokens = exchange(flow, consent(owner_web, flow)["code"])
    assert status == 200
    return tokens


def rpc(token: str, method: str, params: dict | None = None) -> tuple[int, dict, dict]:
    response = Client().post("/mcp", data=json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}),
        content_type="application/json", headers={"Authorization": f"Bearer {token}"})
    body = response.json() if response.content else {}
    return response.status_code, body, dict(response.headers)


def call(token: str, tool: str, arguments: dict) -> dict:
    status, body, _ = rpc(token, "tools/call", {"name": tool, "arguments": arguments})
    assert status == 200, body
    return body["result"]


def approve(owner_web: Client, url: str, *, notebooks: list[str], write: bool = True):
    parts = urlsplit(url)
    request_id = parse_qs(parts.query)["request"][0]
    form = {"request": request_id, "scope": "some", "notebooks": notebooks}
    if write:
        form["can_write"] = "on"
    return owner_web.post(parts.path, form)


def connection_of(account: Account) -> Connection:
    with tenant(account.id):
        return Connection.objects.filter(kind="oauth").order_by("-created_at").first()


def test_unapproved_client_lists_tools_then_gets_connection_required_until_approved(
        owner_account, owner_web):
    actor = factories.Actor.for_session(owner_account.id)
    shared = factories.notebook(actor, "Shared")
    other = factories.notebook(actor, "Other")
    factories.note(actor, "Other walnut note", notebook_id=other.id)
    client_id = register(name="Claude")
    token = token_for(owner_web, client_id)["access_token"]

    status, body, _ = rpc(token, "initialize", {"protocolVersion": "2025-11-25"})
    assert status == 200 and body["result"]["serverInfo"]["name"] == "grove"
    assert len(rpc(token, "tools/list")[1]["result"]["tools"]) >= 13

    refused = call(token, "remember", {"content": "Walnut bread", "kind": "fact",
                                       "notebookId": str(shared.id)})
    assert refused["isError"] is True
    details = error_of(refused)
    assert details["code"] == "connection_required" and details["clientId"] == client_id
    row = connection_of(owner_account)
    assert details["approvalUrl"] == (f"{settings.GROVE_BASE_URL}/connections/{row.id}/approve"
                                      f"?request={row.pending_request['id']}")
    assert row.status == "pending" and row.name == "Claude"
    # The same request is offered while fresh (no new link on every call).
    again = error_of(call(token, "recall", {"query": "walnut"}))
    assert again["approvalUrl"] == details["approvalUrl"]

    page = owner_web.get("/connections/").content.decode()
    assert f'data-pending="{row.id}"' in page and "waits for your approval" in page
    review = owner_web.get(urlsplit(details["approvalUrl"]).path + "?" +
                           urlsplit(details["approvalUrl"]).query)
    assert review.status_code == 200 and "Approve “Claude”?" in review.content.decode()

    done = approve(owner_web, details["approvalUrl"], notebooks=[str(shared.id)])
    assert done.status_code == 302
    saved = call(token, "remember", {"content": "Walnut bread", "kind": "fact",
                                     "notebookId": str(shared.id)})
    assert saved["isError"] is False
    hits = call(token, "recall", {"query": "walnut"})["structuredContent"]["data"]
    assert [h["content"] for h in hits] == ["Walnut bread"]  # Other stays hidden

    # Approving the same request again answers the same, changing nothing.
    assert approve(owner_web, details["approvalUrl"], notebooks=[str(other.id)]).status_code \
        == 302
    assert connection_of(owner_account).grant_notebooks == [shared.id]


def test_an_expired_request_cannot_be_approved(owner_account, owner_web):
    token = token_for(owner_web, register())["access_token"]
    url = error_of(call(token, "recall", {}))["approvalUrl"]
    row = connection_of(owner_account)
    with tenant(owner_account.id):
        Connection.objects.filter(id=row.id).update(pending_request={
            **row.pending_request,
            "expiresAt": (timezone.now() - timedelta(seconds=1)).isoformat()})
    page = owner_web.get(urlsplit(url).path + "?" + urlsplit(url).query).content.decode()
    assert 'data-code="approval_request_expired"' in page
    refused = approve(owner_web, url, notebooks=[])
    assert refused.status_code == 409
    assert connection_of(owner_account).status == "pending"
    fresh = error_of(call(token, "recall", {}))["approvalUrl"]
    assert fresh != url  # a new request after expiry


def test_a_grant_edit_invalidates_the_outstanding_request(owner_account, owner_web):
    token = token_for(owner_web, register())["access_token"]
    url = error_of(call(token, "recall", {}))["approvalUrl"]
    row = connection_of(owner_account)
    services.connection_update(actor=factories.Actor.for_session(owner_account.id),
                               connection_id=row.id,
                               expected_state=services.connection_state(row),
                               personal=True)
    assert approve(owner_web, url, notebooks=[]).status_code == 409


def test_revocation_cuts_off_and_only_a_later_token_can_ask_again(owner_account, owner_web):
    client_id = register()
    tokens = token_for(owner_web, client_id)
    url = error_of(call(tokens["access_token"], "recall", {}))["approvalUrl"]
    assert approve(owner_web, url, notebooks=[]).status_code == 302
    assert call(tokens["access_token"], "recall", {})["isError"] is False
    row = connection_of(owner_account)
    owner_web.post(f"/connections/{row.id}/revoke")

    status, _, headers = rpc(tokens["access_token"], "tools/call",
                             {"name": "recall", "arguments": {}})
    assert status == 401 and 'error="invalid_token"' in headers["WWW-Authenticate"]
    refreshed = Client().post("/o/token/", {"grant_type": "refresh_token",
                                            "refresh_token": tokens["refresh_token"],
                                            "client_id": client_id})
    assert refreshed.status_code == 400  # the client must sign in again

    # Signing in again after the cutoff makes a new pending connection to approve.
    newer = token_for(owner_web, client_id)["access_token"]
    asked = error_of(call(newer, "recall", {}))
    assert asked["code"] == "connection_required"
    assert connection_of(owner_account).id != row.id
    with tenant(owner_account.id):
        assert Connection.objects.get(id=row.id).status == "revoked"


def test_tokens_that_are_not_for_mcp_are_refused(owner_account, owner_web):
    client_id = register()
    tokens = token_for(owner_web, client_id)
    # Another audience (written directly: Grove's endpoints never issue one).
    AccessToken.objects.filter(scope="mcp").update(resource=["https://elsewhere.example/api"])
    status, _, headers = rpc(tokens["access_token"], "initialize")
    assert status == 401 and 'error="invalid_token"' in headers["WWW-Authenticate"]
    # Expired.
    AccessToken.objects.filter(scope="mcp").update(
        resource=[settings.GROVE_MCP_RESOURCE], expires=timezone.now() - timedelta(seconds=1))
    assert rpc(tokens["access_token"], "initialize")[0] == 401
    # The registration token (no resource, another scope).
    registered = Client().post("/o/register/", data=json.dumps({
        "redirect_uris": ["https://x.example/cb"], "token_endpoint_auth_method": "none"}),
        content_type="application/json").json()
    assert rpc(registered["registration_access_token"], "initialize")[0] == 401


def test_another_accounts_client_is_a_separate_connection(owner_account, owner_web):
    client_id = register()
    token_for(owner_web, client_id)
    stranger = Account.objects.create_user(username="stranger", password=PASSWORD)
    web = Client()
    web.force_login(stranger)
    theirs = token_for(web, client_id)["access_token"]
    url = error_of(call(theirs, "recall", {}))["approvalUrl"]
    # The owner cannot see or approve the stranger's pending connection.
    assert owner_web.get(urlsplit(url).path).status_code == 404
    assert approve(owner_web, url, notebooks=[]).status_code == 404


def test_revoking_a_pending_client_invalidates_its_request(owner_account, owner_web):
    token = token_for(owner_web, register())["access_token"]
    url = error_of(call(token, "recall", {}))["approvalUrl"]
    row = connection_of(owner_account)
    owner_web.post(f"/connections/{row.id}/revoke")
    refused = approve(owner_web, url, notebooks=[])
    assert refused.status_code == 409
    assert 'data-code="connection_revoked"' in refused.content.decode()
    with tenant(owner_account.id):
        assert Connection.objects.get(id=row.id).pending_request is None


def test_only_tokens_issued_after_the_revocation_may_ask_again(owner_account, owner_web):
    client_id = register()
    token_for(owner_web, client_id)
    first = services.connection_for_oauth_token(
        account_id=owner_account.id, client_id=client_id, client_name="Agent",
        token_issued_at=timezone.now())
    services.connection_revoke(actor=factories.Actor.for_session(owner_account.id),
                               connection_id=first.id)
    with tenant(owner_account.id):
        cutoff = Connection.objects.get(id=first.id).revoked_at
    older = services.connection_for_oauth_token(
        account_id=owner_account.id, client_id=client_id, client_name="Agent",
        token_issued_at=cutoff - timedelta(seconds=1))
    assert older is None
    newer = services.connection_for_oauth_token(
        account_id=owner_account.id, client_id=client_id, client_name="Agent",
        token_issued_at=cutoff + timedelta(seconds=1))
    assert newer is not None and newer.id != first.id and newer.status == "pending"


def test_a_deactivated_account_s_tokens_stop_working(owner_account, owner_web):
    token = token_for(owner_web, register())["access_token"]
    assert rpc(token, "initialize")[0] == 200
    Account.objects.filter(id=owner_account.id).update(is_active=False)
    assert rpc(token, "initialize")[0] == 401


def test_the_approve_page_starts_read_only_and_deny_refuses_the_app(owner_account,
                                                                    owner_web):
    factories.notebook(factories.Actor.for_session(owner_account.id), "Garden")
    client_id = register(name="Claude")
    token = token_for(owner_web, client_id)["access_token"]
    url = error_of(call(token, "recall", {}))["approvalUrl"]
    page = owner_web.get(urlsplit(url).path + "?" + urlsplit(url).query).content.decode()
    # Anyone can register as "Claude": the client id and the redirect host tell them apart.
    assert f"<code>{client_id}</code>" in page
    assert '<dd class="redirect-host">client.example</dd>' in page
    can_write = page[page.index('name="can_write"') - 120:page.index('name="can_write"') + 80]
    assert "checked" not in can_write  # least privilege: read only until ticked
    assert 'value="deny"' in page

    request_id = parse_qs(urlsplit(url).query)["request"][0]
    denied = owner_web.post(urlsplit(url).path, {"request": request_id, "decision": "deny"})
    assert denied.status_code == 302
    row = connection_of(owner_account)
    assert row.status == "revoked" and row.pending_request is None
    assert not AccessToken.objects.filter(application__client_id=client_id,
                                          user_id=owner_account.id).exists()
    status, _, _ = rpc(token, "tools/call", {"name": "recall", "arguments": {}})
    assert status == 401  # its token ended with the denial


def test_the_connections_page_names_the_client_and_edits_its_grant(owner_account,
                                                                   owner_web):
    actor = factories.Actor.for_session(owner_account.id)
    garden = factories.notebook(actor, "Garden")
    diary = factories.notebook(actor, "Diary")
    factories.note(actor, "Diary walnut", notebook_id=diary.id)
    client_id = register(name="Claude")
    token = token_for(owner_web, client_id)["access_token"]
    url = error_of(call(token, "recall", {}))["approvalUrl"]
    assert approve(owner_web, url, notebooks=[str(garden.id)], write=False).status_code == 302
    listing = owner_web.get("/connections/").content.decode()
    assert f'back to client.example · client <code title="{client_id}">' in listing
    row = connection_of(owner_account)
    assert f'href="/connections/{row.id}/edit"' in listing

    edit = owner_web.get(f"/connections/{row.id}/edit").content.decode()
    # The page carries the state it was made from.
    before = selectors.connection_get(actor=actor, connection_id=row.id).state
    assert f'value="{before}"' in edit
    changed = owner_web.post(f"/connections/{row.id}/edit", {
        "name": "Claude (laptop)", "can_write": "on", "scope": "some",
        "notebooks": [str(garden.id), str(diary.id)], "expected_state": before})
    assert changed.status_code == 302
    hits = call(token, "recall", {"query": "walnut"})["structuredContent"]["data"]
    assert [h["content"] for h in hits] == ["Diary walnut"]  # the wider grant applies at once
    saved = call(token, "remember", {"content": "x", "kind": "fact",
                                     "notebookId": str(garden.id)})
    assert saved["isError"] is False  # and the write capability

    stale = owner_web.post(f"/connections/{row.id}/edit", {
        "name": "Claude", "scope": "some", "notebooks": [], "expected_state": before})
    assert stale.status_code == 400  # someone changed it since: nothing saved
    assert "changed since you loaded it" in stale.content.decode()
    assert connection_of(owner_account).name == "Claude (laptop)"


def test_revoking_asks_first(owner_account, owner_web):
    client_id = register(name="Claude")
    token = token_for(owner_web, client_id)["access_token"]
    call(token, "recall", {})
    row = connection_of(owner_account)
    confirm = owner_web.get(f"/connections/{row.id}/revoke")
    assert confirm.status_code == 200
    page = confirm.content.decode()
    assert "Revoke “Claude”?" in page and "Revoke for good" in page
    assert connection_of(owner_account).status == "pending"  # asking changed nothing
    assert owner_web.post(f"/connections/{row.id}/revoke").status_code == 302
    assert connection_of(owner_account).status == "revoked"
    stranger = Client()
    stranger.force_login(Account.objects.create_user(username="other", password=PASSWORD))
    assert stranger.get(f"/connections/{row.id}/revoke").status_code == 404
    assert stranger.get(f"/connections/{row.id}/edit").status_code == 404


def test_a_pending_app_is_reviewed_not_changed(owner_account, owner_web):
    client_id = register(name="SDK probe")
    token = token_for(owner_web, client_id)["access_token"]
    url = error_of(call(token, "recall", {}))["approvalUrl"]
    row = connection_of(owner_account)
    listing = owner_web.get("/connections/").content.decode()
    assert f'href="/connections/{row.id}/edit"' not in listing  # no "Change" while pending
    assert "nothing until you approve it" in listing
    edit = owner_web.get(f"/connections/{row.id}/edit")
    assert edit.status_code == 302  # back to the list, where Review is
    posted = owner_web.post(f"/connections/{row.id}/edit", {
        "name": "x", "can_write": "on", "scope": "all", "expected_state": "whatever"})
    assert posted.status_code == 302
    after = connection_of(owner_account)
    assert (after.status, after.capabilities) == ("pending", [])
    assert after.pending_request["id"] in url  # its request is still open


def test_a_stale_second_approval_says_nothing_changed(owner_account, owner_web):
    factories.notebook(factories.Actor.for_session(owner_account.id), "Garden")
    token = token_for(owner_web, register(name="Claude"))["access_token"]
    url = error_of(call(token, "recall", {}))["approvalUrl"]
    assert approve(owner_web, url, notebooks=[], write=False).status_code == 302
    second = approve(owner_web, url, notebooks=[], write=True)  # another, older tab
    assert second.status_code == 302
    page = owner_web.get("/connections/").content.decode()
    assert "was approved already; nothing changed" in page
    assert connection_of(owner_account).capabilities == ["memory:read"]
    request_id = parse_qs(urlsplit(url).query)["request"][0]
    owner_web.post(urlsplit(url).path, {"request": request_id, "decision": "deny"})
    assert "Nothing changed: this request" in owner_web.get("/connections/").content.decode()
    assert connection_of(owner_account).status == "active"  # a late Deny revokes nothing


def test_every_registered_host_is_shown(owner_account, owner_web):
    client_id = Client().post("/o/register/", data=json.dumps({
        "client_name": "Claude", "token_endpoint_auth_method": "none",
        "redirect_uris": ["https://claude.ai/api/mcp/auth_callback",
                          "https://evil.example/cb"]}),
        content_type="application/json").json()["client_id"]
    token = token_for(owner_web, client_id, "https://evil.example/cb")["access_token"]
    url = error_of(call(token, "recall", {}))["approvalUrl"]
    page = owner_web.get(urlsplit(url).path + "?" + urlsplit(url).query).content.decode()
    assert '<dd class="redirect-host">claude.ai, evil.example</dd>' in page


def test_the_review_and_the_denial_are_one_call_each(owner_account, owner_web):
    """`selectors.connection_approval` (what the page shows) and `services.connection_deny`
    (revokes only the open request) — an API key or another account's client is the same
    NotFound as no connection at all."""
    from grove.kernel.errors import NotFound

    actor = factories.Actor.for_session(owner_account.id)
    garden = factories.notebook(actor, "Garden")
    client_id = register(name="Claude")
    token = token_for(owner_web, client_id)["access_token"]
    url = error_of(call(token, "recall", {}))["approvalUrl"]
    request_id = parse_qs(urlsplit(url).query)["request"][0]
    row = connection_of(owner_account)
    review = selectors.connection_approval(actor=actor, connection_id=row.id,
                                           request_id=request_id)
    assert review.fresh and review.pending["id"] == request_id
    assert (review.connection.client_id, review.connection.redirect_host) == (
        client_id, "client.example")
    assert review.notebooks == [(str(garden.id), "Garden", None)]  # (id, name, parent)
    assert not selectors.connection_approval(actor=actor, connection_id=row.id,
                                             request_id="another").fresh
    key = services.connection_create_key(actor=actor, name="laptop").connection
    stranger = factories.owner()
    for actor_, connection_id in ((actor, key.id), (stranger, row.id), (actor, "nope")):
        with pytest.raises(NotFound):
            selectors.connection_approval(actor=actor_, connection_id=connection_id)
        with pytest.raises(NotFound):
            services.connection_deny(actor=actor_, connection_id=connection_id,
                                     request_id=request_id)
    kept, denied = services.connection_deny(actor=actor, connection_id=row.id,
                                            request_id="another")
    assert not denied and kept.status == "pending"  # not the open request: nothing changes
    gone, denied = services.connection_deny(actor=actor, connection_id=row.id,
                                            request_id=request_id)
    assert denied and gone.status == "revoked"
    assert services.connection_deny(actor=actor, connection_id=row.id,
                                    request_id=request_id)[1] is False


def test_the_grant_page_never_changes_a_pending_app_even_with_its_current_state(
        owner_account, owner_web):
    """The pending app's state is no key: the website gives a pending app its grant only
    by approval, whatever the post says (the service refuses: connection_pending)."""
    from grove.identity.schemas import connection_state

    client_id = register(name="SDK probe")
    token = token_for(owner_web, client_id)["access_token"]
    url = error_of(call(token, "recall", {}))["approvalUrl"]
    row = connection_of(owner_account)
    posted = owner_web.post(f"/connections/{row.id}/edit", {
        "name": "x", "can_write": "on", "scope": "all",
        "expected_state": connection_state(row)}, follow=True)
    assert posted.status_code == 200 and "waits for your approval" in posted.content.decode()
    after = connection_of(owner_account)
    assert (after.status, after.capabilities, after.grant_all) == ("pending", [], False)
    assert after.pending_request["id"] in url


def test_a_notebook_deleted_while_approving_is_a_form_error(owner_account, owner_web):
    owner = factories.Actor.for_session(owner_account.id)
    gone = factories.notebook(owner, "Soon gone")
    client_id = register(name="SDK probe")
    token = token_for(owner_web, client_id)["access_token"]
    url = error_of(call(token, "recall", {}))["approvalUrl"]
    from notebooks import services as notes

    notes.notebook_delete(actor=owner, operation_id=factories.op(), notebook_id=gone.id)
    answer = approve(owner_web, url, notebooks=[str(gone.id)])
    assert answer.status_code == 400
    assert "No such notebook" in answer.content.decode()
    assert connection_of(owner_account).status == "pending"
