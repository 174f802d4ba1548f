from django.db import migrations

# The public read path (sharing 0002) now takes the link's token, not the share's id.
# The functions run as the schema owner, so anyone holding EXECUTE — the runtime role, or
# SQL injected into it — could read any share's content by its id, which is not secret
# in the database (every account's share rows carry it). A token is the id and a MAC of
# it under the server's key (sharing.tokens); grove_share_of checks that MAC with the
# share key in `grove_secret` (grove 0009, owner only), so only a genuine link opens
# anything. The checks are those of sharing.tokens.share_id_of: exactly the canonical
# 43-character spelling, a MAC of 16 bytes. Bodies are otherwise those of 0002.
FUNCTIONS = """
DROP FUNCTION grove_share_viewed(uuid);
DROP FUNCTION grove_share_notes(uuid, uuid, timestamptz, uuid, integer);
DROP FUNCTION grove_share_open(uuid);

CREATE FUNCTION grove_share_of(p_token text) RETURNS uuid
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT encode(substr(t.raw, 1, 16), 'hex')::uuid
    FROM (SELECT CASE WHEN p_token ~ '^[A-Za-z0-9_-]{43}$'
                      THEN decode(translate(p_token, '-_', '+/') || '=', 'base64') END AS raw) t
    WHERE length(t.raw) = 32
      AND rtrim(translate(encode(t.raw, 'base64'), '+/', '-_'), '=') = p_token
      AND substr(public.grove_hmac('share', substr(t.raw, 1, 16)), 1, 16) = substr(t.raw, 17)
$$;
REVOKE EXECUTE ON FUNCTION grove_share_of(text) FROM PUBLIC;

CREATE FUNCTION grove_share_open(p_token text)
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
    WHERE s.id = (SELECT public.grove_share_of(p_token)) AND s.revoked_at IS NULL
      AND (s.notebook_id IS NULL
           OR (nb.id IS NOT NULL AND nb.deleted_at IS NULL AND nb.archived_at IS NULL))
$$;

CREATE FUNCTION grove_share_notes(p_token text, p_note uuid, p_after_time timestamptz,
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
      AND (p_note IS NULL OR n.id = p_note)
      AND (p_after_time IS NULL OR (n.created_at, n.id) < (p_after_time, p_after_id))
    ORDER BY n.created_at DESC, n.id DESC
    LIMIT least(greatest(p_limit, 1), 100)
$$;

CREATE FUNCTION grove_share_viewed(p_token text)
RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    UPDATE public.sharing_share SET view_count = view_count + 1, last_viewed_at = now()
    WHERE id = (SELECT public.grove_share_of(p_token)) AND revoked_at IS NULL
$$;

REVOKE EXECUTE ON FUNCTION grove_share_open(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION grove_share_notes(text, uuid, timestamptz, uuid, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION grove_share_viewed(text) FROM PUBLIC;
"""

DROP = """
DROP FUNCTION grove_share_viewed(text);
DROP FUNCTION grove_share_notes(text, uuid, timestamptz, uuid, integer);
DROP FUNCTION grove_share_open(text);
DROP FUNCTION grove_share_of(text);
"""


def first_form() -> str:
    import importlib

    return importlib.import_module("sharing.migrations.0002_public_read_path").FUNCTIONS


class Migration(migrations.Migration):
    dependencies = [
        ("sharing", "0002_public_read_path"),
        ("grove", "0009_unforgeable_context"),
    ]

    operations = [migrations.RunSQL(FUNCTIONS, DROP + first_form())]
