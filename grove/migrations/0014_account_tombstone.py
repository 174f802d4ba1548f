# Account deletion's tombstone (grove.identity.deletion). `deleted_at`, once set, closes
# the account's tenant context: grove_current_account() (grove 0009) returns NULL for
# it, so every policy hides the account's rows and refuses new ones — whatever still
# holds a way in (a job delayed past the deletion, a request that authenticated just
# before it, a retried operation id, a late OAuth callback) reads nothing and writes
# nothing. Sessions of the schema owner are still taken at their word: `grove purge`
# removes a deleted account's content as that role.
#
# Expand only (docs/architecture.md, "Upgrades"): a nullable column, and a function
# that an older web process calls the same way.

from importlib import import_module

from django.db import migrations, models

# The function as grove 0009 wrote it: what reversing this migration puts back.
previous = import_module("grove.migrations.0009_unforgeable_context")

CLOSED_ACCOUNT_FUNCTION = """
CREATE OR REPLACE FUNCTION grove_current_account() RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.account
    FROM (SELECT NULLIF(current_setting('grove.account_id', true), '')::uuid AS account) c
    WHERE session_user = current_user
       OR (encode(public.grove_hmac('tenant', convert_to(
              c.account::text || '|' || pg_backend_pid()::text || '|'
              || ((extract(epoch FROM transaction_timestamp()) * 1000000)::bigint)::text,
              'UTF8')), 'hex') = current_setting('grove.account_mac', true)
           AND NOT EXISTS (SELECT 1 FROM public.grove_account a
                           WHERE a.id = c.account AND a.deleted_at IS NOT NULL))
$$;
"""

# Once set, a tombstone stays: a role other than the schema owner (the runtime role, for
# instance through an injection) cannot clear or move it — `grove purge` would empty a
# live account that carried one.
PERMANENT_TOMBSTONE = """
CREATE FUNCTION grove_tombstone_stays() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.deleted_at IS NOT NULL AND NEW.deleted_at IS DISTINCT FROM OLD.deleted_at
       AND NOT pg_has_role(current_user, (SELECT relowner FROM pg_class
                                          WHERE oid = TG_RELID), 'MEMBER') THEN
        RAISE EXCEPTION 'an account''s tombstone cannot be changed'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER grove_tombstone_stays BEFORE UPDATE OF deleted_at ON grove_account
    FOR EACH ROW EXECUTE FUNCTION grove_tombstone_stays();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('grove', '0013_heartbeat'),
    ]

    operations = [
        migrations.AddField(
            model_name='account',
            name='deleted_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='account',
            name='deletion_requested_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunSQL(CLOSED_ACCOUNT_FUNCTION, previous.VERIFIED_ACCOUNT_FUNCTION),
        migrations.RunSQL(PERMANENT_TOMBSTONE,
                          "DROP TRIGGER grove_tombstone_stays ON grove_account; "
                          "DROP FUNCTION grove_tombstone_stays()"),
    ]
