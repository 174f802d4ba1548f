"""What a library search looks for: the words typed, as the full-text query that finds
them while they are still being typed (SPEC §4, §11).

A query is a few words. Each word matches as itself (stemmed, as the notes are), and:

* the word being typed — the last one, unless a space follows it — also matches as a
  prefix: `shaksh` finds "shakshuka", `postg` finds "PostgreSQL" and "Postgres";
* in a short query, a word of four letters or more also matches the account's own
  words that are spelled like it (trigram similarity, `pg_trgm`): `postgresql` finds
  "Postgres", `shakshuak` finds "shakshuka". The candidates come from the account's
  lexicon (term statistics), through the security-definer `grove_search_variants`
  (migration `notebooks 0017`): the trigram index is usable only outside row-level
  security, so the function reads the caller's own lexicon and nothing else.

Every word must match (AND); its forms are alternatives (OR). A query written with
search operators — a quoted phrase, `-word`, `or` — means exactly what it says: it is
read as web-search syntax, with no prefix or variants.

The exact query (the words as typed, stemmed) is kept beside the widened one, so
ranking puts notes that contain the words themselves before notes that only contain a
variant or a longer word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.contrib.postgres.search import SearchQuery, SearchQueryField, SearchRank
from django.db import connection
from django.db.models import BooleanField, Expression, F, Func, TextField, Value
from django.db.models.expressions import RawSQL

from notebooks.models import SEARCH_CONFIG

# Words are runs of letters and digits, as PostgreSQL's parser splits them.
_WORD = re.compile(r"[^\W_]+")
# Web-search operators: a quoted phrase, a negated word, an `or` between words.
_OPERATORS = re.compile(r'"|(?:^|\s)-\w|\s(?:or|OR|Or)\s')

# Variants are looked up for the words of short queries only: one for a longer query
# would widen it past what anyone meant (and cost a lookup per word).
VARIANT_WORDS_MAX = 4
VARIANT_WORD_MIN_CHARS = 4
VARIANTS_PER_WORD = 6
# Trigram similarity a variant needs: "postgres"/"postgresql" 0.67, "postgresql" and
# the stem "postgr" 0.5, a swapped letter in a 9-letter word ~0.55; "cell"/"call" 0.25.
VARIANT_SIMILARITY = 0.45


@dataclass(frozen=True)
class Terms:
    """A query as two tsquery texts (`::tsquery`, already normalised): `widened` selects
    the matches (prefix and variants included), `exact` ranks the words as typed first.
    `widened` is None when nothing in the query can match (stop words only)."""

    widened: str | None
    exact: str | None
    # Any single form of any word (OR of all): which of a note's terms matched.
    any_form: str | None


def _quoted(lexeme: str, *, prefix: bool = False) -> str:
    body = lexeme.replace("\\", "\\\\").replace("'", "''")
    return f"'{body}'{':*' if prefix else ''}"


def search_terms(query: str) -> Terms | None:
    """The tsqueries for `query`, or None when it uses search operators (the caller then
    reads it as web-search syntax). One round trip."""
    if _OPERATORS.search(query):
        return None
    words = _WORD.findall(query.lower())
    if not words:
        return Terms(widened=None, exact=None, any_form=None)
    typing = not query[-1].isspace()
    fuzzy = len(words) <= VARIANT_WORDS_MAX
    stems, variants = _forms(words, fuzzy=fuzzy)
    last = len(words) - 1
    groups: list[list[str]] = []
    exact: list[str] = []
    for i, word in enumerate(words):
        forms = [_quoted(stem) for stem in stems[i]]
        exact.extend(forms)
        being_typed = i == last and typing
        if not forms and not being_typed:
            continue  # a stop word ("the", "which") matches nothing and is left out
        if being_typed:
            forms = [_quoted(stem, prefix=True) for stem in stems[i]]
            forms.append(_quoted(word, prefix=True))
        forms.extend(_quoted(v) for v in variants[i] if v not in stems[i])
        groups.append(list(dict.fromkeys(forms)))
    if not groups:
        return Terms(widened=None, exact=None, any_form=None)
    widened = " & ".join("(" + " | ".join(forms) + ")" for forms in groups)
    any_form = " | ".join(dict.fromkeys(f for forms in groups for f in forms))
    return Terms(widened=widened, exact=" & ".join(exact) or None, any_form=any_form)


def _forms(words: list[str], *, fuzzy: bool) -> tuple[list[list[str]], list[list[str]]]:
    """Each word's lexemes under the notes' text-search configuration (none for a stop
    word; a word the parser splits may give more than one), and — when `fuzzy` — the
    caller's own lexemes spelled like it, best first. One statement."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.stems, CASE WHEN %s AND length(u.w) >= %s AND cardinality(s.stems) = 1"
            "  THEN ARRAY(SELECT grove_search_variants(u.w, s.stems[1], %s, %s))"
            "  ELSE '{}' END"
            " FROM unnest(%s::text[]) WITH ORDINALITY AS u(w, i),"
            " LATERAL (SELECT tsvector_to_array(to_tsvector(%s::regconfig, u.w))) AS s(stems)"
            " ORDER BY u.i",
            [fuzzy, VARIANT_WORD_MIN_CHARS, VARIANT_SIMILARITY, VARIANTS_PER_WORD, words,
             SEARCH_CONFIG])
        rows = cursor.fetchall()
    return [list(stems) for stems, _ in rows], [list(found) for _, found in rows]


