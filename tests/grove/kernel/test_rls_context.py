"""The tenant context cannot be forged (SPEC §5, grove.kernel.tenancy): raw SQL as the runtime
role — what an injection would run — that names an account without the MAC only the
app can make sees and changes nothing; a MAC opens one account in one transaction of
one backend; the keys, the account table's other columns and the share functions' read
path by id are out of the runtime role's reach."""

import uuid

import psycopg
import pytest
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.test import override_settings

from grove.kernel import tenancy
from grove.models import Account
from grove.runtime import dbroles
from grove.runtime.config import ConfigError
from sharing import selectors as public
from sharing import services as share_services
from tests import factories
from tests.grove.kernel.test_rls import account_tables, count, populate

pytestmark = pytest.mark.django_db


def forge(cursor, account_id, *, local: bool) -> None:
    cursor.execute("SELECT set_config('grove.account_id', %s, %s)", [str(account_id), local])


def runtime_connection() -> psycopg.Connection:
    db = settings.DATABASES["default"]
    return psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"],
                           password=db["PASSWORD"] or None, dbname=db["NAME"], autocommit=True)


def test_every_policy_asks_for_the_verified_account_once_per_statement():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT polrelid::regclass::text, pg_get_expr(polqual, polrelid), "
            "pg_get_expr(polwithcheck, polrelid) FROM pg_policy "
            "WHERE polname = 'account_isolation'")
        policies = cursor.fetchall()
        cursor.execute("SELECT prosecdef, proparallel FROM pg_proc "
                       "WHERE oid = 'grove_current_account()'::regprocedure")
        definer, parallel = cursor.fetchone()
    assert {table for table, _, _ in policies} >= set(account_tables())
    for table, using, check in policies:
        assert "( SELECT grove_current_account()" in using, (table, using)
        assert "( SELECT grove_current_account()" in check, (table, check)
    # Checked by the owner's function; in the leader only (its pid is in the MAC).
    assert definer is True and parallel == "r"


@pytest.mark.parametrize("local", [True, False], ids=["local", "session"])
def test_a_forged_account_setting_sees_and_changes_nothing(local):
    victim = factories.owner()
    notebook, note = populate(victim)
    with transaction.atomic():
        with connection.cursor() as cursor:
            forge(cursor, victim.account_id, local=local)
            # Even with a MAC-shaped value beside it.
            cursor.execute("SELECT set_config('grove.account_mac', %s, %s)", ["0" * 64, local])
        for table in account_tables():
            assert count(table) == 0, table
        with connection.cursor() as cursor:
            cursor.execute("UPDATE notebooks_note SET content = 'pwned' WHERE id = %s",
                           [note.id])
            assert cursor.rowcount == 0
            cursor.execute("DELETE FROM notebooks_notebook WHERE id = %s", [notebook.id])
            assert cursor.rowcount == 0
    with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
        with connection.cursor() as cursor:
            forge(cursor, victim.account_id, local=local)
            cursor.execute(
                "INSERT INTO notebooks_notebook (id, account_id, name, created_at, updated_at) "
                "VALUES (%s, %s, 'planted', now(), now())", [uuid.uuid4(), victim.account_id])
    assert factories.note_row(victim, note.id).content == "secret 2"
    with transaction.atomic():
        with connection.cursor() as cursor:
            tenancy.enter(cursor, victim.account_id)
        assert count("notebooks_notebook", "id = %s", [notebook.id]) == 1


def test_a_mac_for_one_account_does_not_unlock_another():
    mine, victim = factories.owner(), factories.owner()
    populate(mine)
    populate(victim)
    with transaction.atomic():
        with connection.cursor() as cursor:
            tenancy.enter(cursor, mine.account_id)
        assert count("notebooks_note") > 0  # a genuine context works
        with connection.cursor() as cursor:
            forge(cursor, victim.account_id, local=True)  # keep my MAC, name the victim
        for table in account_tables():
            assert count(table) == 0, table
        with connection.cursor() as cursor:
            # A MAC under another key (the attacker does not know SECRET_KEY).
            cursor.execute(f"SELECT {tenancy.TRANSACTION_IDENTITY}")
            pid, started = cursor.fetchone()
            with override_settings(SECRET_KEY="guessed-" + "x" * 50):
                guessed = tenancy.context_mac(victim.account_id, pid, started)
            cursor.execute("SELECT set_config('grove.account_mac', %s, true)", [guessed])
        for table in account_tables():
            assert count(table) == 0, table


