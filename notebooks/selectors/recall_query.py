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

from notebooks.models import Indexing, Note, NoteEmbedding
from notebooks.selectors import time_window as tw
from notebooks.selectors.access import live_notebooks

# The HNSW scan's settings, made with the tenant context (`tenant(local=…)`): a wider
# candidate list than the default 40, and iterative scan so grant filters still fill it.
SEMANTIC_SETTINGS = (("hnsw.ef_search", "100"), ("hnsw.iterative_scan", "relaxed_order"))

# What a returned item needs of its note (`NoteOut.of`), in the model's field order
# (`Model.from_db` takes them so); the content only for the head.
NOTE_FIELDS = tuple(f.attname for f in Note._meta.concrete_fields if f.attname in {
    "id", "account_id", "notebook_id", "kind", "task_id", "source_agent", "capture",
    "pinned", "tags", "importance", "retention_days", "expires_at", "version", "status",
    "indexing", "created_at", "updated_at", "content"})

CONTENT = NOTE_FIELDS.index("content")


# An arm's score scaled to [0, 1] over its list (min-max; a list whose scores are all
# equal scales to 1), so the fusion adds like with like.
_MIN_MAX = ("CASE WHEN max({value}) OVER () > min({value}) OVER () THEN "
            "({value} - min({value}) OVER ()) / (max({value}) OVER () - min({value}) OVER ()) "
            "ELSE 1.0 END")


@dataclass(frozen=True)
class Candidate:
    """A note either arm found: its rank in each (1-based), the cosine distance, the
    fused score, its kind, and the note itself when it is in the head."""

    id: uuid.UUID
    lexical_rank: int | None
    semantic_rank: int | None
    distance: float | None
    fused: float  # the fusion's score
    kind: str
    note: Note | None


@dataclass(frozen=True)
class Gathered:
    candidates: list[Candidate]  # in fused order
    lexical_total: int  # notes holding a clause (`recall_terms`): the matches read
    lexical_capped: bool  # a clause had more matches than the arm reads: a lower bound
    semantic_also_lexical: int  # semantic-only candidates that are lexical matches too
    pending: int  # notes in scope whose content has no vector yet