# The tsquery of a query, in SQL: as written (search operators), or as built here.
_WRITTEN = "websearch_to_tsquery(%s::regconfig, %s)"
_BUILT = "%s::tsquery"


@dataclass(frozen=True)
class Matching:
    """How a note search matches and ranks: `query` (a tsquery expression) for the
    row-by-row match and headlines, `rank` and `terms` (the note's lexemes that
    matched) as annotations, and `ids()` for the index lookup."""

    query: Expression
    rank: Expression
    terms: Expression
    tsquery_sql: str
    params: list[str]

    def hit(self) -> Expression:
        """The query matched row by row (`search @@ query`, a condition)."""
        return _Hit(F("search"), self.query)

    def ids(self, limit: int | None = None) -> RawSQL:
        """The account's matching note ids (the first `limit`, in no order), as a
        subquery. The index lookup runs in a security-definer function — migration
        0010: `@@` under RLS cannot use the GIN index — so the caller's query, under
        RLS, must keep only those it may see."""
        if limit is None:
            return RawSQL(f"SELECT grove_search_matches({self.tsquery_sql})",  # noqa: S611 - constant SQL
                          self.params)
        return RawSQL(f"SELECT grove_search_matches({self.tsquery_sql}, %s)",  # noqa: S611 - constant SQL
                      [*self.params, limit])


class _Hit(Func):
    arg_joiner = " @@ "
    template = "(%(expressions)s)"
    output_field = BooleanField()


def _tsquery(text: str) -> RawSQL:
    return RawSQL("%s::tsquery", [text], output_field=SearchQueryField())


def matching(typed: str) -> Matching | None:
    """The matching of a query as typed; None when nothing can match (stop words)."""
    terms = search_terms(typed)
    if terms is None:  # search operators: web-search syntax, exactly as written
        written = typed.strip()
        query = SearchQuery(written, search_type="websearch", config=SEARCH_CONFIG)
        return Matching(
            query=query, tsquery_sql=_WRITTEN, params=[SEARCH_CONFIG, written],
            rank=SearchRank(F("search"), query, cover_density=True),
            terms=RawSQL(
                "ARRAY(SELECT unnest(tsvector_to_array(notebooks_note.search)) "
                "INTERSECT SELECT unnest(tsvector_to_array(to_tsvector(%s::regconfig, %s))))",
                [SEARCH_CONFIG, written]))
    if terms.widened is None:
        return None
    widened = _tsquery(terms.widened)
    rank: Expression = SearchRank(F("search"), widened, cover_density=True)
    if terms.exact and terms.exact != terms.widened:
        # The words themselves count twice: a note containing "postgres" ranks before
        # one that only contains "postgresql" for the query `postgres`.
        rank = rank + SearchRank(F("search"), _tsquery(terms.exact), cover_density=True)
    return Matching(
        query=widened, tsquery_sql=_BUILT, params=[terms.widened], rank=rank,
        terms=RawSQL(
            "ARRAY(SELECT l FROM unnest(tsvector_to_array(notebooks_note.search)) AS l "
            "WHERE array_to_tsvector(ARRAY[l]) @@ %s::tsquery ORDER BY l)", [terms.any_form]))


def plain_text(content: Expression | F) -> Expression:
    """Markdown as text for a search excerpt, in SQL (rendering every candidate would
    cost more than the search): link and image syntax keep their text; heading, list,
    quote, task and fence markers at the start of a line, table rules and horizontal
    rules go; emphasis, code and table marks and HTML tags become spaces."""
    text = Func(content, Value(r"!?\[([^\]]*)\]\([^)]*\)"), Value(r"\1"), Value("g"),
                function="regexp_replace", output_field=TextField())
    text = Func(text, Value(r"^[ \t]*(#{1,6}|[-*+>]|\d+[.)]|```\S*|~~~\S*)?[ \t]*(\[[ xX]\])?"),
                Value(""), Value("gn"), function="regexp_replace", output_field=TextField())
    text = Func(text, Value(r"^[ \t|:=*_-]+$"), Value(""), Value("gn"),
                function="regexp_replace", output_field=TextField())
    return Func(text, Value(r"[|*`~]+|<[^>]*>"), Value(" "), Value("g"),
                function="regexp_replace", output_field=TextField())
