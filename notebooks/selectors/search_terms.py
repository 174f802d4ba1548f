"""What a library search looks for: the words typed, as the full-text query that finds
them while they are still being typed (SPEC §4, §11).

A query is a few words — runs of letters and digits, so "2026-12-01" is `2026 12 01`
and "pg-prod-3" `pg prod 3`. They are matched against the note's `lookup` vector
(migration `notebooks 0030`): its text folded by `grove_words` — accents removed,
punctuation a space, lower case — as English stems and as the words themselves. Each
query word is folded by the same function, so a query and a note agree on what a word
is by construction. Each word matches as its stem ("deploys" finds "deployed") or as
itself, and:

* the word being typed — the last one, unless a space follows it — also matches as a
  prefix of the words as written: `stagin` finds "staging" (whose stem is `stage`),
  `belem` "Belém", `2026-12-0` "2026-12-01", `ci-` "ci-1";
* in a short query, a word of four letters or more also matches the account's own
  words that are spelled like it (trigram similarity, `pg_trgm`): `postgresql` finds
  "Postgres", `shakshuak` finds "shakshuka". The candidates come from the account's
  lexicon (term statistics), through the security-definer `grove_search_variants`
  (migration `notebooks 0017`): the trigram index is usable only outside row-level
  security, so the function reads the caller's own lexicon and nothing else.

Every word must match (AND); its forms are alternatives (OR). The words of one run of
text without a space ("2026-12-01", "pg-prod-3") must also stand in their order, side by
side (`<->`): a date or an id is not any arrangement of its pieces. A finished word that
is a stop word ("the") is left out. A query written with search operators — a quoted phrase,
`-word`, `or` — means exactly what it says: it is read as web-search syntax against the
notes' `search` vector, with no prefix, variants or folding.

The exact query (the words as typed, stop words left out) is kept beside the widened
one, so ranking puts notes that contain the words themselves before notes that only
contain a stem, a variant or a longer word (the vector keeps positions for the words
alone: ranking by cover density reads them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.contrib.postgres.search import (
    SearchQuery,
    SearchQueryField,
    SearchRank,
    SearchVectorField,
)
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


@dataclass(frozen=True)
class _Forms:
    """One query word as the `lookup` vector holds words: its English stems (none for a
    stop word), the word itself (`spelled`) and, in a short query, the account's own
    words spelled like it — all folded by `grove_words`."""

    stems: list[str]
    spelled: list[str]
    variants: list[str]


def search_terms(query: str) -> Terms | None:
    """The tsqueries for `query`, or None when it uses search operators (the caller then
    reads it as web-search syntax). One round trip."""
    if _OPERATORS.search(query):
        return None
    # Each word with where it stands: (the run of non-space text it is part of, its
    # place in that run) — "pg-prod-3" is one run of three words.
    placed = [(run, place, word) for run, text in enumerate(query.lower().split())
              for place, word in enumerate(_WORD.findall(text))]
    if not placed:
        return Terms(widened=None, exact=None, any_form=None)
    typing = not query[-1].isspace()
    each = _forms([word for _, _, word in placed],
                  fuzzy=len(placed) <= VARIANT_WORDS_MAX)
    last = len(placed) - 1
    groups: list[tuple[int, int, list[str]]] = []
    exact: list[tuple[int, int, list[str]]] = []
    for i, ((run, place, _), word) in enumerate(zip(placed, each, strict=True)):
        being_typed = i == last and typing
        if not word.stems and not being_typed:
            continue  # a stop word ("the", "which") matches nothing and is left out
        if word.spelled:
            exact.append((run, place, [_quoted(spelled) for spelled in word.spelled]))
        # The word being typed is a prefix of the word as written; its stem is matched
        # whole ("backups" finds "backup" before the space is typed) — a second prefix
        # scan of the index would find next to nothing more.
        forms = [_quoted(stem) for stem in word.stems]
        forms += [_quoted(spelled, prefix=being_typed) for spelled in word.spelled]
        forms.extend(_quoted(v) for v in word.variants if v not in word.stems)
        if forms:  # (a word that folds to nothing, such as "²", is left out too)
            groups.append((run, place, list(dict.fromkeys(forms))))
    if not groups:
        return Terms(widened=None, exact=None, any_form=None)
    any_form = " | ".join(dict.fromkeys(f for _, _, forms in groups for f in forms))
    return Terms(widened=_all_of(groups), exact=_all_of(exact) or None, any_form=any_form)


def _all_of(groups: list[tuple[int, int, list[str]]]) -> str:
    """Every word (any of its forms); the words of one run in their order, each at its
    distance from the one before (`<->`, or `<2>` past a stop word left out): a date or
    an id is its pieces in order, so "2026-12-01" does not find "2026-01-12" nor
    "pg-prod-3" "pg-3-prod". A word whose lexeme has no position (a stem: the vector
    keeps positions for the words as written) leaves the order unchecked, not unmet."""
    runs: list[str] = []
    previous: tuple[int, int] | None = None
    for run, place, forms in groups:
        either = "(" + " | ".join(forms) + ")"
        if previous is not None and previous[0] == run:
            gap = place - previous[1]
            runs[-1] += f" {'<->' if gap == 1 else f'<{gap}>'} {either}"
        else:
            runs.append(either)
        previous = (run, place)
    return " & ".join(f"({r})" if "<" in r else r for r in runs)


def _forms(words: list[str], *, fuzzy: bool) -> list[_Forms]:
    """Each word's forms (`_Forms`), in one statement. The word as written keeps a stop
    word (`simple`; the vector leaves them out, so a finished one matches nothing, while
    one being typed is still a prefix: "the" finds "theory"). The variants are looked up
    by the word's stem as `search` holds it (the lexicon is that vector's), then folded."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tsvector_to_array(to_tsvector('english'::regconfig, f.w)),"
            " tsvector_to_array(to_tsvector('simple'::regconfig, f.w)),"
            " CASE WHEN %s AND length(u.w) >= %s AND cardinality(r.stems) = 1"
            "  THEN ARRAY(SELECT grove_words(v) FROM grove_search_variants("
            "   u.w, r.stems[1], %s, %s) AS v)"
            "  ELSE '{}' END"
            " FROM unnest(%s::text[]) WITH ORDINALITY AS u(w, i),"
            " LATERAL (SELECT grove_words(u.w)) AS f(w),"
            " LATERAL (SELECT tsvector_to_array(to_tsvector(%s::regconfig, u.w))) AS r(stems)"
            " ORDER BY u.i",
            [fuzzy, VARIANT_WORD_MIN_CHARS, VARIANT_SIMILARITY, VARIANTS_PER_WORD, words,
             SEARCH_CONFIG])
        rows = cursor.fetchall()
    return [_Forms(stems=list(stems), spelled=list(spelled),
                   variants=[v for v in variants if v and " " not in v])
            for stems, spelled, variants in rows]


