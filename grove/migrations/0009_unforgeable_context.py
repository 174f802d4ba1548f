from django.db import migrations

from grove.kernel.rls import CURRENT_ACCOUNT_FUNCTION

# The tenant context cannot be forged (SPEC §5, grove.kernel.tenancy). Until now
# grove_current_account() returned whatever `grove.account_id` said, and the runtime role
# may set that itself: row-level security held only while no SQL injection existed.
#
# * `grove_secret` holds keys derived from SECRET_KEY (as HMAC-SHA256 inner and outer key
#   blocks, so built-in sha256() is enough: the embedded server has no pgcrypto). Owner
#   only: the runtime role is refused any access (grove.runtime.dbroles) and row-level security
#   without a policy hides its rows from any other role anyway. `grove migrate` writes the
#   keys after every migration (grove.kernel.tenancy.store_database_keys).
# * grove_current_account() is a security-definer function: it returns the account only
#   when `grove.account_mac` is the HMAC of the account, the backend's pid and the
#   transaction's start time — a MAC seen once opens nothing in another transaction or
#   backend. Pid and start time are the leader's: PARALLEL RESTRICTED keeps the check
#   out of parallel workers. A session logged in as the schema owner itself is taken at
#   its word: that role owns the tables and could lift row-level security anyway, and
#   its maintenance SQL (the backfill of notebooks 0011) names the account plainly.
# * Every policy compares with `(SELECT grove_current_account())`: evaluated once per
#   statement (an InitPlan), not once per row.
KEY_TABLE = """
CREATE TABLE grove_secret (
    purpose text PRIMARY KEY,
    inner_pad bytea NOT NULL CHECK (length(inner_pad) = 64),
    outer_pad bytea NOT NULL CHECK (length(outer_pad) = 64)
);
ALTER TABLE grove_secret ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON grove_secret FROM PUBLIC;

CREATE FUNCTION grove_hmac(p_purpose text, p_message bytea) RETURNS bytea
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sha256(k.outer_pad || sha256(k.inner_pad || p_message))
    FROM public.grove_secret k WHERE k.purpose = p_purpose
$$;
REVOKE EXECUTE ON FUNCTION grove_hmac(text, bytea) FROM PUBLIC;
"""

VERIFIED_ACCOUNT_FUNCTION = """
CREATE OR REPLACE FUNCTION grove_current_account() RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.account
    FROM (SELECT NULLIF(current_setting('grove.account_id', true), '')::uuid AS account) c
    WHERE session_user = current_user
       OR encode(public.grove_hmac('tenant', convert_to(
              c.account::text || '|' || pg_backend_pid()::text || '|'
              || ((extract(epoch FROM transaction_timestamp()) * 1000000)::bigint)::text,
              'UTF8')), 'hex') = current_setting('grove.account_mac', true)
$$;
"""



def policies(account: str) -> str:
    """Every `account_isolation` policy compares with `account`."""
    # `account` is one of the two constant expressions below.
    return f"""
DO $$
DECLARE
    t regclass;
BEGIN
    FOR t IN SELECT polrelid::regclass FROM pg_policy WHERE polname = 'account_isolation'
    LOOP
        EXECUTE format('ALTER POLICY account_isolation ON %s '
                       'USING (account_id = {account}) WITH CHECK (account_id = {account})', t);
    END LOOP;
END $$;
"""  # noqa: S608


class Migration(migrations.Migration):
    dependencies = [
        ("grove", "0008_job_dispatch"),
        # Every policy exists by then, and the backfill of 0011 ran with the plain setting.
        ("notebooks", "0011_term_stats_kept_by_writes"),
        ("ask", "0002_row_level_security"),
        ("sharing", "0002_public_read_path"),
    ]

    operations = [
        migrations.RunSQL(KEY_TABLE, "DROP FUNCTION grove_hmac(text, bytea); DROP TABLE grove_secret"),
        migrations.RunSQL(
            VERIFIED_ACCOUNT_FUNCTION + policies("(SELECT grove_current_account())"),
            policies("grove_current_account()") + CURRENT_ACCOUNT_FUNCTION,
        ),
    ]
