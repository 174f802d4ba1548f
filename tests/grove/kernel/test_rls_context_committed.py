"""The tenant context with real commits (threads of their own, other backends, the key
rotated by a migrate) — outside the per-test transaction."""

import psycopg
import pytest
from django.conf import settings
from django.db import connection, connections
from django.test import override_settings

from grove.kernel import tenancy
from grove.runtime import dbroles
from grove.runtime.config import ConfigError
from tests import factories
from tests.grove.kernel.test_rls import account_tables, populate


def runtime_connection() -> psycopg.Connection:
    db = settings.DATABASES["default"]
    return psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"],
                           password=db["PASSWORD"] or None, dbname=db["NAME"], autocommit=True)


def test_a_context_seen_once_opens_nothing_in_another_transaction_or_backend(committed):
    victim = factories.owner()
    populate(victim)
    with runtime_connection() as first, runtime_connection() as second:
        with first.transaction(), first.cursor() as cursor:
            tenancy.enter(cursor, victim.account_id)
            cursor.execute("SELECT count(*) FROM notebooks_note")
            assert cursor.fetchone()[0] > 0
            cursor.execute("SELECT current_setting('grove.account_id'), "
                           "current_setting('grove.account_mac')")
            seen = cursor.fetchone()
        # Transaction-local: nothing is left on the (pooled) connection.
        assert first.execute("SELECT current_setting('grove.account_mac', true), "
                             "grove_current_account()").fetchone() in (("", None), (None, None))
        for conn in (first, second):  # a later transaction, then another backend
            for local in (True, False):
                with conn.transaction(), conn.cursor() as cursor:
                    cursor.execute("SELECT set_config('grove.account_id', %s, %s), "
                                   "set_config('grove.account_mac', %s, %s)",
                                   [seen[0], local, seen[1], local])
                    cursor.execute("SELECT grove_current_account()")
                    assert cursor.fetchone() == (None,)
                    for table in account_tables():
                        cursor.execute(f'SELECT count(*) FROM "{table}"')  # noqa: S608 - names from information_schema
                        assert cursor.fetchone() == (0,), table
                conn.execute("RESET ALL")


def test_migrate_stores_the_key_of_the_current_secret_key(committed):
    original = settings.SECRET_KEY
    rotated = "rotated-" + "z" * 50
    try:
        with override_settings(SECRET_KEY=rotated):
            dbroles.grant_runtime_role(using="owner")
            dbroles.check_runtime_role("default")
            victim = factories.owner()
            factories.note(victim, "written under the new key")
            with factories.tenant(victim), connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM notebooks_note")
                assert cursor.fetchone() == (1,)
        with pytest.raises(ConfigError, match="SECRET_KEY"):
            dbroles.check_runtime_role("default")
    finally:
        dbroles.grant_runtime_role(using="owner")
        connections["owner"].close()
    assert settings.SECRET_KEY == original
    dbroles.check_runtime_role("default")


def test_a_tenant_block_that_opens_the_transaction_leaves_nothing_when_it_ends(committed):
    """The outermost `tenant()` puts nothing back (its COMMIT or ROLLBACK ends the
    transaction-local settings): one statement fewer, and the connection is as clean
    as after the restore a nested block sends."""
    from django.test.utils import CaptureQueriesContext

    owner = factories.owner()
    factories.note(owner, "kept by the commit")

    def after() -> tuple:
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('grove.account_id', true), "
                           "current_setting('grove.account_mac', true), "
                           "current_setting('hnsw.ef_search', true), grove_current_account(), "
                           "(SELECT count(*) FROM notebooks_note)")
            return cursor.fetchone()

    default_ef = after()[2]
    assert not connection.in_atomic_block
    with CaptureQueriesContext(connection) as ctx:
        with tenancy.tenant(owner, local=(("hnsw.ef_search", "123"),)):
            with connection.cursor() as cursor:
                cursor.execute("SELECT current_setting('hnsw.ef_search'), "
                               "grove_current_account(), (SELECT count(*) FROM notebooks_note)")
                assert cursor.fetchone() == ("123", owner.account_id, 1)
    sent = [q["sql"] for q in ctx.captured_queries]
    assert sum("set_config" in sql for sql in sent) == 1, sent  # made once, never put back
    # A setting never made on this connection reads NULL, and '' once a transaction that
    # made it has ended (which earlier tests on the connection may or may not have done):
    # both are "not set".
    assert tuple("" if value is None else value for value in after()) == (
        "", "", default_ef or "", "", 0)

    with pytest.raises(RuntimeError), tenancy.tenant(owner):
        raise RuntimeError("rolled back")
    # A setting never made on this connection reads NULL, and '' once a transaction that
    # made it has ended (which earlier tests on the connection may or may not have done):
    # both are "not set".
    assert tuple("" if value is None else value for value in after()) == (
        "", "", default_ef or "", "", 0)

    # Nested in a transaction of the caller's: the caller's context is put back.
    other = factories.owner("other")
    with tenancy.tenant(other):
        with tenancy.tenant(owner), connection.cursor() as cursor:
            cursor.execute("SELECT grove_current_account()")
            assert cursor.fetchone() == (owner.account_id,)
        with connection.cursor() as cursor:
            cursor.execute("SELECT grove_current_account()")
            assert cursor.fetchone() == (other.account_id,)