def test_the_runtime_role_cannot_read_or_use_the_keys():
    with pytest.raises(DatabaseError, match="permission denied for table grove_secret"), \
            transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT inner_pad, outer_pad FROM grove_secret")
    with pytest.raises(DatabaseError, match="permission denied for function grove_hmac"), \
            transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT grove_hmac('tenant', '\\x00'::bytea)")
    with pytest.raises(DatabaseError, match="permission denied for table grove_secret"), \
            transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE grove_secret SET inner_pad = outer_pad")


def test_only_the_account_columns_the_app_writes_are_updatable():
    actor = factories.owner()
    for column, value in (("username", "someone-else"), ("is_superuser", True),
                          ("is_staff", True), ("email", "x@example.org"),
                          ("date_joined", "2000-01-01")):
        with pytest.raises(DatabaseError, match="permission denied for table grove_account"), \
                transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"UPDATE grove_account SET {column} = %s WHERE id = %s",  # noqa: S608 - names from this test
                           [value, actor.account_id])
    # What the app does write still works: sign-in, a re-hash, the capture pause, the
    # time zone.
    account = Account.objects.get(id=actor.account_id)
    account.set_password("another correct horse")
    account.save(update_fields=["password", "last_login"])
    from grove.identity import services

    services.account_set_capture_paused(actor=actor, paused=True)
    services.account_set_time_zone(actor=actor, time_zone="Europe/Paris")
    changed = Account.objects.get(id=actor.account_id)
    assert changed.capture_paused_at is not None and changed.time_zone == "Europe/Paris"


def test_share_functions_open_nothing_by_id_or_with_a_wrong_token():
    owner = factories.owner()
    book = factories.notebook(owner, "Shared")
    factories.note(owner, "in the share", notebook_id=book.id)
    share, _ = share_services.share_create(actor=owner, notebook_id=book.id)
    token = share.token
    wrong_mac = token[:-3] + ("AAA" if token[-3:] != "AAA" else "AAQ")
    other_spelling = token[:-1] + chr(ord(token[-1]) ^ 1)  # same bytes, or another MAC
    with connection.cursor() as cursor:
        # No function takes a bare id any more.
        for signature in ("grove_share_open(uuid)", "grove_share_viewed(uuid)",
                          "grove_share_notes(uuid, uuid, timestamptz, uuid, integer)"):
            cursor.execute("SELECT to_regprocedure(%s)", [signature])
            assert cursor.fetchone() == (None,), signature
        for probe in (str(share.id), share.id.hex, wrong_mac, other_spelling, "", "x" * 43):
            cursor.execute("SELECT count(*) FROM grove_share_open(%s::text)", [probe])
            assert cursor.fetchone() == (0,), probe
            cursor.execute("SELECT count(*) FROM grove_share_notes(%s::text, NULL, NULL, "
                           "NULL, 100)", [probe])
            assert cursor.fetchone() == (0,), probe
            cursor.execute("SELECT grove_share_viewed(%s::text)", [probe])
        cursor.execute("SELECT count(*) FROM grove_share_open(%s::text)", [token])
        assert cursor.fetchone() == (1,)  # the genuine link still opens
    opened = public.open_share(token)
    assert opened is not None
    assert [n.content for n in public.page(opened)[0]] == ["in the share"]
    with factories.tenant(owner), connection.cursor() as cursor:
        cursor.execute("SELECT view_count FROM sharing_share WHERE id = %s", [share.id])
        assert cursor.fetchone() == (0,)  # no probe counted a view


@pytest.mark.django_db(databases=["default", "owner"])
def test_start_refuses_a_database_keyed_with_another_secret_key():
    dbroles.check_runtime_role("default")  # the key `migrate` stored
    with override_settings(SECRET_KEY="rotated-" + "y" * 50):
        with pytest.raises(ConfigError, match="SECRET_KEY.*grove migrate"):
            dbroles.check_runtime_role("default")
        # Migrating is not blocked by it (that is what stores the new key).
        dbroles.check_migration_roles()
