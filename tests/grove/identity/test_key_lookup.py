"""An API key's connection is read by the security-definer `grove_key_connection`
(grove 0011): one statement outside any tenant transaction. It must find exactly what
the lookup under row-level security found, and open nothing else to the runtime role."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection

from grove.identity import services
from grove.runtime.dbroles import DEFINER_FUNCTIONS
from tests import factories

pytestmark = pytest.mark.django_db

LOOKUP = ("SELECT id, capabilities, grant_personal, grant_all, grant_notebooks "
          "FROM grove_key_connection(%s, %s, interval '1 minute')")


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def rows(sql: str, params: list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def test_the_lookup_needs_the_account_and_the_hash_of_the_key():
    owner, stranger = factories.owner(), factories.owner()
    notebook = factories.notebook(owner, "Work")
    key = services.connection_create_key(actor=owner, name="laptop", personal=True,
                                         notebooks=[notebook.id]).key
    found = rows(LOOKUP, [owner.account_id, digest(key)])
    assert len(found) == 1
    _, capabilities, personal, everything, notebooks = found[0]
    assert sorted(capabilities) == ["memory:read", "memory:write"]
    assert (personal, everything, notebooks) == (True, False, [notebook.id])
    assert rows(LOOKUP, [stranger.account_id, digest(key)]) == []
    assert rows(LOOKUP, [owner.account_id, digest(key + "x")]) == []
    # Outside a tenant transaction the runtime role still sees no connection at all.
    assert rows("SELECT count(*) FROM grove_connection", []) == [(0,)]


def test_only_active_keys_of_active_accounts_are_found():
    owner = factories.owner()
    key = services.connection_create_key(actor=owner, name="laptop", all_notebooks=True)
    assert rows(LOOKUP, [owner.account_id, digest(key.key)])
    services.connection_revoke(actor=owner, connection_id=key.connection.id)
    assert rows(LOOKUP, [owner.account_id, digest(key.key)]) == []
    other = factories.owner()
    live = services.connection_create_key(actor=other, name="laptop", all_notebooks=True).key
    from grove.models import Account

    Account.objects.filter(id=other.account_id).update(is_active=False)
    assert rows(LOOKUP, [other.account_id, digest(live)]) == []


def test_no_security_definer_function_may_be_run_by_public():
    runtime = connection.settings_dict["USER"]
    for signature in DEFINER_FUNCTIONS:
        present = rows("SELECT to_regprocedure(%s) IS NOT NULL", [signature])[0][0]
        assert present, signature
        assert rows("SELECT has_function_privilege('public', %s, 'EXECUTE')",
                    [signature]) == [(False,)], signature
        assert rows("SELECT has_function_privilege(%s, %s, 'EXECUTE')",
                    [runtime, signature]) == [(True,)], signature
