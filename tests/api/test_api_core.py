"""REST `/v1` basics (SPEC §7): envelope and request ids, authentication with API keys,
idempotency, error mapping, connections and the website-session-only routes."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from grove.identity import services
from grove.kernel.tenancy import tenant
from grove.models import Account, Connection
from tests import factories
from tests.api.conftest import Caller, data, error, new_key

pytestmark = pytest.mark.django_db

CSRF = "k" * 32  # a well-formed CSRF secret, sent as cookie and header


def session_caller(owner, *, csrf: bool = True) -> Caller:
    client = Client(enforce_csrf_checks=True)
    client.force_login(Account.objects.get(id=owner.account_id))
    client.cookies["csrftoken"] = CSRF
    caller = Caller(client, None)
    if csrf:
        original = caller._headers
        caller._headers = lambda headers: {**original(headers), "X-CSRFToken": CSRF}
    return caller


def remember(api: Caller, content: str = "The build uses uv.", **extra) -> dict:
    response = api.post("/notes", {"content": content, "kind": "fact", **extra})
    assert response.status_code == 201, response.content
    return data(response)


# -- envelope, request ids, authentication ----------------------------------------------------


def test_success_envelope_and_request_id(api):
    response = api.get("/notebooks")
    assert response.status_code == 200
    body = response.json()
    assert body == {"success": True, "data": [],
                    "meta": {"returned": 0, "available": 0, "truncated": False, "limit": 100,
                             "nextCursor": None}}
    assert len(response["X-Request-Id"]) >= 8
    echoed = api.get("/notebooks", headers={"X-Request-Id": "trace-12345678"})
    assert echoed["X-Request-Id"] == "trace-12345678"
    mangled = api.get("/notebooks", headers={"X-Request-Id": "<script>"})
    assert mangled["X-Request-Id"] != "<script>"


def test_anonymous_gets_401_with_a_bearer_challenge(anonymous):
    response = anonymous.get("/notes")
    error(response, 401, "unauthenticated")
    assert response["WWW-Authenticate"] == 'Bearer realm="grove"'


@pytest.mark.parametrize("key", ["grv_" + "x" * 75, "nope", "grv_short",
                                 "grv_" + "a" * 43 + uuid.uuid4().hex])
def test_unknown_or_malformed_keys_get_401_invalid_token(key):
    response = Caller(Client(), key).get("/notes")
    error(response, 401, "invalid_token")
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


def test_a_key_never_works_for_another_account(owner):
    key, _ = new_key(owner)
    stranger = factories.owner()
    # Same secret, another account's id in the tail: a different key, unknown.
    forged = key[:-32] + stranger.account_id.hex
    error(Caller(Client(), forged).get("/notes"), 401, "invalid_token")


def test_revoked_key_is_refused_on_the_very_next_request(owner, api):
    assert api.get("/notes").status_code == 200
    services.connection_revoke(actor=owner, connection_id=api.actor.connection_id)
    error(api.get("/notes"), 401, "invalid_token")
    # ...and cannot be brought back.
    with tenant(owner):
        row = Connection.objects.get(id=api.actor.connection_id)
    with pytest.raises(services.Conflict):
        services.connection_update(actor=owner, connection_id=row.id,
                                   expected_state=services.connection_state(row),
                                   capabilities=["memory:read"])


def test_inactive_account_keys_stop_working(owner, api):
    Account.objects.filter(id=owner.account_id).update(is_active=False)
    error(api.get("/notes"), 401, "invalid_token")


def test_last_contact_is_recorded_at_most_once_a_minute(owner, api):
    api.get("/notes")
    with tenant(owner):
        first = Connection.objects.get(id=api.actor.connection_id).last_used_at
    assert first is not None
    api.get("/notes")
    with tenant(owner):
        assert Connection.objects.get(id=api.actor.connection_id).last_used_at == first


def test_last_contact_is_recorded_again_once_its_minute_is_over(owner, api):
    api.get("/notes")
    earlier = timezone.now() - timedelta(seconds=61)
    with tenant(owner):
        Connection.objects.filter(id=api.actor.connection_id).update(last_used_at=earlier)
    api.get("/notes")
    with tenant(owner):
        recorded = Connection.objects.get(id=api.actor.connection_id).last_used_at
    assert recorded is not None and recorded > earlier + timedelta(seconds=60)


def test_a_refused_key_records_no_contact(owner, api):
    api.get("/notes")
    earlier = timezone.now() - timedelta(hours=1)
    with tenant(owner):
        Connection.objects.filter(id=api.actor.connection_id).update(last_used_at=earlier)
    services.connection_revoke(actor=owner, connection_id=api.actor.connection_id)
    error(api.get("/notes"), 401, "invalid_token")
    with tenant(owner):
        assert Connection.objects.get(id=api.actor.connection_id).last_used_at == earlier


def test_keys_are_random_prefixed_and_stored_as_a_hash(owner):
    created = services.connection_create_key(actor=owner, name="laptop", all_notebooks=True)
    other = services.connection_create_key(actor=owner, name="laptop 2", all_notebooks=True)
    assert created.key.startswith("grv_") and created.key != other.key
    assert len(created.key) >= 4 + 43  # ≥ 32 random bytes, URL-safe
    assert created.connection.key_prefix == created.key[:12]
    with tenant(owner):
        row = Connection.objects.get(id=created.connection.id)
    assert created.key not in (row.key_hash, row.key_prefix)
    assert created.key not in str(created.connection.to_json())


# -- capabilities, grants, session-only routes -------------------------------------------------


def test_read_only_key_cannot_write(owner):
    key, _ = new_key(owner, capabilities=["memory:read"])
    reader = Caller(Client(), key)
    assert reader.get("/notes").status_code == 200
    error(reader.post("/notes", {"content": "x", "kind": "fact"}), 403,
          "insufficient_capability")


def test_keys_never_reach_account_administration(owner, api):
    notebook = data(api.post("/notebooks", {"name": "Work"}))
    error(api.get("/connections"), 403, "session_required")
    error(api.post("/connections/keys", {"name": "more"}), 403, "session_required")
    error(api.post(f"/connections/{api.actor.connection_id}/revoke"), 403, "session_required")
    for action in ("archive", "restore", "delete"):
        error(api.post(f"/notebooks/{notebook['id']}/{action}"), 403, "session_required")


def test_session_routes_need_csrf(owner):
    without = session_caller(owner, csrf=False)
    assert without.get("/connections").status_code == 200  # reads need no token
    response = without.post("/connections/keys", {"name": "no csrf"})
    assert response.status_code == 401 or response.status_code == 403
    assert response.json()["success"] is False


def test_session_creates_lists_updates_and_revokes_keys(owner):
    site = session_caller(owner)
    notebook = factories.notebook(owner, "Shared")
    created = site.post("/connections/keys", {"name": "cursor", "notebooks": [str(notebook.id)],
                                              "capabilities": ["memory:read"]})
    assert created.status_code == 201, created.content
    new = data(created)
    key, connection = new["key"], new["connection"]
    assert connection["grant"] == {"personal": False, "allNotebooks": False,
                                   "notebooks": [str(notebook.id)]}
    listed = data(site.get("/connections"))
    assert [c["id"] for c in listed] == [connection["id"]]
    assert "key" not in listed[0]

    stale = connection["state"]
    changed = site.patch(f"/connections/{connection['id']}",
                         {"expectedState": stale, "capabilities": ["memory:read", "memory:write"]})
    assert data(changed)["state"] != stale
    conflict = site.patch(f"/connections/{connection['id']}",
                          {"expectedState": stale, "personal": True})
    error(conflict, 409, "connection_conflict")
    assert data(site.get("/connections"))[0]["grant"]["personal"] is False  # unchanged

    user = Caller(Client(), key)
    assert user.post("/notes", {"content": "allowed now", "kind": "fact",
                                "notebookId": str(notebook.id)}).status_code == 201
    revoked = data(site.post(f"/connections/{connection['id']}/revoke"))
    assert revoked["status"] == "revoked" and revoked["revokedAt"]
    error(user.get("/notes"), 401, "invalid_token")
    again = site.patch(f"/connections/{connection['id']}",
                       {"expectedState": revoked["state"], "capabilities": ["memory:read"]})
    error(again, 409, "connection_revoked")


def test_grant_must_name_the_accounts_own_notebooks(owner):
    site = session_caller(owner)
    foreign = factories.notebook(factories.owner(), "Theirs")
    error(site.post("/connections/keys", {"name": "k", "notebooks": [str(foreign.id)]}), 404,
          "notebook_not_found")
    error(site.post("/connections/keys", {"name": "k", "allNotebooks": True,
                                          "notebooks": [str(factories.notebook(owner).id)]}),
          400, "invalid_grant")


def test_a_foreign_connection_is_404(owner):
    other = factories.owner()
    _, their_key = new_key(other)
    site = session_caller(owner)
    error(site.post(f"/connections/{their_key.connection_id}/revoke"), 404, "not_found")


# -- idempotency ------------------------------------------------------------------------------


def test_replay_returns_the_original_status_and_body(api):
    operation = str(uuid.uuid4())
    first = api.post("/notes", {"content": "once", "kind": "fact"},
                     headers={"Idempotency-Key": operation})
    again = api.post("/notes", {"content": "once", "kind": "fact", "operationId": operation})
    assert (first.status_code, again.status_code) == (201, 201)
    assert first.json() == again.json()
    conflict = api.post("/notes", {"content": "changed", "kind": "fact"},
                        headers={"Idempotency-Key": operation})
    error(conflict, 409, "operation_conflict")


def test_header_and_body_operation_ids_must_agree(api):
    response = api.post("/notes", {"content": "x", "kind": "fact",
                                   "operationId": str(uuid.uuid4())},
                        headers={"Idempotency-Key": str(uuid.uuid4())})
    error(response, 400, "operation_id_mismatch")
    error(api.post("/notes", {"content": "x", "kind": "fact"},
                   headers={"Idempotency-Key": "not-a-uuid"}), 400, "invalid_operation_id")
    assert data(api.get("/notes")) == []  # nothing was saved


def test_replaying_a_save_whose_note_was_deleted_is_gone(api):
    operation = str(uuid.uuid4())
    note = data(api.post("/notes", {"content": "soon gone", "kind": "fact",
                                    "operationId": operation}))
    assert data(api.post("/notes/forget", {"items": [note["id"]]}))["items"][0]["status"] \
        == "deleted"
    error(api.post("/notes", {"content": "soon gone", "kind": "fact", "operationId": operation}),
          410, "gone")


# -- errors -----------------------------------------------------------------------------------


def test_schema_violations_are_422_and_change_nothing(api):
    bad = [{"kind": "fact"}, {"content": "x", "kind": "opinion"},
           {"content": "x", "kind": "fact", "owner": "someone"}, [], "text"]
    for body in bad:
        error(api.post("/notes", body), 422, "invalid_request")
    error(api.post("/notes", raw="{not json"), 400, "invalid_json")
    assert data(api.get("/notes")) == []


def test_domain_validation_is_400(api):
    error(api.post("/notes", {"content": "   ", "kind": "fact"}), 400, "content_empty")
    error(api.post("/notes", {"content": "x" * 6001, "kind": "fact"}), 400, "content_too_long")
    error(api.post("/notes", {"content": "x" * 200_001}), 400, "content_too_long")
    assert data(api.get("/notes")) == []
    error(api.post("/notes", {"content": "x", "kind": "handoff"}), 400, "task_id_required")


def test_oversized_bodies_are_413(api):
    response = api.post("/notes", raw='{"content": "' + "x" * settings.GROVE_API_MAX_BODY + '"}')
    error(response, 413, "payload_too_large")


def test_a_note_without_a_kind_is_a_document_of_up_to_200000_characters(api):
    """SPEC §3: kind omitted on REST is a document note; it holds 200,000 characters,
    where a memory record holds 6,000."""
    long = ("Sediment settles where the river slows. " * 5000)[:200_000].strip()
    note = data(api.post("/notes", {"content": long}))
    assert (note["kind"], len(note["content"])) == ("note", len(long))
    assert data(api.get(f"/notes/{note['id']}"))["content"] == long
    error(api.post("/notes", {"content": long[:6001], "kind": "fact"}), 400, "content_too_long")
    error(api.patch(f"/notes/{note['id']}", {"kind": "fact"}), 400, "content_too_long")


def test_version_conflict_is_409_and_keeps_the_newer_text(api):
    note = remember(api, "v1")
    assert data(api.patch(f"/notes/{note['id']}", {"content": "v2", "expectedVersion": 1}))[
        "version"] == 2
    error(api.patch(f"/notes/{note['id']}", {"content": "v2 again", "expectedVersion": 1}), 409,
          "version_conflict")
    assert data(api.get(f"/notes/{note['id']}"))["content"] == "v2"


def test_foreign_and_missing_ids_look_the_same(owner, api):
    stranger = factories.owner()
    theirs = factories.note(stranger, "not yours")
    missing = api.get(f"/notes/{uuid.uuid4()}")
    foreign = api.get(f"/notes/{theirs.id}")
    assert missing.status_code == foreign.status_code == 404
    assert missing.json()["error"]["code"] == foreign.json()["error"]["code"]
    error(api.patch(f"/notes/{theirs.id}", {"content": "mine now"}), 404, "note_not_found")
    error(api.get(f"/get/note:{theirs.id}"), 404, "note_not_found")
    # A path that cannot name a note names none (Django's path converters say the same).
    error(api.get("/notes/not-a-uuid"), 404, "not_found")


def test_unknown_routes_answer_with_the_envelope(api, anonymous):
    error(api.get("/no/such/route"), 404, "not_found")
    error(anonymous.post("/nothing-here", {"a": 1}), 404, "not_found")
    error(api.call("DELETE", "/notes"), 405, "method_not_allowed")


def test_rate_limit_per_connection_is_429_with_retry_after(owner, api, settings, monkeypatch):
    from django.core.cache import cache

    from grove.kernel import throttle

    monkeypatch.setattr(throttle, "clock", lambda: 6_000_030.0)
    cache.clear()
    settings.GROVE_API_RATE_LIMIT = 3
    other_key, _ = new_key(owner)
    other = Caller(Client(), other_key)
    statuses = [api.get("/notebooks").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = api.get("/notebooks")
    error(limited, 429, "rate_limited")
    assert limited["Retry-After"] == "30"  # the rest of the one-minute window
    assert other.get("/notebooks").status_code == 200  # counted per connection
    cache.clear()
