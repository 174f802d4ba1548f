"""Recall's lexical arm scores passages (issue 37), and the term statistics count them.

* **Term statistics** (notebooks 0011/0025) now count *passages* of active notes: the
  empty lexeme is how many there are, `' length'` their distinct lexemes in all (BM25's
  average passage length), each lexeme how many passages hold it. A passage's text never
  changes (an edit replaces the passages it touched), so triggers on `passages_passage`
  add a passage's lexemes when it is inserted under an active note and take them away
  when it is deleted from one; the trigger on `notebooks_note` now only follows a note
  into and out of `active` (its passages' lexemes all at once). Existing notes are one
  passage each whose lexical vector equals the note's (the text, no heading trail), so
  the counts already stored stay exact: nothing is recounted.
* **`grove_passage_matches`**: `grove_lexical_matches` (notebooks 0027) over passages —
  the passages holding a clause (at most `cap` + 1 read per clause), the best `rescore`
  of them by their clauses' idf sum scored with BM25 over every kept term, against the
  average passage length — and then each note once, by its best passage, with that
  passage's id. The old function stays for a release still running it.
* **An older release's vectors** (a rolling upgrade: its worker may take the new
  release's `embed` job and store a note-level vector, then call the note ready): a
  trigger on `notebooks_noteembedding`, which this release never writes, marks such a note's
  passages as behind (`passages_hash` emptied), so `grove.passages` cuts and embeds it
  again with this release's rules.
"""

import importlib

from django.db import migrations

NOTES_0025 = importlib.import_module("notebooks.migrations.0025_lexical_bm25")
NOTES_0027 = importlib.import_module("notebooks.migrations.0027_lexical_clauses")

LENGTH_LEXEME = NOTES_0025.LENGTH_LEXEME
IN_WINDOW = NOTES_0027.IN_WINDOW

TRIGGERS = """
DROP TRIGGER IF EXISTS term_stats_inserted ON notebooks_note;

CREATE OR REPLACE FUNCTION grove_term_stats_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.notebooks_termdelta (account_id, lexeme, ndoc)
    SELECT account_id, lexeme, sum(change) FROM (
        SELECT p.account_id, l.lexeme,
               CASE WHEN n.status = 'active' THEN 1 ELSE -1 END AS change
        FROM grove_old_notes o JOIN grove_new_notes n ON n.id = o.id
        JOIN public.passages_passage p ON p.note_id = n.id
        CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(p.search), '')) AS l(lexeme)
        WHERE (o.status = 'active') <> (n.status = 'active')
        UNION ALL
        SELECT p.account_id, '{length}',
               CASE WHEN n.status = 'active' THEN 1 ELSE -1 END * length(p.search)
        FROM grove_old_notes o JOIN grove_new_notes n ON n.id = o.id
        JOIN public.passages_passage p ON p.note_id = n.id
        WHERE (o.status = 'active') <> (n.status = 'active')
    ) changes
    GROUP BY account_id, lexeme
    HAVING sum(change) <> 0;
    RETURN NULL;
END $$;

CREATE FUNCTION grove_passage_terms_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign integer := CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    INSERT INTO public.notebooks_termdelta (account_id, lexeme, ndoc)
    SELECT p.account_id, l.lexeme, sign * count(*)
    FROM grove_changed_passages p
    JOIN public.notebooks_note n ON n.id = p.note_id AND n.status = 'active'
    CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(p.search), '')) AS l(lexeme)
    GROUP BY p.account_id, l.lexeme
    UNION ALL
    SELECT p.account_id, '{length}', sign * sum(length(p.search))
    FROM grove_changed_passages p
    JOIN public.notebooks_note n ON n.id = p.note_id AND n.status = 'active'
    GROUP BY p.account_id HAVING sum(length(p.search)) <> 0;
    RETURN NULL;
END $$;

CREATE TRIGGER passage_terms_inserted AFTER INSERT ON passages_passage
    REFERENCING NEW TABLE AS grove_changed_passages
    FOR EACH STATEMENT EXECUTE FUNCTION grove_passage_terms_changed();
CREATE TRIGGER passage_terms_deleted AFTER DELETE ON passages_passage
    REFERENCING OLD TABLE AS grove_changed_passages
    FOR EACH STATEMENT EXECUTE FUNCTION grove_passage_terms_changed();
""".replace("{length}", LENGTH_LEXEME)

TRIGGERS_BEFORE = """
DROP TRIGGER IF EXISTS passage_terms_inserted ON passages_passage;
DROP TRIGGER IF EXISTS passage_terms_deleted ON passages_passage;
DROP FUNCTION IF EXISTS grove_passage_terms_changed();
CREATE TRIGGER term_stats_inserted AFTER INSERT ON notebooks_note
    REFERENCING NEW TABLE AS grove_new_notes
    FOR EACH STATEMENT EXECUTE FUNCTION grove_term_stats_inserted();
""" + NOTES_0025.TRIGGERS

