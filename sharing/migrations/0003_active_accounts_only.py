from django.db import migrations

# A deactivated account's links open nothing (like its API keys): both read functions
# of sharing 0002 now also require the share's account to be active.
FUNCTIONS = """
CREATE OR REPLACE FUNCTION grove_share_open(p_share uuid)
RETURNS TABLE (kind text, title text, subnotebooks boolean, allow_indexing boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN s.note_id IS NOT NULL THEN 'note' ELSE 'notebook' END,
           coalesce(nb.name, ''), s.include_subnotebooks, s.allow_indexing
    FROM public.sharing_share s
    LEFT JOIN public.notebooks_notebook nb
           ON nb.id = s.notebook_id AND nb.account_id = s.account_id
    JOIN public.grove_account a ON a.id = s.account_id AND a.is_active
    WHERE s.id = p_share AND s.revoked_at IS NULL
      AND (s.notebook_id IS NULL
           OR (nb.id IS NOT NULL AND nb.deleted_at IS NULL AND nb.archived_at IS NULL))
$$;

CREATE OR REPLACE FUNCTION grove_share_notes(p_share uuid, p_note uuid, p_after_time timestamptz,
                                  p_after_id uuid, p_limit integer)
RETURNS TABLE (id uuid, content text, kind text, version integer,
               created_at timestamptz, updated_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE share AS (
        SELECT s.account_id, s.note_id, s.notebook_id, s.include_subnotebooks
        FROM public.sharing_share s
        JOIN public.grove_account a ON a.id = s.account_id AND a.is_active
        WHERE s.id = p_share AND s.revoked_at IS NULL
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
      AND (p_note IS NULL OR n.id = p_note)
      AND (p_after_time IS NULL OR (n.created_at, n.id) < (p_after_time, p_after_id))
    ORDER BY n.created_at DESC, n.id DESC
    LIMIT least(greatest(p_limit, 1), 100)
$$;

"""

PREVIOUS = """
CREATE OR REPLACE FUNCTION grove_share_open(p_share uuid)
RETURNS TABLE (kind text, title text, subnotebooks boolean, allow_indexing boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN s.note_id IS NOT NULL THEN 'note' ELSE 'notebook' END,
           coalesce(nb.name, ''), s.include_subnotebooks, s.allow_indexing
    FROM public.sharing_share s
    LEFT JOIN public.notebooks_notebook nb
           ON nb.id = s.notebook_id AND nb.account_id = s.account_id
    WHERE s.id = p_share AND s.revoked_at IS NULL
      AND (s.notebook_id IS NULL
           OR (nb.id IS NOT NULL AND nb.deleted_at IS NULL AND nb.archived_at IS NULL))
$$;

CREATE OR REPLACE FUNCTION grove_share_notes(p_share uuid, p_note uuid, p_after_time timestamptz,
                                  p_after_id uuid, p_limit integer)
RETURNS TABLE (id uuid, content text, kind text, version integer,
               created_at timestamptz, updated_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE share AS (
        SELECT s.account_id, s.note_id, s.notebook_id, s.include_subnotebooks
        FROM public.sharing_share s
        WHERE s.id = p_share AND s.revoked_at IS NULL
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
      AND (p_note IS NULL OR n.id = p_note)
      AND (p_after_time IS NULL OR (n.created_at, n.id) < (p_after_time, p_after_id))
    ORDER BY n.created_at DESC, n.id DESC
    LIMIT least(greatest(p_limit, 1), 100)
$$;

"""


class Migration(migrations.Migration):
    dependencies = [("sharing", "0002_public_read_path")]

    operations = [migrations.RunSQL(FUNCTIONS, PREVIOUS)]