# The tsquery of a query, in SQL: as written (search operators), or as built here.
_WRITTEN = "websearch_to_tsquery(%s::regconfig, %s)"
_BUILT = "%s::tsquery"


@dataclass(frozen=True)
class Matching:
    """How a note search matches and ranks: `query` (a tsquery expression) for the
    row-by-row match and headlines, `rank` and `terms` (the note's lexemes that
    matched) as annotations, and `ids()` for the index lookup. `vector` is the column
    matched (`lookup` for words as typed, `search` for web-search syntax), `lookup_function`
    its security-definer index lookup and `headline_config` the configuration that marks
    the matched words of an excerpt."""

    query: Expression
    rank: Expression
    terms: Expression
    tsquery_sql: str
    params: list[str]
    vector: Expression | F
    lookup_function: str
    headline_config: str

    def hit(self) -> Expression:
        """The query matched row by row (`vector @@ query`, a condition)."""
        return _Hit(self.vector, self.query)

    def ids(self, limit: int | None = None) -> RawSQL:
        """The account's matching note ids (the first `limit`, in no order), as a
        subquery. The index lookup runs in a security-definer function — migrations
        0010, 0030: `@@` under RLS cannot use the GIN index — so the caller's query,
        under RLS, must keep only those it may see."""
        if limit is None:
            return RawSQL(f"SELECT {self.lookup_function}({self.tsquery_sql})",  # noqa: S611 - constant SQL
                          self.params)
        return RawSQL(f"SELECT {self.lookup_function}({self.tsquery_sql}, %s)",  # noqa: S611 - constant SQL
                      [*self.params, limit])


# The notes' library-search vector (migration 0030): a column the model does not
# declare, so that loading a note never reads it. Named with its table, as the search
# selector's queries select from `notebooks_note` itself.
LOOKUP = "notebooks_note.lookup"
HEADLINE_CONFIG = "grove_headline"


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
                [SEARCH_CONFIG, written]),
            vector=F("search"), lookup_function="grove_search_matches",
            headline_config=SEARCH_CONFIG)
    if terms.widened is None:
        return None
    lookup = RawSQL(LOOKUP, (), output_field=SearchVectorField())  # noqa: S611 - constant SQL
    widened = _tsquery(terms.widened)
    rank: Expression = SearchRank(lookup, widened, cover_density=True)
    if terms.exact and terms.exact != terms.widened:
        # The words themselves count twice: a note containing "postgres" ranks before
        # one that only contains "postgresql" for the query `postgres`.
        rank = rank + SearchRank(lookup, _tsquery(terms.exact), cover_density=True)
    return Matching(
        query=widened, tsquery_sql=_BUILT, params=[terms.widened], rank=rank,
        terms=RawSQL(
            "ARRAY(SELECT l FROM unnest(tsvector_to_array(notebooks_note.lookup)) AS l "
            "WHERE array_to_tsvector(ARRAY[l]) @@ %s::tsquery ORDER BY l)", [terms.any_form]),
        vector=lookup, lookup_function="grove_lookup_matches", headline_config=HEADLINE_CONFIG)


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
