from django.db import migrations, models

# A connection's home notebook (issue 39): where its writes go and what its reads cover
# by default. The key lookup returns it beside the grant in one statement (0011 says why
# that function exists) — as a function of its own, `grove_key_connection_home`, so the
# one an older release calls during a rolling upgrade stays as it was, granted as it was
# (EXECUTE on the new one is granted to the runtime role after every migrate,
# grove.runtime.dbroles, before the new release's processes start).
KEY_LOOKUP = """
CREATE FUNCTION grove_key_connection_home(p_account uuid, p_key_hash text,
                                          p_contact_every interval)
RETURNS TABLE (id uuid, capabilities varchar[], grant_personal boolean, grant_all boolean,
               grant_notebooks uuid[], home_notebook_id uuid)
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH found AS (
        SELECT c.id, c.capabilities, c.grant_personal, c.grant_all, c.grant_notebooks,
               c.home_notebook_id
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
           found.grant_notebooks, found.home_notebook_id
    FROM found
$$;
REVOKE EXECUTE ON FUNCTION grove_key_connection_home(uuid, text, interval) FROM PUBLIC;
"""

DROP = "DROP FUNCTION IF EXISTS grove_key_connection_home(uuid, text, interval);"


class Migration(migrations.Migration):

    dependencies = [
        ("grove", "0016_oauth_codes_hashed"),
    ]

    operations = [
        migrations.AddField(
            model_name="connection",
            name="home_notebook_id",
            field=models.UUIDField(blank=True, null=True),
        ),
        migrations.RunSQL(KEY_LOOKUP, DROP),
    ]
