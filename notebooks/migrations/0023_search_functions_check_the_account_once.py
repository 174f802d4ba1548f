from django.db import migrations

# The library's security-definer lookups (search 0010/0017, tags 0018) compared each row
# with `public.grove_current_account()` as a plain call: the planner cannot use it as an
# index condition there, so it is a filter, evaluated for every candidate row — and
# since 0009 every evaluation recomputes the context's MAC (grove_hmac: a read of
# grove_secret and two sha256). For search as you type at 100k notes that was most of
# the bounded id lookup: 14 ms for 1,001 matches, 2.5 ms with the account read once.
#
# Written `(SELECT public.grove_current_account())`, as the row-level security policies
# are (grove.kernel.rls.CURRENT_ACCOUNT), it is an InitPlan: one evaluation per
# statement. The functions are otherwise unchanged (CREATE OR REPLACE keeps their
# privileges).
ONCE = "(SELECT public.grove_current_account())"
PER_ROW = "public.grove_current_account()"

# Calling pg_trgm loads it, which defines `pg_trgm.similarity_threshold`: a role that is
# not a superuser may not name a parameter no loaded module defines in a function's SET.
FUNCTIONS = """
SELECT public.similarity('grove', 'grove');

CREATE OR REPLACE FUNCTION grove_search_matches(query tsquery)
RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT n.id FROM public.notebooks_note n
    WHERE n.account_id = {account}
      AND n.status <> 'deleted'
      AND n.search @@ query
$$;

CREATE OR REPLACE FUNCTION grove_search_matches(query tsquery, max_rows integer)
RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT n.id FROM public.notebooks_note n
    WHERE n.account_id = {account}
      AND n.status <> 'deleted'
      AND n.search @@ query
    LIMIT max_rows
$$;

CREATE OR REPLACE FUNCTION grove_search_variants(word text, stem text, threshold float8,
                                                 max_rows integer)
RETURNS SETOF text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET pg_trgm.similarity_threshold = 0.3
AS $$
    WITH lexicon AS (
        SELECT c.lexeme FROM (
            SELECT t.lexeme, t.ndoc::bigint AS ndoc FROM public.notebooks_termstat t
            WHERE t.account_id = {account}
              AND t.lexeme OPERATOR(public.%) word
            UNION ALL
            SELECT d.lexeme, d.ndoc FROM public.notebooks_termdelta d
            WHERE d.account_id = {account}
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

CREATE OR REPLACE FUNCTION grove_tagged(tag text)
RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT n.id FROM public.notebooks_note n
    WHERE n.account_id = {account}
      AND n.status <> 'deleted'
      AND n.tags @> ARRAY[tag]::varchar[]
$$;

CREATE OR REPLACE FUNCTION grove_tag_counts(max_rows integer)
RETURNS TABLE (tag text, notes bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.tag, count(*) FROM public.notebooks_note n
    CROSS JOIN LATERAL unnest(n.tags) AS t(tag)
    LEFT JOIN public.notebooks_notebook b ON b.id = n.notebook_id
    WHERE n.account_id = {account}
      AND n.tags <> '{{}}'
      AND n.status = 'active'
      AND (n.expires_at IS NULL OR n.expires_at > now())
      AND (b.id IS NULL OR (b.archived_at IS NULL AND b.deleted_at IS NULL))
    GROUP BY t.tag
    ORDER BY count(*) DESC, t.tag
    LIMIT max_rows
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("notebooks", "0022_note_counts_kept_by_writes")]

    operations = [migrations.RunSQL(FUNCTIONS.format(account=ONCE),
                                    FUNCTIONS.format(account=PER_ROW))]
