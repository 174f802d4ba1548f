"""Recall's lexical arm reads a bounded number of matches (issue 21).

Until 0025 the arm's candidates were every note holding a distinctive term — 1.7 % of
the notes at every corpus size, so its work grew with the corpus (16,678 row visits per
query at 1M notes). Now the caller (`recall_terms.choose_clauses`) picks *clauses*
from the term statistics so that their matches fit a budget — single terms rarest
first, or, when even the rarest term is too common, pairs of the rarest terms (a note
must hold both) — and this function reads at most `cap` + 1 matches of each clause (a
LATERAL scan with a LIMIT, so the heap visits stop there). It reports whether any clause
had more matches than it read (`capped`): then `total` is a count of the matches read,
a lower bound, and recall says so.

Clause weights are the idf sums of their terms; a note's pre-rank score is the sum over
the clauses it holds. The best `rescore` are scored with BM25 over every kept term, as
in 0025.
"""

import importlib

from django.db import migrations

PREVIOUS = importlib.import_module("notebooks.migrations.0025_lexical_bm25")

IN_WINDOW = PREVIOUS.IN_WINDOW

SIGNATURE = ("tsquery[], float8[], text[], float8[], uuid[], boolean, integer, integer, "
             "integer, text, daterange, tstzrange, boolean, float8, float8, float8")

LEXICAL_MATCHES = """
DROP FUNCTION IF EXISTS grove_lexical_matches(
    tsquery[], float8[], text[], float8[], uuid[], boolean, integer, integer, text,
    daterange, tstzrange, boolean, float8, float8, float8);
CREATE FUNCTION grove_lexical_matches(
    clauses tsquery[], clause_weights float8[],
    terms text[], term_weights float8[],
    notebook_ids uuid[], include_personal boolean, rescore integer, max_rows integer,
    cap integer, tag text, window_days daterange, window_span tstzrange,
    window_filter boolean, k1 float8, b float8, avgdl float8)
RETURNS TABLE (note_id uuid, score float8, total bigint, capped boolean, in_window boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH matched AS MATERIALIZED (
        SELECT c.k, m.id, c.weight, m.in_window
        FROM unnest(clauses, clause_weights) WITH ORDINALITY AS c(query, weight, k)
        CROSS JOIN LATERAL (
            SELECT n.id, (window_days IS NOT NULL AND {IN_WINDOW}) AS in_window
            FROM public.notebooks_note n
            WHERE n.search @@ c.query
              AND n.account_id = (SELECT public.grove_current_account())
              AND n.status = 'active'
              AND (n.expires_at IS NULL OR n.expires_at > now())
              AND (n.notebook_id = ANY(notebook_ids)
                   OR (include_personal AND n.notebook_id IS NULL))
              AND (tag IS NULL OR n.tags @> ARRAY[tag]::varchar[])
              AND (window_days IS NULL OR NOT window_filter OR {IN_WINDOW})
            LIMIT cap + 1
        ) m
    ),
    candidates AS (
        SELECT id, sum(weight) AS score, bool_or(in_window) AS in_window
        FROM matched GROUP BY id
    ),
    head AS (
        SELECT id, score, in_window FROM candidates
        ORDER BY in_window DESC, score DESC, id LIMIT rescore
    ),
    rescored AS (
        SELECT h.id, h.in_window, coalesce((
            SELECT sum(q.weight * cardinality(u.positions) * (k1 + 1)
                       / (cardinality(u.positions)
                          + k1 * (1 - b + b * length(n.search) / avgdl)))
            FROM unnest(n.search) AS u(lexeme, positions, weights)
            JOIN unnest(terms, term_weights) AS q(term, weight) ON q.term = u.lexeme
        ), 0) AS score
        FROM head h
        JOIN public.notebooks_note n
          ON n.id = h.id AND n.account_id = (SELECT public.grove_current_account())
    )
    SELECT r.id, r.score, (SELECT count(*) FROM candidates),
           (SELECT coalesce(bool_or(read > cap), false)
            FROM (SELECT count(*) AS read FROM matched GROUP BY k) per_clause),
           r.in_window
    FROM rescored r
    ORDER BY r.in_window DESC, r.score DESC, r.id
    LIMIT max_rows
$$;
REVOKE EXECUTE ON FUNCTION grove_lexical_matches({SIGNATURE}) FROM PUBLIC;
""".replace("{IN_WINDOW}", IN_WINDOW).replace("{SIGNATURE}", SIGNATURE)

DROP_NEW = f"DROP FUNCTION IF EXISTS grove_lexical_matches({SIGNATURE});"


class Migration(migrations.Migration):

    dependencies = [("notebooks", "0026_stated_dates_default")]

    operations = [
        migrations.RunSQL(LEXICAL_MATCHES, DROP_NEW + PREVIOUS.LEXICAL_MATCHES),
    ]
