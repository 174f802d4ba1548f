"""Migration helpers for row-level security (SPEC §5, see `grove.kernel.tenancy`)."""

from django.db import migrations

# The first form (grove 0002): the plain setting, which the runtime role could set to any
# account itself. Kept for that migration; grove 0009 replaces it.
CURRENT_ACCOUNT_FUNCTION = """
CREATE OR REPLACE FUNCTION grove_current_account() RETURNS uuid
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT NULLIF(current_setting('grove.account_id', true), '')::uuid $$;
"""

# What the policies compare with: one evaluation per statement (an InitPlan), not one
# call of the security-definer function per row.
CURRENT_ACCOUNT = "(SELECT grove_current_account())"


Reference = tuple[str, str, str, str]  # (table, constraint, column, target table)


def same_account_references(references: list[Reference], *,
                            keys: list[tuple[str, str]] | None = None) -> migrations.RunSQL:
    """Every reference points at a row of its own account: a foreign key on
    (account_id, column) to the target's (account_id, id) — row-level security hides
    other accounts' rows, and this makes pointing at one impossible too. `keys`:
    (table, constraint) pairs adding the UNIQUE (account_id, id) that such keys need,
    first (and dropped last)."""
    keys = keys or []
    return migrations.RunSQL(
        [*[f"ALTER TABLE {table} ADD CONSTRAINT {name} UNIQUE (account_id, id)"
           for table, name in keys],
         *[f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY (account_id, {column}) "
           f"REFERENCES {target} (account_id, id)" for table, name, column, target in references]],
        [*[f"ALTER TABLE {table} DROP CONSTRAINT {name}" for table, name, _, _ in references],
         *[f"ALTER TABLE {table} DROP CONSTRAINT {name}" for table, name in reversed(keys)]],
    )


def enable_rls(table: str) -> migrations.RunSQL:
    """Only rows of the account of the transaction's verified context are visible or
    writable — for every role, the table owner included (FORCE)."""
    return migrations.RunSQL(
        sql=[
            f'ALTER TABLE "{table}" ENABLE ROW LEVEL SECURITY',
            f'ALTER TABLE "{table}" FORCE ROW LEVEL SECURITY',
            f'CREATE POLICY account_isolation ON "{table}" '
            f"USING (account_id = {CURRENT_ACCOUNT}) "
            f"WITH CHECK (account_id = {CURRENT_ACCOUNT})",
        ],
        reverse_sql=[
            f'DROP POLICY IF EXISTS account_isolation ON "{table}"',
            f'ALTER TABLE "{table}" NO FORCE ROW LEVEL SECURITY',
            f'ALTER TABLE "{table}" DISABLE ROW LEVEL SECURITY',
        ],
    )