def tsquery_literal(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


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
    """The lexical arm as one SELECT (note_id, score, total, capped, in_window):
    `grove_lexical_matches` (migrations notebooks 0007/0008/0021/0024/0025/0027) over
    the live notebooks in scope, within the query's time window when it filters: the
    notes holding a clause (`weights.selecting()`; at most `cap` + 1 read per clause),
    the best `rescore` of them by their clauses' idf sum scored with BM25 (`k1`, `b`,
    `weights.avgdl`) over every kept term."""
    notebooks = live_notebooks(scope.scope.actor)
    if scope.scope.notebook_ids is not None:
        notebooks = notebooks.filter(id__in=scope.scope.notebook_ids)
    notebooks_sql, notebooks_params = _compiled(notebooks.values("id"),
                                                 "SELECT NULL::uuid WHERE false")
    selecting = weights.selecting()
    sql = ("SELECT note_id, score, total, capped, in_window "  # noqa: S608
           "FROM grove_lexical_matches(%s::tsquery[], %s::float8[], %s::text[], "
           f"%s::float8[], ARRAY({notebooks_sql}), %s, %s, %s, %s, %s, %s::daterange, "
           "%s::tstzrange, %s, %s, %s, %s)")
    return sql, [[clause_query(c) for c in selecting], [weights.weight(c) for c in selecting],
                 list(weights.terms), list(weights.terms.values()),
                 *notebooks_params, scope.scope.personal, max(rescore, candidates), candidates,
                 cap, scope.tag, *tw.lexical_arguments(scope.window), k1, b, weights.avgdl]


def semantic_arm(scope: Any, vector: list[float], dim: int, profile: str, *,
                 candidates: int) -> tuple[str, list[Any]]:
    """The semantic arm as one SELECT (note_id, distance, made_from, current, in_window): the
    nearest vectors of the active profile among the notes in scope, walked on the HNSW
    index (its expression: (embedding)::vector(dim)). The content-hash check (a vector of
    the note's *current* content) is made on the rows the scan returns, outside it: a
    cross-table equality inside makes the planner expect one row and sort every vector
    exactly instead of walking the index."""
    distance = CosineDistance(Cast("embedding", VectorField(dimensions=dim)), vector)
    # Which hits lie in the query's time window (a constant false without one).
    flag: dict[str, Any] = {**tw.flag(scope.window, "note__")} or {"in_window": Value(False)}
    return _compiled(
        NoteEmbedding.objects.filter(scope.q(prefix="note__"), profile=profile, dimension=dim)
        .annotate(distance=distance, **flag).order_by("distance")
        .values_list("note_id", "distance", "content_hash", "note__content_hash",
                     "in_window")[:candidates],
        "SELECT NULL::uuid, NULL::float8, NULL::text, NULL::text, false WHERE false")


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
        ctes.append("lexical AS MATERIALIZED (SELECT note_id, score, total, capped, "  # noqa: S608
                    "in_window, "
                    "row_number() OVER (ORDER BY score DESC, note_id) AS rank, "
                    f"{_MIN_MAX.format(value='score')} AS norm FROM ({lexical_sql}) arm)")
        params += lexical_params
    else:
        ctes.append("lexical AS (SELECT NULL::uuid AS note_id, NULL::float8 AS score, "
                    "NULL::bigint AS total, false AS capped, false AS in_window, "
                    "NULL::bigint AS rank, "
                    "NULL::float8 AS norm WHERE false)")
    if semantic is not None:
        vector, dim, profile, max_distance = semantic
        nearest_sql, nearest_params = semantic_arm(scope, vector, dim, profile,
                                                   candidates=candidates)
        ctes.append(f"nearest (note_id, distance, made_from, current, in_window) AS "
                    f"MATERIALIZED ({nearest_sql})")
        ctes.append("semantic AS (SELECT note_id, distance, in_window, "  # noqa: S608
                    "row_number() OVER (ORDER BY distance, note_id) AS rank, "
                    f"{_MIN_MAX.format(value='(1 - distance)')} AS norm FROM nearest "
                    "WHERE made_from = current AND distance <= %s)")
        params += [*nearest_params, max_distance]
    else:
        ctes.append("semantic AS (SELECT NULL::uuid AS note_id, NULL::float8 AS distance, "
                    "false AS in_window, NULL::bigint AS rank, NULL::float8 AS norm "
                    "WHERE false)")
    ctes.append(
        "fused AS (SELECT coalesce(l.note_id, s.note_id) AS id, l.rank AS lrank, "
        "s.rank AS srank, s.distance, "
        "%s * coalesce(l.norm, 0) + (1 - %s) * coalesce(s.norm, 0) AS fused, "
        "coalesce(l.in_window, false) OR coalesce(s.in_window, false) AS in_window "
        "FROM lexical l FULL JOIN semantic s ON s.note_id = l.note_id)")
    params += [alpha, alpha]
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
            "(SELECT count(*) FROM semantic s JOIN notebooks_note m ON m.id = s.note_id "
            "WHERE NOT EXISTS (SELECT 1 FROM lexical l WHERE l.note_id = s.note_id) "
            "AND m.search @@ %s::tsquery)")
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

    columns = ", ".join("CASE WHEN o.position <= %s THEN n.content END" if name == "content"
                        else f"n.{name}" for name in NOTE_FIELDS)
    # Constant fragments and ORM-compiled SQL; every value is a parameter.
    sql = (  # noqa: S608
        "WITH " + ", ".join(ctes) + " "  # noqa: S608
        f"SELECT totals.*, o.id, o.lrank, o.srank, o.distance, o.fused, "
        f"{columns} FROM (SELECT {', '.join(scalars)}) totals "
        "LEFT JOIN (ordered o JOIN notebooks_note n ON n.id = o.id) ON true "
        "ORDER BY o.position")
    params += [head, *scalar_params]  # in the order they appear in the text
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    lexical_total, capped, also_lexical, pending = rows[0][:4]
    found: list[Candidate] = []
    for row in rows:
        note_id, lrank, srank, dist, fused = row[4:9]
        if note_id is None:
            continue
        values = row[9:]
        note = (Note.from_db(connection.alias, list(NOTE_FIELDS), values)
                if values[CONTENT] is not None else None)
        found.append(Candidate(
            id=note_id, lexical_rank=lrank,
            semantic_rank=srank, distance=None if dist is None else float(dist),
            fused=float(fused),
            kind=values[NOTE_FIELDS.index("kind")], note=note))
    return Gathered(candidates=found, lexical_total=int(lexical_total),
                    lexical_capped=bool(capped), semantic_also_lexical=int(also_lexical),
                    pending=int(pending))
