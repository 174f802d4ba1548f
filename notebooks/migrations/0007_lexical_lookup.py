from django.db import migrations

# Recall's lexical arm (notebooks.selectors.recall._lexical). Under row-level security PostgreSQL
# evaluates the policy before any operator that is not LEAKPROOF, and `tsvector @@
# tsquery` is not, so from the runtime role every term lookup is a sequential scan that
# de-TOASTs each note's tsvector (over a second at 100k notes). This function runs as
# the schema owner, for whom a SELECT-only policy removes the barrier on notes, so the
# GIN index is used; isolation is kept by the function itself, which reads the account
# from the same transaction setting the policy uses and can only narrow from there.
# EXECUTE is revoked from PUBLIC and granted to the runtime role after every migrate
# (grove.runtime.dbroles). The live-note conditions mirror notebooks.selectors.live_filter;
# tests/notebooks/test_recall_lexical.py holds the two to the same answers.
LEXICAL_MATCHES = """
CREATE FUNCTION grove_lexical_matches(
    term_queries tsquery[], term_weights float8[], notebook_ids uuid[],
    include_personal boolean, max_rows integer)
RETURNS TABLE (note_id uuid, score float8, total bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT id, score, count(*) OVER () FROM (
        SELECT n.id, sum(t.weight) AS score
        FROM unnest(term_queries, term_weights) AS t(query, weight)
        JOIN public.notebooks_note n ON n.search @@ t.query
        WHERE n.account_id = public.grove_current_account()
          AND n.status = 'active'
          AND (n.expires_at IS NULL OR n.expires_at > now())
          AND (n.notebook_id = ANY(notebook_ids)
               OR (include_personal AND n.notebook_id IS NULL))
        GROUP BY n.id
    ) scored
    ORDER BY score DESC, id
    LIMIT max_rows
$$;
REVOKE EXECUTE ON FUNCTION
    grove_lexical_matches(tsquery[], float8[], uuid[], boolean, integer) FROM PUBLIC;
"""

OWNER_POLICY = """
DO $$ BEGIN
    EXECUTE format('CREATE POLICY lexical_lookup ON notebooks_note FOR SELECT TO %I '
                   'USING (true)', current_user);
END $$;
"""

DROP = """
DROP POLICY IF EXISTS lexical_lookup ON notebooks_note;
DROP FUNCTION IF EXISTS grove_lexical_matches(tsquery[], float8[], uuid[], boolean, integer);
"""


class Migration(migrations.Migration):
    dependencies = [("notebooks", "0006_term_statistics")]

    operations = [migrations.RunSQL(LEXICAL_MATCHES + OWNER_POLICY, DROP)]
