from django.db import migrations

# A notebook share's JSON pages say how many notes the share holds (`meta.available`,
# SPEC §4: a real count), so the public read path counts them: grove_share_count.
#
# Which notes a share holds is written once: grove_share_members (the conditions of
# sharing 0003's grove_share_notes, unchanged) — a plain SQL function, neither security
# definer nor with its own settings, so PostgreSQL inlines it into the two definer
# functions that call it and the page's seek and limit still reach the indexes. It is
# not granted to anyone: only the definer functions, run by the schema owner, call it.
# grove_share_notes keeps its signature and answers; grove_share_count is new. An older
# release's code calls neither differently, so this only expands.
FUNCTIONS = """
CREATE FUNCTION grove_share_members(p_token text)
RETURNS TABLE (id uuid, content text, kind text, version integer,
               created_at timestamptz, updated_at timestamptz)
LANGUAGE sql STABLE
AS $$
    WITH RECURSIVE share AS (
        SELECT s.account_id, s.note_id, s.notebook_id, s.include_subnotebooks
        FROM public.sharing_share s
        JOIN public.grove_account a ON a.id = s.account_id AND a.is_active
        WHERE s.id = (SELECT public.grove_share_of(p_token)) AND s.revoked_at IS NULL
    ), books AS (
        SELECT nb.id FROM public.notebooks_notebook nb JOIN share ON nb.id = share.notebook_id
        WHERE nb.account_id = share.account_id
          AND nb.deleted_at IS NULL AND nb.archived_at IS NULL
        UNION
        SELECT c.id FROM public.notebooks_notebook c
        JOIN books b ON c.parent_id = b.id
        JOIN share ON share.include_subnotebooks AND c.account_id = share.account_id
        WHERE c.deleted_at IS NULL AND c.archived_at IS NULL
    )
    SELECT n.id, n.content, n.kind, n.version::integer, n.created_at, n.updated_at
    FROM public.notebooks_note n JOIN share ON n.account_id = share.account_id
    WHERE n.status = 'active'
      AND (n.expires_at IS NULL OR n.expires_at > now())
      AND (
          (share.note_id IS NOT NULL AND n.id = share.note_id
           AND (n.notebook_id IS NULL OR EXISTS (
                SELECT 1 FROM public.notebooks_notebook home
                WHERE home.id = n.notebook_id AND home.account_id = n.account_id
                  AND home.deleted_at IS NULL AND home.archived_at IS NULL)))
          OR (share.notebook_id IS NOT NULL AND n.notebook_id IN (SELECT id FROM books))
      )
$$;
REVOKE EXECUTE ON FUNCTION grove_share_members(text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION grove_share_notes(p_token text, p_note uuid,
                                             p_after_time timestamptz, p_after_id uuid,
                                             p_limit integer)
RETURNS TABLE (id uuid, content text, kind text, version integer,
               created_at timestamptz, updated_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT m.id, m.content, m.kind, m.version, m.created_at, m.updated_at
    FROM public.grove_share_members(p_token) m
    WHERE (p_note IS NULL OR m.id = p_note)
      AND (p_after_time IS NULL OR (m.created_at, m.id) < (p_after_time, p_after_id))
    ORDER BY m.created_at DESC, m.id DESC
    LIMIT least(greatest(p_limit, 1), 100)
$$;

CREATE FUNCTION grove_share_count(p_token text) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT count(*) FROM public.grove_share_members(p_token)
$$;
REVOKE EXECUTE ON FUNCTION grove_share_count(text) FROM PUBLIC;
"""

DROP = """
DROP FUNCTION grove_share_count(text);
DROP FUNCTION grove_share_members(text);
"""


def previous_notes() -> str:
    """sharing 0003's grove_share_notes, as it was."""
    import importlib

    functions = importlib.import_module(
        "sharing.migrations.0003_share_functions_take_the_token").FUNCTIONS
    start = functions.index("CREATE FUNCTION grove_share_notes(")
    end = functions.index("CREATE FUNCTION grove_share_viewed(")
    return "DROP FUNCTION grove_share_notes(text, uuid, timestamptz, uuid, integer);\n" \
        + functions[start:end] \
        + "REVOKE EXECUTE ON FUNCTION grove_share_notes(text, uuid, timestamptz, uuid, " \
          "integer) FROM PUBLIC;\n"


class Migration(migrations.Migration):
    dependencies = [("sharing", "0003_share_functions_take_the_token")]

    operations = [migrations.RunSQL(FUNCTIONS, previous_notes() + DROP)]
