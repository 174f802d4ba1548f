import importlib

from django.db import migrations

# Migrating back restores 0007's function.
FIRST_FORM = importlib.import_module("notebooks.migrations.0007_lexical_lookup").LEXICAL_MATCHES

# Recall's lexical arm, second form (see 0007 for why it is a security-definer function).
#
# At 100k notes a natural-language query's informative terms (each in at most 20 % of
# notes) matched about a quarter of all notes, and scoring and counting every one of them
# meant visiting each note's row: ~100–300 ms however the index was used. Now only the
# query's *distinctive* terms (rare ones, chosen in notebooks.selectors.recall) select candidates;
# the common terms re-rank the best `rescore` candidates, read once per candidate.
# A note that shares only common words with the query is not a lexical match.
LEXICAL_MATCHES = """
DROP FUNCTION IF EXISTS grove_lexical_matches(tsquery[], float8[], uuid[], boolean, integer);
CREATE FUNCTION grove_lexical_matches(
    distinctive tsquery[], distinctive_weights float8[],
    common tsquery[], common_weights float8[],
    notebook_ids uuid[], include_personal boolean, rescore integer, max_rows integer)
RETURNS TABLE (note_id uuid, score float8, total bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH candidates AS (
        SELECT n.id, sum(t.weight) AS score
        FROM unnest(distinctive, distinctive_weights) AS t(query, weight)
        JOIN public.notebooks_note n ON n.search @@ t.query
        WHERE n.account_id = public.grove_current_account()
          AND n.status = 'active'
          AND (n.expires_at IS NULL OR n.expires_at > now())
          AND (n.notebook_id = ANY(notebook_ids)
               OR (include_personal AND n.notebook_id IS NULL))
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
          ON n.id = h.id AND n.account_id = public.grove_current_account()
    )
    SELECT r.id, r.score, (SELECT count(*) FROM candidates)
    FROM rescored r
    ORDER BY r.score DESC, r.id
    LIMIT max_rows
$$;
REVOKE EXECUTE ON FUNCTION grove_lexical_matches(
    tsquery[], float8[], tsquery[], float8[], uuid[], boolean, integer, integer) FROM PUBLIC;
"""

PREVIOUS = """
DROP FUNCTION IF EXISTS grove_lexical_matches(
    tsquery[], float8[], tsquery[], float8[], uuid[], boolean, integer, integer);
"""


class Migration(migrations.Migration):
    dependencies = [("notebooks", "0007_lexical_lookup")]

    operations = [migrations.RunSQL(LEXICAL_MATCHES, PREVIOUS + FIRST_FORM)]
