from django.db import migrations

# Library search finds what a person types (issue 36 item 3.2): every prefix of a word,
# words with accents typed without them ("belem" finds "Belém"), dates and hyphenated
# identifiers ("2026-12-01", "pg-prod-3", "ci-1").
#
# The notes' `search` vector (0004) cannot: it holds English stems of the text as
# PostgreSQL's parser splits it — "staging" is only `stage`, so the prefix `stagin` finds
# nothing; "Belém" is `belém`; "2026-12-01" is `2026`, `-12`, `-01` (signed numbers) and
# "ci-1" `ci`, `-1`, while a query splits words at every punctuation mark. And the
# database's C locale lower-cases ASCII only. Recall ranks by that vector and its term
# statistics, so it stays as it is; library search gets a vector of its own:
#
# * `grove_words(text)`: the text as the words a query names — accents removed
#   (unaccent, which also maps typographic quotes and dashes to ASCII), every run of
#   characters that are not letters or digits one space, lower case. Immutable (the
#   unaccent dictionary is named, not looked up), so a generated column may use it. On
#   PostgreSQL 17+ letters, digits and case are Unicode's (the builtin `pg_c_utf8`
#   collation); before, the database's own locale decides.
# * `grove_lookup(text)`: the English stems of those words and the words themselves
#   (`grove_plain`: unstemmed, English stop words left out as the stems leave them out),
#   one vector — a typed prefix matches the word as written, a finished word its stem.
#   The stems without their positions (`strip`): ranking reads the words' positions, and
#   the vector stays near the size of `search` rather than twice it (what a row-by-row
#   match and the ranking read). Without the stop words a one-letter prefix ("a") does
#   not gather the posting lists of "a", "and", "as", "at" — nearly every note, each.
# * `notebooks_note.lookup`, a stored generated column of it with a GIN index. Not a
#   field of the model: the ORM would otherwise read it with every note it loads; the
#   search selector names it in SQL.
# * `grove_lookup_matches(...)`: the index lookup as `grove_search_matches` (0010, 0017,
#   0023) does it for `search` — a security-definer function, since `@@` under row-level
#   security cannot use the index; it returns the account's ids only, and the caller's
#   query under RLS keeps those it may see. The old functions stay: a query written with
#   search operators is still read against `search`, and a process of the previous
#   release calls them during a rolling upgrade.
# * `grove_headline`: English with accents removed, to mark the matched words of an
#   excerpt ("belem" marks "Belém").
WORDS = """
CREATE EXTENSION IF NOT EXISTS unaccent;

DO $do$ BEGIN
    IF current_setting('server_version_num')::int >= 170000 THEN
        CREATE FUNCTION grove_words(body text) RETURNS text
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        SET search_path = pg_catalog, pg_temp
        AS $$
            SELECT lower(regexp_replace(
                public.unaccent('public.unaccent'::regdictionary, body) COLLATE "pg_c_utf8",
                '[^[:alnum:]]+', ' ', 'g'))
        $$;
    ELSE
        CREATE FUNCTION grove_words(body text) RETURNS text
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        SET search_path = pg_catalog, pg_temp
        AS $$
            SELECT lower(regexp_replace(
                public.unaccent('public.unaccent'::regdictionary, body),
                '[[:punct:][:space:]]+', ' ', 'g'))
        $$;
    END IF;
END $do$;

CREATE TEXT SEARCH DICTIONARY grove_plain (TEMPLATE = pg_catalog.simple,
                                           STOPWORDS = english);
CREATE TEXT SEARCH CONFIGURATION grove_plain (COPY = pg_catalog.simple);
ALTER TEXT SEARCH CONFIGURATION grove_plain ALTER MAPPING REPLACE pg_catalog.simple
    WITH public.grove_plain;

CREATE FUNCTION grove_lookup(body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT strip(to_tsvector('english'::regconfig, w))
           || to_tsvector('public.grove_plain'::regconfig, w)
    FROM (SELECT public.grove_words(body) AS w) AS words
$$;

ALTER TABLE notebooks_note
    ADD COLUMN lookup tsvector GENERATED ALWAYS AS (public.grove_lookup(content)) STORED;
CREATE INDEX note_lookup ON notebooks_note USING gin (lookup);

CREATE FUNCTION grove_lookup_matches(query tsquery)
RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT n.id FROM public.notebooks_note n
    WHERE n.account_id = (SELECT public.grove_current_account())
      AND n.status <> 'deleted'
      AND n.lookup @@ query
$$;
REVOKE EXECUTE ON FUNCTION grove_lookup_matches(tsquery) FROM PUBLIC;

CREATE FUNCTION grove_lookup_matches(query tsquery, max_rows integer)
RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT n.id FROM public.notebooks_note n
    WHERE n.account_id = (SELECT public.grove_current_account())
      AND n.status <> 'deleted'
      AND n.lookup @@ query
    LIMIT max_rows
$$;
REVOKE EXECUTE ON FUNCTION grove_lookup_matches(tsquery, integer) FROM PUBLIC;

CREATE TEXT SEARCH CONFIGURATION grove_headline (COPY = pg_catalog.english);
ALTER TEXT SEARCH CONFIGURATION grove_headline
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH public.unaccent, pg_catalog.english_stem;
"""

DROP = """
DROP TEXT SEARCH CONFIGURATION IF EXISTS grove_headline;
DROP FUNCTION IF EXISTS grove_lookup_matches(tsquery, integer);
DROP FUNCTION IF EXISTS grove_lookup_matches(tsquery);
ALTER TABLE notebooks_note DROP COLUMN IF EXISTS lookup;
DROP FUNCTION IF EXISTS grove_lookup(text);
DROP TEXT SEARCH CONFIGURATION IF EXISTS grove_plain;
DROP TEXT SEARCH DICTIONARY IF EXISTS grove_plain;
DROP FUNCTION IF EXISTS grove_words(text);
"""


class Migration(migrations.Migration):
    dependencies = [("notebooks", "0030_ingest_upload_parts")]

    operations = [migrations.RunSQL(WORDS, DROP)]
