"""BM25 in recall's lexical arm (issue 21).

* **Document lengths**: the term-statistics triggers (0011) also keep, under the
  pseudo-lexeme `' length'` (a space: no parser ever makes one, and the search-variant
  lookup reads only alphanumeric lexemes), the sum over active notes of their number of
  distinct lexemes — so the average note length BM25 normalises by is one more row of
  the statement that reads the query's term counts. Existing accounts are counted here.
* **`grove_lexical_matches`** keeps its candidate rule (notes containing a distinctive
  term, ranked by the idf sum of those terms, the query's time window first) and scores
  the best `rescore` of them with BM25 over every kept query term:
  Σ idf · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl)), tf read from the note's `search`
  vector (its positions), dl its number of distinct lexemes. Scoring every candidate
  would read every candidate's vector (~1,700 per query at 100k notes, tens of
  thousands at 1M); the idf-sum head keeps that bounded. The `common` arguments of 0024
  give way to the terms' text and weights and the BM25 parameters.
"""

import importlib

from django.db import migrations

PREVIOUS = importlib.import_module("notebooks.migrations.0024_time_aware_recall")

LENGTH_LEXEME = " length"

TRIGGERS = """
CREATE OR REPLACE FUNCTION grove_term_stats_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.notebooks_termdelta (account_id, lexeme, ndoc)
    SELECT n.account_id, l.lexeme, count(*)
    FROM grove_new_notes n
    CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(n.search), '')) AS l(lexeme)
    WHERE n.status = 'active'
    GROUP BY n.account_id, l.lexeme
    UNION ALL
    SELECT n.account_id, '{length}', sum(length(n.search))
    FROM grove_new_notes n
    WHERE n.status = 'active'
    GROUP BY n.account_id
    HAVING sum(length(n.search)) <> 0;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION grove_term_stats_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.notebooks_termdelta (account_id, lexeme, ndoc)
    SELECT account_id, lexeme, sum(change) FROM (
        SELECT o.account_id, l.lexeme, -1 AS change
        FROM grove_old_notes o JOIN grove_new_notes n ON n.id = o.id
        CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(o.search), '')) AS l(lexeme)
        WHERE o.status = 'active' AND (n.status <> 'active' OR n.search <> o.search)
        UNION ALL
        SELECT n.account_id, l.lexeme, 1
        FROM grove_old_notes o JOIN grove_new_notes n ON n.id = o.id
        CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(n.search), '')) AS l(lexeme)
        WHERE n.status = 'active' AND (o.status <> 'active' OR n.search <> o.search)
        UNION ALL
        SELECT o.account_id, '{length}', -length(o.search)
        FROM grove_old_notes o JOIN grove_new_notes n ON n.id = o.id
        WHERE o.status = 'active' AND (n.status <> 'active' OR n.search <> o.search)
        UNION ALL
        SELECT n.account_id, '{length}', length(n.search)
        FROM grove_old_notes o JOIN grove_new_notes n ON n.id = o.id
        WHERE n.status = 'active' AND (o.status <> 'active' OR n.search <> o.search)
    ) changes
    GROUP BY account_id, lexeme
    HAVING sum(change) <> 0;
    RETURN NULL;
END $$;
""".replace("{length}", LENGTH_LEXEME)

# The triggers of 0011 as they were (migrating back).
TRIGGERS_BEFORE = """
CREATE OR REPLACE FUNCTION grove_term_stats_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.notebooks_termdelta (account_id, lexeme, ndoc)
    SELECT n.account_id, l.lexeme, count(*)
    FROM grove_new_notes n
    CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(n.search), '')) AS l(lexeme)
    WHERE n.status = 'active'
    GROUP BY n.account_id, l.lexeme;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION grove_term_stats_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.notebooks_termdelta (account_id, lexeme, ndoc)
    SELECT account_id, lexeme, sum(change) FROM (
        SELECT o.account_id, l.lexeme, -1 AS change
        FROM grove_old_notes o JOIN grove_new_notes n ON n.id = o.id
        CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(o.search), '')) AS l(lexeme)
        WHERE o.status = 'active' AND (n.status <> 'active' OR n.search <> o.search)
        UNION ALL
        SELECT n.account_id, l.lexeme, 1
        FROM grove_old_notes o JOIN grove_new_notes n ON n.id = o.id
        CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(n.search), '')) AS l(lexeme)
        WHERE n.status = 'active' AND (o.status <> 'active' OR n.search <> o.search)
    ) changes
    GROUP BY account_id, lexeme
    HAVING sum(change) <> 0;
    RETURN NULL;
END $$;
DELETE FROM notebooks_termstat WHERE lexeme = '{length}';
DELETE FROM notebooks_termdelta WHERE lexeme = '{length}';
""".replace("{length}", LENGTH_LEXEME)

