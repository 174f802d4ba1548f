# Website sessions keyed by a MAC of the cookie (grove/identity/sessions.py): the rows
# Django's own backend wrote hold the cookie itself as their key — readable by the runtime
# database role, so each was a working session. Each such key becomes the MAC the new
# store looks up (HMAC-SHA256 under a key derived from SECRET_KEY, 40 hex characters), so
# nobody is signed out; expired rows are dropped first.
#
# Expand only (tests/grove/runtime/test_migrations_expand.py): no schema change, only the
# keys' values. A web process of the previous release no longer finds these sessions
# (its visitors sign in again), and the sessions it creates meanwhile are unknown to the
# new release — the README's "Upgrading" says so. Reversed: every session ends (a MAC
# cannot be turned back into the cookie).

from django.db import migrations

# As grove.identity.sessions writes it — a migration is a snapshot, so the rule is here
# again rather than imported.
SALT = "grove.identity.sessions"
STORED_KEY_CHARS = 40
DJANGO_KEY_CHARS = 32  # Django's own keys; a MAC is 40


def mac_session_keys(apps, schema_editor):
    from django.utils.crypto import salted_hmac

    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DELETE FROM django_session WHERE expire_date < now()")
        cursor.execute("SELECT session_key FROM django_session WHERE length(session_key) = %s",
                       [DJANGO_KEY_CHARS])
        keys = [row[0] for row in cursor.fetchall()]
        cursor.executemany(
            "UPDATE django_session SET session_key = %s WHERE session_key = %s",
            [(salted_hmac(SALT, key, algorithm="sha256").hexdigest()[:STORED_KEY_CHARS], key)
             for key in keys])


def end_every_session(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DELETE FROM django_session")


class Migration(migrations.Migration):

    dependencies = [
        ("grove", "0014_account_tombstone"),
        ("sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(mac_session_keys, end_every_session)]
