from django.db import migrations

# An API key's connection in one statement (grove.identity.services.connection_authenticate).
#
# Every request with a key looked its connection up inside a tenant transaction: BEGIN,
# the context's two statements, the lookup, putting the context back, COMMIT — six round
# trips to the server before any work, and on two shared cores each is a wake-up of the
# server's process (docs/benchmarks.md, "HTTP overhead"). This security-definer function
# does it in one, run by the schema owner, for whom the policies below lift the account
# filter on grove_connection: the active API key of an active account with exactly this
# account id (the key names it) and this hash of the key — what the lookup under row
# level security returned, nothing more — and, in the same statement, the last contact
# when the one recorded is older than `contact_every` (the caller's rule: at most once
# a minute). A concurrent request waiting for the row re-checks that condition, so one
# contact is written, not two. EXECUTE is revoked from PUBLIC and granted to the runtime
# role after every migrate (grove.runtime.dbroles).
KEY_LOOKUP = """
DO $$ BEGIN
    EXECUTE format('CREATE POLICY key_lookup ON grove_connection FOR SELECT TO %I '
                   'USING (true)', current_user);
    EXECUTE format('CREATE POLICY key_contact ON grove_connection FOR UPDATE TO %I '
                   'USING (true) WITH CHECK (true)', current_user);
END $$;

CREATE FUNCTION grove_key_connection(p_account uuid, p_key_hash text, p_contact_every interval)
RETURNS TABLE (id uuid, capabilities varchar[], grant_personal boolean, grant_all boolean,
               grant_notebooks uuid[])
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH found AS (
        SELECT c.id, c.capabilities, c.grant_personal, c.grant_all, c.grant_notebooks
        FROM public.grove_connection c
        JOIN public.grove_account a ON a.id = c.account_id AND a.is_active
        WHERE c.account_id = p_account AND c.key_hash = p_key_hash
          AND c.kind = 'api_key' AND c.status = 'active'
    ), contact AS (
        UPDATE public.grove_connection c SET last_used_at = now()
        FROM found
        WHERE c.id = found.id
          AND (c.last_used_at IS NULL OR c.last_used_at < now() - p_contact_every)
    )
    SELECT found.id, found.capabilities, found.grant_personal, found.grant_all,
           found.grant_notebooks
    FROM found
$$;
REVOKE EXECUTE ON FUNCTION grove_key_connection(uuid, text, interval) FROM PUBLIC;
"""

DROP = """
DROP FUNCTION IF EXISTS grove_key_connection(uuid, text, interval);
DROP POLICY IF EXISTS key_contact ON grove_connection;
DROP POLICY IF EXISTS key_lookup ON grove_connection;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("grove", "0010_account_time_zone"),
    ]

    operations = [
        migrations.RunSQL(KEY_LOOKUP, DROP),
    ]
