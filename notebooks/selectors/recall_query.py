"""Recall's query path in one statement (SPEC §4, §12).

Both arms, their fusion, the rows of the notes that can be returned, how many notes
matched and how many wait for a vector: one round trip, in `gather`. The arms' rules
stay where they are written once — the lexical function (`grove_lexical_matches`), the
scope (`Searched.q`, `live_notebooks`) compiled by the ORM into this statement's text —
so folding them changes how often recall talks to the server, not what it finds.

Fusion is by score: each arm's scores min-max scaled to [0, 1] over its list (BM25;
1 − cosine distance), then `alpha` · lexical + (1 − `alpha`) · semantic, computed here,
so the head of the ranking is known before any note row is read and only those rows
carry their content.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Value
from django.db.models.functions import Cast
from pgvector.django import CosineDistance, VectorField

from notebooks.models import Indexing, Note
from notebooks.selectors import time_window as tw
from notebooks.selectors.access import live_notebooks
from notebooks.selectors.recall_terms import tsquery_literal
from passages.models import PassageVector
from passages.schemas import PassageRef, passage_id

# The HNSW scan's settings, made with the tenant context (`tenant(local=…)`): a wider
# candidate list than the default 40, and iterative scan so grant filters still fill it.
SEMANTIC_SETTINGS = (("hnsw.ef_search", "100"), ("hnsw.iterative_scan", "relaxed_order"))

# What a returned item needs of its note (`NoteOut.of`), in the model's field order
# (`Model.from_db` takes them so); the content only for the head.
NOTE_FIELDS = tuple(f.attname for f in Note._meta.concrete_fields if f.attname in {
    "id", "account_id", "notebook_id", "kind", "task_id", "source_agent", "capture",
    "pinned", "tags", "importance", "retention_days", "expires_at", "version", "status",
    "indexing", "created_at", "updated_at", "content", "source_path"})

CONTENT = NOTE_FIELDS.index("content")


# An arm's score scaled to [0, 1] over its list (min-max; a list whose scores are all
# equal scales to 1), so the fusion adds like with like.
_MIN_MAX = ("CASE WHEN max({value}) OVER () > min({value}) OVER () THEN "
            "({value} - min({value}) OVER ()) / (max({value}) OVER () - min({value}) OVER ()) "
            "ELSE 1.0 END")


# The semantic arm reads this many nearest passages per note it keeps (a document's
# passages crowd the nearest list; the best per note is kept).
PASSAGE_FANOUT = 2


@dataclass(frozen=True)
class Candidate:
    """A note either arm found: its rank in each (1-based), the cosine distance, the
    fused score, its kind, and — when it is in the head — the note itself, whose
    `content` is its best passage when it has more than one (`passage` says which)."""

    id: uuid.UUID
    lexical_rank: int | None
    semantic_rank: int | None
    distance: float | None
    fused: float  # the fusion's score
    kind: str
    note: Note | None
    passage: PassageRef | None = None


@dataclass(frozen=True)
class Gathered:
    candidates: list[Candidate]  # in fused order
    lexical_total: int  # notes holding a clause (`recall_terms`): the matches read
    lexical_capped: bool  # a clause had more matches than the arm reads: a lower bound
    semantic_also_lexical: int  # semantic-only candidates that are lexical matches too
    pending: int  # notes in scope whose content has no vector yet


def clause_query(clause: tuple[str, ...]) -> str:
    """A clause (lexemes a note must all hold) as tsquery text."""
    return " & ".join(tsquery_literal(lexeme) for lexeme in clause)


def _compiled(queryset: Any, empty: str) -> tuple[str, list[Any]]:
    """A queryset's SQL and parameters; `empty` (the same columns, no rows) when the ORM
    knows it matches nothing (`id__in=[]`, a grant of no notebooks)."""
    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:
        return empty, []
    return sql, list(params)


def lexical_arm(scope: Any, weights: Any, *, candidates: int, rescore: int, cap: int,
                k1: float, b: float) -> tuple[str, list[Any]]:
    """The lexical arm as one SELECT (note_id, passage_id, score, total, capped,
    in_window): `grove_passage_matches` (migration passages 0002; before it
    `grove_lexical_matches`, notebooks 0007–0027) over the live notebooks in scope,
    within the query's time window when it filters: the passages holding a clause
    (`weights.selecting()`; at most `cap` + 1 read per clause), the best `rescore` of
    them by their clauses' idf sum scored with BM25 (`k1`, `b`, `weights.avgdl`: the
    average passage length) over every kept term — each note once, by its best
    passage; `total` counts notes."""
    notebooks = live_notebooks(scope.scope.actor)
    if scope.scope.notebook_ids is not None:
        notebooks = notebooks.filter(id__in=scope.scope.notebook_ids)
    notebooks_sql, notebooks_params = _compiled(notebooks.values("id"),
                                                 "SELECT NULL::uuid WHERE false")
    selecting = weights.selecting()
    sql = ("SELECT note_id, passage_id, score, total, capped, in_window "  # noqa: S608
           "FROM grove_passage_matches(%s::tsquery[], %s::float8[], %s::text[], "
           f"%s::float8[], ARRAY({notebooks_sql}), %s, %s, %s, %s, %s, %s::daterange, "
           "%s::tstzrange, %s, %s, %s, %s)")
    return sql, [[clause_query(c) for c in selecting], [weights.weight(c) for c in selecting],
                 list(weights.terms), list(weights.terms.values()),
                 *notebooks_params, scope.scope.personal, max(rescore, candidates), candidates,
                 cap, scope.tag, *tw.lexical_arguments(scope.window), k1, b, weights.avgdl]


def semantic_arm(scope: Any, vector: list[float], dim: int, profile: str, *,
                 candidates: int) -> tuple[str, list[Any]]:
    """The semantic arm as one SELECT (note_id, passage_id, distance, in_window): the
    nearest passage vectors of the active profile among the notes in scope, walked on
    the HNSW index (its expression: (embedding)::vector(dim)) — `candidates` ×
    PASSAGE_FANOUT of them, so the best `candidates` notes survive a long document's
    many passages. A passage's vector is always of the note's current text: an edit
    replaces the passages it changed, and their vectors go with them."""
    distance = CosineDistance(Cast("embedding", VectorField(dimensions=dim)), vector)
    # Which hits lie in the query's time window (a constant false without one).
    flag: dict[str, Any] = {**tw.flag(scope.window, "note__")} or {"in_window": Value(False)}
    return _compiled(
        PassageVector.objects.filter(scope.q(prefix="note__"), profile=profile, dimension=dim)
        .annotate(distance=distance, **flag).order_by("distance")
        .values_list("note_id", "passage_id", "distance", "in_window")
        [:candidates * PASSAGE_FANOUT],
        "SELECT NULL::uuid, NULL::bigint, NULL::float8, false WHERE false")


def gather(*, scope: Any, weights: Any, candidates: int, rescore: int, cap: int, k1: float,
           b: float, alpha: float, head: int, semantic: tuple[list[float], int, str, float] | None,
           count_pending: bool) -> Gathered:
    """Run recall's query path as one statement. `weights`: the query's terms
    (`recall.Weights`); `semantic`: (query vector, dimension, profile, max distance),
    None for lexical recall; `alpha`: the lexical arm's weight in the fusion. Caller
    holds the tenant transaction, made with `SEMANTIC_SETTINGS`."""
    params: list[Any] = []
    ctes: list[str] = []
    selecting = weights.selecting()
    if selecting:
        lexical_sql, lexical_params = lexical_arm(scope, weights, candidates=candidates,
                                                  rescore=rescore, cap=cap, k1=k1, b=b)
        ctes.append("lexical AS MATERIALIZED (SELECT note_id, passage_id, score, total, "  # noqa: S608
                    "capped, in_window, "
                    "row_number() OVER (ORDER BY score DESC, note_id) AS rank, "
                    f"{_MIN_MAX.format(value='score')} AS norm FROM ({lexical_sql}) arm)")
        params += lexical_params
    else:
        ctes.append("lexical AS (SELECT NULL::uuid AS note_id, NULL::bigint AS passage_id, "
                    "NULL::float8 AS score, "
                    "NULL::bigint AS total, false AS capped, false AS in_window, "
                    "NULL::bigint AS rank, "
                    "NULL::float8 AS norm WHERE false)")
    if semantic is not None:
        vector, dim, profile, max_distance = semantic
        nearest_sql, nearest_params = semantic_arm(scope, vector, dim, profile,
                                                   candidates=candidates)
        ctes.append(f"nearest (note_id, passage_id, distance, in_window) AS "
                    f"MATERIALIZED ({nearest_sql})")
        # Each note's nearest passage, the best `candidates` notes.
        ctes.append("semantic AS (SELECT note_id, passage_id, distance, in_window, "  # noqa: S608
                    "row_number() OVER (ORDER BY distance, note_id) AS rank, "
                    f"{_MIN_MAX.format(value='(1 - distance)')} AS norm FROM ("
                    "SELECT * FROM (SELECT DISTINCT ON (note_id) * FROM nearest "
                    "WHERE distance <= %s ORDER BY note_id, distance) best "
                    "ORDER BY distance, note_id LIMIT %s) top)")
        params += [*nearest_params, max_distance, candidates]
    else:
        ctes.append("semantic AS (SELECT NULL::uuid AS note_id, NULL::bigint AS passage_id, "
                    "NULL::float8 AS distance, "
                    "false AS in_window, NULL::bigint AS rank, NULL::float8 AS norm "
                    "WHERE false)")
    ctes.append(
        "fused AS (SELECT coalesce(l.note_id, s.note_id) AS id, l.rank AS lrank, "
        "s.rank AS srank, s.distance, "
        # The excerpt: the passage of the arm that gave the note more of its score.
        "CASE WHEN %s * coalesce(l.norm, 0) >= (1 - %s) * coalesce(s.norm, 0) "
        "THEN coalesce(l.passage_id, s.passage_id) "
        "ELSE coalesce(s.passage_id, l.passage_id) END AS passage_id, "
        "%s * coalesce(l.norm, 0) + (1 - %s) * coalesce(s.norm, 0) AS fused, "
        "coalesce(l.in_window, false) OR coalesce(s.in_window, false) AS in_window "
        "FROM lexical l FULL JOIN semantic s ON s.note_id = l.note_id)")
    params += [alpha, alpha, alpha, alpha]
    # A window that boosts puts its notes first (without one, none is in it).
    ctes.append("ordered AS (SELECT f.*, row_number() OVER (ORDER BY NOT in_window, "
                "fused DESC, id) AS position FROM fused f)")

    # The few scalars: the lexical total, the semantic-only hits that are lexical matches
    # too (they are in the total already), and the notes waiting for a vector.
    or_query = " | ".join(f"({clause_query(c)})" for c in selecting) or None
    scalars = ["(SELECT coalesce(max(total), 0) FROM lexical)",
               "(SELECT coalesce(bool_or(capped), false) FROM lexical)"]
    scalar_params: list[Any] = []
    if or_query is not None:
        scalars.append(
            "(SELECT count(*) FROM semantic s "
            "WHERE NOT EXISTS (SELECT 1 FROM lexical l WHERE l.note_id = s.note_id) "
            "AND EXISTS (SELECT 1 FROM passages_passage m WHERE m.note_id = s.note_id "
            "AND m.search @@ %s::tsquery))")
        scalar_params.append(or_query)
    else:
        scalars.append("0")
    if count_pending:
        pending_sql, pending_params = _compiled(
            scope.notes().exclude(indexing=Indexing.READY).values("id"),
            "SELECT NULL::uuid WHERE false")
        scalars.append(f"(SELECT count(*) FROM ({pending_sql}) waiting)")  # noqa: S608
        scalar_params += pending_params
    else:
        scalars.append("0")

    # The head's rows carry their text: the whole note when it is one passage, else its
    # best passage (`fused`).
    columns = ", ".join("CASE WHEN o.position <= %s THEN CASE WHEN k.count > 1 THEN x.text "
                        "ELSE n.content END END" if name == "content"
                        else f"n.{name}" for name in NOTE_FIELDS)
    # Constant fragments and ORM-compiled SQL; every value is a parameter.
    sql = (  # noqa: S608
        "WITH " + ", ".join(ctes) + " "  # noqa: S608
        f"SELECT totals.*, o.id, o.lrank, o.srank, o.distance, o.fused, "
        f"x.position, k.count, x.headings, {columns} "
        f"FROM (SELECT {', '.join(scalars)}) totals "
        "LEFT JOIN (ordered o JOIN notebooks_note n ON n.id = o.id "
        "LEFT JOIN LATERAL (SELECT count(*) AS count FROM passages_passage c "
        "WHERE o.position <= %s AND c.note_id = o.id) k ON true "
        "LEFT JOIN LATERAL (SELECT p.position, p.text, p.headings FROM passages_passage p "
        "WHERE o.position <= %s AND p.note_id = o.id "
        "ORDER BY p.id = o.passage_id DESC, p.position LIMIT 1) x ON true) ON true "
        "ORDER BY o.position")
    # In the order they appear in the text.
    params += [head, *scalar_params, head, head]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    lexical_total, capped, also_lexical, pending = rows[0][:4]
    found: list[Candidate] = []
    for row in rows:
        note_id, lrank, srank, dist, fused, position, count, headings = row[4:12]
        if note_id is None:
            continue
        values = row[12:]
        note = (Note.from_db(connection.alias, list(NOTE_FIELDS), values)
                if values[CONTENT] is not None else None)
        passage = (PassageRef(id=passage_id(note_id, note.version, position), position=position,
                              of=count, headings=list(headings))
                   if note is not None and count and count > 1 else None)
        found.append(Candidate(
            id=note_id, lexical_rank=lrank,
            semantic_rank=srank, distance=None if dist is None else float(dist),
            fused=float(fused),
            kind=values[NOTE_FIELDS.index("kind")], note=note, passage=passage))
    return Gathered(candidates=found, lexical_total=int(lexical_total),
                    lexical_capped=bool(capped), semantic_also_lexical=int(also_lexical),
                    pending=int(pending))