# Existing accounts: their lengths, once (as 0011's backfill: the owner acts as each
# account in turn; the trigger's replacement above holds the table's lock meanwhile).
BACKFILL = """
DO $$
DECLARE
    acct uuid;
BEGIN
    FOR acct IN SELECT id FROM grove_account LOOP
        PERFORM set_config('grove.account_id', acct::text, true);
        DELETE FROM notebooks_termstat WHERE account_id = acct AND lexeme = '{length}';
        DELETE FROM notebooks_termdelta WHERE account_id = acct AND lexeme = '{length}';
        INSERT INTO notebooks_termstat (account_id, lexeme, ndoc)
        SELECT acct, '{length}', sum(length(n.search))
        FROM notebooks_note n
        WHERE n.account_id = acct AND n.status = 'active'
        HAVING sum(length(n.search)) > 0;
    END LOOP;
    PERFORM set_config('grove.account_id', '', true);
END $$;
""".replace("{length}", LENGTH_LEXEME)

IN_WINDOW = PREVIOUS.IN_WINDOW

LEXICAL_MATCHES = """
DROP FUNCTION IF EXISTS grove_lexical_matches(
    tsquery[], float8[], tsquery[], float8[], uuid[], boolean, integer, integer, text,
    daterange, tstzrange, boolean);
CREATE FUNCTION grove_lexical_matches(
    distinctive tsquery[], distinctive_weights float8[],
    terms text[], term_weights float8[],
    notebook_ids uuid[], include_personal boolean, rescore integer, max_rows integer,
    tag text, window_days daterange, window_span tstzrange, window_filter boolean,
    k1 float8, b float8, avgdl float8)
RETURNS TABLE (note_id uuid, score float8, total bigint, in_window boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH candidates AS (
        SELECT n.id, sum(t.weight) AS score,
               bool_or(window_days IS NOT NULL AND {IN_WINDOW}) AS in_window
        FROM unnest(distinctive, distinctive_weights) AS t(query, weight)
        JOIN public.notebooks_note n ON n.search @@ t.query
        WHERE n.account_id = (SELECT public.grove_current_account())
          AND n.status = 'active'
          AND (n.expires_at IS NULL OR n.expires_at > now())
          AND (n.notebook_id = ANY(notebook_ids)
               OR (include_personal AND n.notebook_id IS NULL))
          AND (tag IS NULL OR n.tags @> ARRAY[tag]::varchar[])
          AND (window_days IS NULL OR NOT window_filter OR {IN_WINDOW})
        GROUP BY n.id
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
    SELECT r.id, r.score, (SELECT count(*) FROM candidates), r.in_window
    FROM rescored r
    ORDER BY r.in_window DESC, r.score DESC, r.id
    LIMIT max_rows
$$;
REVOKE EXECUTE ON FUNCTION grove_lexical_matches(
    tsquery[], float8[], text[], float8[], uuid[], boolean, integer, integer, text,
    daterange, tstzrange, boolean, float8, float8, float8) FROM PUBLIC;
""".replace("{IN_WINDOW}", IN_WINDOW)

DROP_NEW = """
DROP FUNCTION IF EXISTS grove_lexical_matches(
    tsquery[], float8[], text[], float8[], uuid[], boolean, integer, integer, text,
    daterange, tstzrange, boolean, float8, float8, float8);
"""


class Migration(migrations.Migration):

    dependencies = [("notebooks", "0024_time_aware_recall")]

    operations = [
        migrations.RunSQL(TRIGGERS + BACKFILL, TRIGGERS_BEFORE),
        migrations.RunSQL(LEXICAL_MATCHES, DROP_NEW + PREVIOUS.LEXICAL_MATCHES),
    ]
