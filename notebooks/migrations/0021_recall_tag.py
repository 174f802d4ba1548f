"""Recall can be narrowed to one tag: `grove_lexical_matches` (migration 0008) takes the
tag too. Same body, one more condition, so the GIN index on `tags` can join the text
index in the same bitmap scan; the semantic arm and the profile filter under RLS.

The account is checked once per statement — `(SELECT grove_current_account())`, as the
library's lookups do since 0023 — not once per candidate row: each call recomputes the
tenant context's MAC, and the lexical arm visits ~1,700 candidates per query at 100k."""

import importlib

from django.db import migrations

# Migrating back restores 0008's function.
SECOND_FORM = importlib.import_module(
    "notebooks.migrations.0008_lexical_candidates").LEXICAL_MATCHES

LEXICAL_MATCHES = """
DROP FUNCTION IF EXISTS grove_lexical_matches(
    tsquery[], float8[], tsquery[], float8[], uuid[], boolean, integer, integer);
CREATE FUNCTION grove_lexical_matches(
    distinctive tsquery[], distinctive_weights float8[],
    common tsquery[], common_weights float8[],
    notebook_ids uuid[], include_personal boolean, rescore integer, max_rows integer,
    tag text)
RETURNS TABLE (note_id uuid, score float8, total bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH candidates AS (
        SELECT n.id, sum(t.weight) AS score
        FROM unnest(distinctive, distinctive_weights) AS t(query, weight)
        JOIN public.notebooks_note n ON n.search @@ t.query
        WHERE n.account_id = (SELECT public.grove_current_account())
          AND n.status = 'active'
          AND (n.expires_at IS NULL OR n.expires_at > now())
          AND (n.notebook_id = ANY(notebook_ids)
               OR (include_personal AND n.notebook_id IS NULL))
          AND (tag IS NULL OR n.tags @> ARRAY[tag]::varchar[])
        GROUP BY n.id
    ),
    head AS (
        SELECT id, score FROM candidates ORDER BY score DESC, id LIMIT rescore
    ),
    rescored AS (
        SELECT h.id, h.score + coalesce((
            SELECT sum(c.weight) FROM unnest(common, common_weights) AS c(query, weight)
            WHERE n.search @@ c.query), 0) AS score
        FROM head h
        JOIN public.notebooks_note n
          ON n.id = h.id AND n.account_id = (SELECT public.grove_current_account())
    )
    SELECT r.id, r.score, (SELECT count(*) FROM candidates)
    FROM rescored r
    ORDER BY r.score DESC, r.id
    LIMIT max_rows
$$;
REVOKE EXECUTE ON FUNCTION grove_lexical_matches(
    tsquery[], float8[], tsquery[], float8[], uuid[], boolean, integer, integer, text)
    FROM PUBLIC;
"""

PREVIOUS = """
DROP FUNCTION IF EXISTS grove_lexical_matches(
    tsquery[], float8[], tsquery[], float8[], uuid[], boolean, integer, integer, text);
"""


class Migration(migrations.Migration):
    dependencies = [("notebooks", "0020_unique_notebook_names")]

    operations = [migrations.RunSQL(LEXICAL_MATCHES, PREVIOUS + SECOND_FORM)]
