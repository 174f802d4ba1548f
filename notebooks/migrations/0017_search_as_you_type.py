import django.contrib.postgres.indexes
import django.db.models
from django.contrib.postgres.operations import CreateExtension, TrigramExtension
from django.db import migrations

# Search as you type (notebooks.selectors.search_terms): a word also matches the
# account's own words spelled like it — "postgresql" finds "Postgres", a typo finds the
# word meant. The candidates are the account's lexemes (term statistics, 0006/0011),
# matched by trigram similarity (pg_trgm) through a trigram index.
#
# As for full text (0007, 0010), the trigram operators are not LEAKPROOF: under
# row-level security PostgreSQL would apply the account policy first and compare every
# lexeme of the account (~100k at 100k notes) instead of using the index. So a
# security-definer function run by the schema owner — for whom the SELECT-only
# `variant_lookup` policies lift the barrier — looks them up, keeping to the account of
# the transaction's verified context (the same setting the policies use). It returns
# words, never notes: which notes match is decided afterwards by the caller's own query
# under RLS, with its grant and filters.
SEARCH_VARIANTS = """
CREATE FUNCTION grove_search_variants(word text, stem text, threshold float8, max_rows integer)
RETURNS SETOF text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_trgm.similarity_threshold = 0.3
AS $$
    WITH lexicon AS (
        SELECT c.lexeme FROM (
            SELECT t.lexeme, t.ndoc::bigint AS ndoc FROM public.notebooks_termstat t
            WHERE t.account_id = public.grove_current_account()
              AND t.lexeme OPERATOR(public.%) word
            UNION ALL
            SELECT d.lexeme, d.ndoc FROM public.notebooks_termdelta d
            WHERE d.account_id = public.grove_current_account()
              AND d.lexeme OPERATOR(public.%) word
        ) c
        -- Words, not compounds or tokens with punctuation ("β-cell", "cell–").
        WHERE c.lexeme ~ '^[[:alnum:]]+$'
        GROUP BY c.lexeme
        HAVING sum(c.ndoc) > 0
    ),
    known AS (SELECT EXISTS (SELECT 1 FROM lexicon WHERE lexeme = stem) AS yes)
    SELECT l.lexeme FROM lexicon l, known
    WHERE l.lexeme <> stem AND CASE
        -- A word the notes use: only its longer or shorter forms ("postgres" and
        -- "postgresql"), not every word that looks like it ("trial" and "atrial").
        WHEN known.yes THEN
            (starts_with(l.lexeme, stem) OR starts_with(stem, l.lexeme))
            AND least(length(l.lexeme), length(stem)) >= 5
            AND least(length(l.lexeme), length(stem))::float8
                / greatest(length(l.lexeme), length(stem)) >= 0.6
        -- A word they do not use: a variant or a typo of one they do — one edit in a
        -- word of up to six letters, two in a longer one (a swap is two), never in
        -- the first letter ("monday" is not a typo of "sunday").
        ELSE public.similarity(l.lexeme, word) >= threshold
             OR (left(l.lexeme, 1) = left(word, 1)
                 AND public.levenshtein(l.lexeme, word)
                     <= CASE WHEN length(word) <= 6 THEN 1 ELSE 2 END)
    END
    ORDER BY public.levenshtein(l.lexeme, word), public.similarity(l.lexeme, word) DESC,
             l.lexeme
    LIMIT max_rows
$$;
REVOKE EXECUTE ON FUNCTION grove_search_variants(text, text, float8, integer) FROM PUBLIC;

-- The first `max_rows` matching notes of the account, in no particular order: the
-- search selector asks for one more than it would rank, to learn whether a query is
-- rare enough to rank every match (the bitmap scan stops at the limit).
CREATE FUNCTION grove_search_matches(query tsquery, max_rows integer)
RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT n.id FROM public.notebooks_note n
    WHERE n.account_id = public.grove_current_account()
      AND n.status <> 'deleted'
      AND n.search @@ query
    LIMIT max_rows
$$;
REVOKE EXECUTE ON FUNCTION grove_search_matches(tsquery, integer) FROM PUBLIC;
DO $$ BEGIN
    EXECUTE format('CREATE POLICY variant_lookup ON notebooks_termstat FOR SELECT TO %I '
                   'USING (true)', current_user);
    EXECUTE format('CREATE POLICY variant_lookup ON notebooks_termdelta FOR SELECT TO %I '
                   'USING (true)', current_user);
END $$;
"""

DROP = """
DROP POLICY IF EXISTS variant_lookup ON notebooks_termdelta;
DROP POLICY IF EXISTS variant_lookup ON notebooks_termstat;
DROP FUNCTION IF EXISTS grove_search_matches(tsquery, integer);
DROP FUNCTION IF EXISTS grove_search_variants(text, text, float8, integer);
"""


class Migration(migrations.Migration):
    dependencies = [("notebooks", "0016_checked_agent_writes")]

    operations = [
        TrigramExtension(),
        # Levenshtein distance, for typos trigrams miss ("protien": 0.33 to "protein").
        CreateExtension("fuzzystrmatch"),
        migrations.AddIndex(
            model_name="termstat",
            index=django.contrib.postgres.indexes.GinIndex(
                django.contrib.postgres.indexes.OpClass(
                    django.db.models.F("lexeme"), name="gin_trgm_ops"),
                name="termstat_lexeme_trgm"),
        ),
        migrations.RunSQL(SEARCH_VARIANTS, DROP),
    ]
