"""Secrets stored by the previous release in the clear (a session's cookie as its row's
key, an authorization code) are converted by the migrations, so the upgrade signs no one
out and breaks no sign-in under way; afterwards the stored values open nothing."""

from __future__ import annotations

import importlib

import pytest
from django.db import connections, transaction
from django.test import Client, override_settings

from grove.identity.oauth import code_key
from grove.identity.sessions import stored_key
from grove.models import Account
from tests.grove.identity.oauth_helpers import consent, exchange, new_flow, register

PASSWORD = "a long enough passphrase 42"  # noqa: S105


class _Editor:
    connection = connections["owner"]


def _owner_sql(sql: str, params: list) -> list[tuple]:
    with connections["owner"].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def test_sessions_of_the_previous_release_stay_signed_in(committed):
    owner = Account.objects.create_user(username="owner", password=PASSWORD)
    with override_settings(SESSION_ENGINE="django.contrib.sessions.backends.db"):
        before = Client()
        before.force_login(owner)  # stored as Django's own backend stores it
        stale = Client()
        stale.force_login(owner)
    cookie, stale_cookie = before.cookies["sessionid"].value, stale.cookies["sessionid"].value
    _owner_sql("UPDATE django_session SET expire_date = now() - interval '1 day' "
               "WHERE session_key = %s", [stale_cookie])
    # Before the migration the new store does not find it.
    assert Client(headers={"Cookie": f"sessionid={cookie}"}).get(
        "/settings/").status_code == 302

    migration = importlib.import_module("grove.migrations.0015_sessions_keyed_by_mac")
    with transaction.atomic(using="owner"):
        migration.mac_session_keys(None, _Editor())

    keys = {row[0] for row in _owner_sql("SELECT session_key FROM django_session", [])}
    assert keys == {stored_key(cookie)}  # the expired one is gone, none in the clear
    after = Client(headers={"Cookie": f"sessionid={cookie}"})
    assert after.get("/settings/").status_code == 200
    assert Client(headers={"Cookie": f"sessionid={stored_key(cookie)}"}).get(
        "/settings/").status_code == 302


def test_a_code_issued_before_the_upgrade_is_still_redeemed(committed):
    owner = Account.objects.create_user(username="owner", password=PASSWORD)
    web = Client()
    web.force_login(owner)
    flow = new_flow(register())
    code = consent(web, flow)["code"]
    # As the previous release stored it: the code itself.
    _owner_sql("UPDATE oauth2_provider_grant SET code = %s WHERE code = %s",
               [code, code_key(code)])
    assert exchange(flow, code)[1]["error"] == "invalid_grant"

    migration = importlib.import_module("grove.migrations.0016_oauth_codes_hashed")
    with transaction.atomic(using="owner"):
        for statement in migration.Migration.operations[0].sql:
            _owner_sql(statement, [])

    assert _owner_sql("SELECT code FROM oauth2_provider_grant", []) == [(code_key(code),)]
    status, tokens = exchange(flow, code)
    assert status == 200, tokens
    assert _owner_sql("SELECT count(*) FROM oauth2_provider_accesstoken "
                      "WHERE token <> ''", []) == [(0,)]


@pytest.mark.django_db
def test_a_session_is_stored_under_its_mac_only():
    from django.contrib.sessions.models import Session

    owner = Account.objects.create_user(username="owner", password=PASSWORD)
    web = Client()
    web.force_login(owner)
    cookie = web.cookies["sessionid"].value
    assert list(Session.objects.values_list("session_key", flat=True)) == [stored_key(cookie)]
    assert web.get("/settings/").status_code == 200
    web.post("/logout/")
    assert not Session.objects.exists()


@pytest.mark.django_db
def test_the_async_paths_use_the_mac_too():
    """Async views (`POST /v1/ask`) read the session through the store's async methods."""
    from asgiref.sync import async_to_sync
    from django.contrib.auth import SESSION_KEY
    from django.contrib.sessions.models import Session

    from grove.identity.sessions import SessionStore

    owner = Account.objects.create_user(username="owner", password=PASSWORD)
    web = Client()
    web.force_login(owner)
    cookie = web.cookies["sessionid"].value
    assert async_to_sync(SessionStore(cookie).aload)()[SESSION_KEY] == str(owner.id)
    assert async_to_sync(SessionStore().aexists)(cookie)
    assert not async_to_sync(SessionStore().aexists)(stored_key(cookie))

    made = SessionStore()
    made["note"] = "kept"
    async_to_sync(made.asave)()
    assert Session.objects.filter(session_key=stored_key(made.session_key)).exists()
    assert async_to_sync(SessionStore(made.session_key).aload)() == {"note": "kept"}
    async_to_sync(SessionStore(made.session_key).adelete)()
    assert not Session.objects.filter(session_key=stored_key(made.session_key)).exists()
