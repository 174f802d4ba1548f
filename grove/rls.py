"""Migration helpers for row-level security (SPEC §5, see `grove.tenancy`)."""

from django.db import migrations

CURRENT_ACCOUNT_FUNCTION = """
CREATE OR REPLACE FUNCTION grove_current_account() RETURNS uuid
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT NULLIF(current_setting('grove.account_id', true), '')::uuid $$;
"""


def enable_rls(table: str) -> migrations.RunSQL:
    """Only rows of the account named by the transaction-local `grove.account_id` are
    visible or writable — for every role, the table owner included (FORCE)."""
    return migrations.RunSQL(
        sql=[
            f'ALTER TABLE "{table}" ENABLE ROW LEVEL SECURITY',
            f'ALTER TABLE "{table}" FORCE ROW LEVEL SECURITY',
            f'CREATE POLICY account_isolation ON "{table}" '
            "USING (account_id = grove_current_account()) "
            "WITH CHECK (account_id = grove_current_account())",
        ],
        reverse_sql=[
            f'DROP POLICY IF EXISTS account_isolation ON "{table}"',
            f'ALTER TABLE "{table}" NO FORCE ROW LEVEL SECURITY',
            f'ALTER TABLE "{table}" DISABLE ROW LEVEL SECURITY',
        ],
    )
