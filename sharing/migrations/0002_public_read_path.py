from django.db import migrations

from grove.kernel.rls import enable_rls, same_account_references

# The public read path (SPEC §9). Visitors have no account: the runtime role, with no
# `grove.account_id` set, sees no row of any account table (row-level security). What a
# share link may show is read only through these security-definer functions, run by the
# schema owner (for whom SELECT-only policies lift the barrier on shares, notebooks and
# notes — notes' `lexical_lookup` is notebooks 0007's). Each takes the share id (from a
# verified token, `sharing.tokens`) and can return nothing but that share's target:
#
# * grove_share_open: the live share (not revoked, its account active — a deactivated
#   account's links open nothing, like its keys; a notebook share's notebook live);
# * grove_share_notes: its live member notes, newest first, keyset-paged — the note
#   itself, or the notebook's notes (with `include_subnotebooks`, its live subtree's),
#   active, not expired, in a live notebook — optionally one member by id;
# * grove_share_viewed: counts a view.
#
# The live-note conditions mirror notebooks.selectors.live_filter;
# tests/sharing/test_shares.py holds them to the same answers.
FUNCTIONS = """
CREATE FUNCTION grove_share_open(p_share uuid)
RETURNS TABLE (kind text, title text, subnotebooks boolean, allow_indexing boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN s.note_id IS NOT NULL THEN 'note' ELSE 'notebook' END,
           coalesce(nb.name, ''), s.include_subnotebooks, s.allow_indexing
    FROM public.sharing_share s
    JOIN public.grove_account a ON a.id = s.account_id AND a.is_active
    LEFT JOIN public.notebooks_notebook nb
           ON nb.id = s.notebook_id AND nb.account_id = s.account_id
    WHERE s.id = p_share AND s.revoked_at IS NULL
      AND (s.notebook_id IS NULL
           OR (nb.id IS NOT NULL AND nb.deleted_at IS NULL AND nb.archived_at IS NULL))
$$;

CREATE FUNCTION grove_share_notes(p_share uuid, p_note uuid, p_after_time timestamptz,
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

CREATE FUNCTION grove_share_viewed(p_share uuid)
RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    UPDATE public.sharing_share SET view_count = view_count + 1, last_viewed_at = now()
    WHERE id = p_share AND revoked_at IS NULL
$$;

REVOKE EXECUTE ON FUNCTION grove_share_open(uuid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION grove_share_notes(uuid, uuid, timestamptz, uuid, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION grove_share_viewed(uuid) FROM PUBLIC;
"""

OWNER_POLICIES = """
DO $$ BEGIN
    EXECUTE format('CREATE POLICY share_lookup ON sharing_share FOR SELECT TO %I '
                   'USING (true)', current_user);
    EXECUTE format('CREATE POLICY share_views ON sharing_share FOR UPDATE TO %I '
                   'USING (true) WITH CHECK (true)', current_user);
    EXECUTE format('CREATE POLICY share_lookup ON notebooks_notebook FOR SELECT TO %I '
                   'USING (true)', current_user);
END $$;
"""

DROP = """
DROP POLICY IF EXISTS share_lookup ON notebooks_notebook;
DROP POLICY IF EXISTS share_views ON sharing_share;
DROP POLICY IF EXISTS share_lookup ON sharing_share;
DROP FUNCTION IF EXISTS grove_share_viewed(uuid);
DROP FUNCTION IF EXISTS grove_share_notes(uuid, uuid, timestamptz, uuid, integer);
DROP FUNCTION IF EXISTS grove_share_open(uuid);
"""

REFERENCES = [
    ("sharing_share", "share_note_same_account", "note_id", "notebooks_note"),
    ("sharing_share", "share_notebook_same_account", "notebook_id", "notebooks_notebook"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("sharing", "0001_shares"),
        ("notebooks", "0010_search_matches"),
        ("grove", "0003_same_account_references"),
    ]

    operations = [
        enable_rls("sharing_share"),
        same_account_references(REFERENCES),
        migrations.RunSQL(FUNCTIONS + OWNER_POLICIES, DROP),
    ]