OLD_VECTORS = """
CREATE FUNCTION grove_old_vector_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE public.notebooks_note n SET passages_hash = ''
    FROM grove_old_vectors v WHERE n.id = v.note_id AND n.passages_hash <> '';
    RETURN NULL;
END $$;
CREATE TRIGGER old_vector_inserted AFTER INSERT ON notebooks_noteembedding
    REFERENCING NEW TABLE AS grove_old_vectors
    FOR EACH STATEMENT EXECUTE FUNCTION grove_old_vector_written();
CREATE TRIGGER old_vector_updated AFTER UPDATE ON notebooks_noteembedding
    REFERENCING NEW TABLE AS grove_old_vectors
    FOR EACH STATEMENT EXECUTE FUNCTION grove_old_vector_written();
"""

OLD_VECTORS_DROP = """
DROP TRIGGER IF EXISTS old_vector_inserted ON notebooks_noteembedding;
DROP TRIGGER IF EXISTS old_vector_updated ON notebooks_noteembedding;
DROP FUNCTION IF EXISTS grove_old_vector_written();
"""

SIGNATURE = ("tsquery[], float8[], text[], float8[], uuid[], boolean, integer, integer, "
             "integer, text, daterange, tstzrange, boolean, float8, float8, float8")

PASSAGE_MATCHES = """
CREATE FUNCTION grove_passage_matches(
    clauses tsquery[], clause_weights float8[],
    terms text[], term_weights float8[],
    notebook_ids uuid[], include_personal boolean, rescore integer, max_rows integer,
    cap integer, tag text, window_days daterange, window_span tstzrange,
    window_filter boolean, k1 float8, b float8, avgdl float8)
RETURNS TABLE (note_id uuid, passage_id bigint, score float8, total bigint, capped boolean,
               in_window boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH matched AS MATERIALIZED (
        SELECT c.k, m.id, m.note_id, c.weight, m.in_window
        FROM unnest(clauses, clause_weights) WITH ORDINALITY AS c(query, weight, k)
        CROSS JOIN LATERAL (
            SELECT p.id, p.note_id, (window_days IS NOT NULL AND {IN_WINDOW}) AS in_window
            FROM public.passages_passage p
            JOIN public.notebooks_note n ON n.id = p.note_id
            WHERE p.search @@ c.query
              AND p.account_id = (SELECT public.grove_current_account())
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
        SELECT id, note_id, sum(weight) AS score, bool_or(in_window) AS in_window
        FROM matched GROUP BY id, note_id
    ),
    head AS (
        SELECT id, note_id, score, in_window FROM candidates
        ORDER BY in_window DESC, score DESC, id LIMIT rescore
    ),
    rescored AS (
        SELECT h.id, h.note_id, h.in_window, coalesce((
            SELECT sum(q.weight * cardinality(u.positions) * (k1 + 1)
                       / (cardinality(u.positions)
                          + k1 * (1 - b + b * length(p.search) / avgdl)))
            FROM unnest(p.search) AS u(lexeme, positions, weights)
            JOIN unnest(terms, term_weights) AS q(term, weight) ON q.term = u.lexeme
        ), 0) AS score
        FROM head h
        JOIN public.passages_passage p
          ON p.id = h.id AND p.account_id = (SELECT public.grove_current_account())
    ),
    best AS (
        SELECT DISTINCT ON (note_id) note_id, id, score, in_window FROM rescored
        ORDER BY note_id, score DESC, id
    )
    SELECT b.note_id, b.id, b.score, (SELECT count(DISTINCT note_id) FROM candidates),
           (SELECT coalesce(bool_or(read > cap), false)
            FROM (SELECT count(*) AS read FROM matched GROUP BY k) per_clause),
           b.in_window
    FROM best b
    ORDER BY b.in_window DESC, b.score DESC, b.note_id
    LIMIT max_rows
$$;
REVOKE EXECUTE ON FUNCTION grove_passage_matches({SIGNATURE}) FROM PUBLIC;
""".replace("{IN_WINDOW}", IN_WINDOW).replace("{SIGNATURE}", SIGNATURE)

# The function reads passages as the schema owner, for whom a SELECT-only policy removes
# the row-level barrier that would keep `@@` off the GIN index (notebooks 0007).
OWNER_POLICY = """
DO $$ BEGIN
    EXECUTE format('CREATE POLICY lexical_lookup ON passages_passage FOR SELECT TO %I '
                   'USING (true)', current_user);
END $$;
"""

DROP = f"""
DROP POLICY IF EXISTS lexical_lookup ON passages_passage;
DROP FUNCTION IF EXISTS grove_passage_matches({SIGNATURE});
"""


class Migration(migrations.Migration):

    dependencies = [("passages", "0001_initial")]

    operations = [
        migrations.RunSQL(TRIGGERS, TRIGGERS_BEFORE),
        migrations.RunSQL(PASSAGE_MATCHES + OWNER_POLICY, DROP),
        migrations.RunSQL(OLD_VECTORS, OLD_VECTORS_DROP),
    ]
