"""The passages of a few known notes that matter for a query (issue 37 item 4).

Recall's arms rank passages across a whole scope and keep each note's best one. Some
readers already know which notes they want and need the best parts of each: recall's
declared ground truth (a declared 80,000-character spec answers with its relevant
passage, not its first 6,000 characters), Ask's strict selection of a long note (its
passages that match the question, with coverage saying how many of how many), and the
brief's representation of a long document. `best_passages` scores each passage of those
notes as recall's arms do — the query's distinctive terms it contains (their weights
summed), its vector's distance within `max_distance` — and fuses the two rankings with
reciprocal ranks, per note. Caller holds a tenant transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from django.db import connection
from django.db.models.functions import Cast
from pgvector.django import CosineDistance, VectorField

from notebooks.selectors.recall_terms import RRF_K, Weights, tsquery_literal
from passages.models import Passage, PassageVector
from passages.schemas import PassageRef, passage_id


@dataclass(frozen=True)
class RankedPassage:
    note_id: uuid.UUID
    position: int  # 1-based
    of: int  # the note's passages
    headings: list[str]
    text: str
    score: float  # fused; 0.0 for a passage that matched neither arm

    def ref(self, version: int) -> PassageRef:
        return PassageRef(id=passage_id(self.note_id, version, self.position),
                          position=self.position, of=self.of, headings=self.headings)


@dataclass(frozen=True)
class QueryArms:
    """What a query brings to the ranking: its term weights, and its vector with the
    profile and dimension it was made for (None: no semantic arm)."""

    weights: Weights | None
    vector: list[float] | None = None
    profile: str | None = None
    dimension: int | None = None
    max_distance: float = 2.0


@dataclass(frozen=True)
class PassageHits:
    """What a query found among a few notes' passages: the passages holding its terms
    (with the terms each holds, heaviest first) and the passages within `max_distance`
    of its vector (nearest first). One lookup, read by `best_passages` and by recall's
    scoring of declared notes."""

    lexical: list[tuple[int, uuid.UUID, frozenset[str]]]  # passage pk, note, terms held
    semantic: list[tuple[int, uuid.UUID, float]]  # passage pk, note, distance


def passage_hits(note_ids: Sequence[uuid.UUID], arms: QueryArms) -> PassageHits:
    """The query's hits among the passages of `note_ids` (caller holds a tenant
    transaction)."""
    ids = list(dict.fromkeys(note_ids))
    return PassageHits(lexical=_lexical(ids, arms) if ids else [],
                       semantic=_semantic(ids, arms) if ids else [])


def best_passages(note_ids: Sequence[uuid.UUID], arms: QueryArms, *, per_note: int,
                  hits: PassageHits | None = None) -> dict[uuid.UUID, list[RankedPassage]]:
    """Each note's best `per_note` passages for the query, best first (ties: in text
    order); a note none of whose passages matches either arm gets its first passages,
    scored 0. Notes without passages are left out. `hits`: the query's `passage_hits`
    when the caller already has them (for these notes or more)."""
    ids = list(dict.fromkeys(note_ids))
    if not ids:
        return {}
    found = hits if hits is not None else passage_hits(ids, arms)
    rows = list(Passage.objects.filter(note_id__in=ids).order_by("note_id", "position")
                .values_list("id", "note_id", "position", "headings", "text"))
    counts: dict[uuid.UUID, int] = {}
    for _, note_id, *_rest in rows:
        counts[note_id] = counts.get(note_id, 0) + 1
    scores: dict[int, float] = {}
    for ranked in ([(pk, n) for pk, n, _ in found.lexical],
                   [(pk, n) for pk, n, _ in found.semantic]):
        per_note_rank: dict[uuid.UUID, int] = {}
        for passage, note_id in ranked:
            rank = per_note_rank.get(note_id, 0)
            per_note_rank[note_id] = rank + 1
            scores[passage] = scores.get(passage, 0.0) + 1.0 / (RRF_K + rank + 1)
    out: dict[uuid.UUID, list[RankedPassage]] = {}
    for pk, note_id, position, headings, text in rows:
        out.setdefault(note_id, []).append(RankedPassage(
            note_id=note_id, position=position, of=counts[note_id], headings=list(headings),
            text=text, score=round(scores.get(pk, 0.0), 6)))
    return {note_id: _best(passages, per_note) for note_id, passages in out.items()}


def _best(found: list[RankedPassage], per_note: int) -> list[RankedPassage]:
    """The matching passages, best first — or, when none matches, the first ones."""
    matching = [p for p in found if p.score > 0]
    return sorted(matching, key=lambda p: (-p.score, p.position))[:per_note] if matching \
        else found[:per_note]


def _lexical(ids: list[uuid.UUID], arms: QueryArms
             ) -> list[tuple[int, uuid.UUID, frozenset[str]]]:
    """The passages holding the query's selecting terms, by the weight of what they hold."""
    weights = arms.weights
    if weights is None or not weights.selecting():
        return []
    literal = {tsquery_literal(term): term for term in weights.terms}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.id, p.note_id, array_agg(DISTINCT q.t) FROM passages_passage p "
            "JOIN unnest(%s::text[]) AS q(t) ON p.search @@ q.t::tsquery "
            "WHERE p.note_id = ANY(%s) GROUP BY p.id, p.note_id", [list(literal), ids])
        found = [(pk, note_id, frozenset(literal[t] for t in contains))
                 for pk, note_id, contains in cursor.fetchall()]
    return sorted(found, key=lambda h: (-sum(weights.terms[t] for t in h[2]), h[0]))


def _semantic(ids: list[uuid.UUID], arms: QueryArms) -> list[tuple[int, uuid.UUID, float]]:
    """The passages whose vector lies within `max_distance` of the query's, nearest first."""
    if arms.vector is None or arms.profile is None or arms.dimension is None:
        return []
    measure = CosineDistance(Cast("embedding", VectorField(dimensions=arms.dimension)),
                             arms.vector)
    return [(pk, note_id, float(distance)) for pk, note_id, distance in
            PassageVector.objects.filter(note_id__in=ids, profile=arms.profile,
                                         dimension=arms.dimension)
            .annotate(distance=measure).order_by("distance", "passage_id")
            .values_list("passage_id", "note_id", "distance")
            if distance <= arms.max_distance]


# A note longer than this is a document the brief and the truth tool give as a digest
# (the memory contract's limit: a memory record is always given whole).
DIGEST_OVER_CHARS = 6000
DIGEST_MAX_CHARS = 4000  # the passages a digest carries, at most
DIGEST_PASSAGES_MAX = 4


@dataclass(frozen=True)
class Digest:
    """How an agent reads a long document where a whole note would not fit: what it is
    (its size and passages), the passages that matter (for the focus, else its opening)
    with their citations, and how to read the rest."""

    text: str
    passages: int


def document_digest(note_id: uuid.UUID, version: int, length: int,
                    ranked: list[RankedPassage], *, matched_words: str) -> Digest:
    """The digest of a document from its best passages (`best_passages`), in text order
    within DIGEST_MAX_CHARS. `matched_words`: what the passages were picked for."""
    kept: list[RankedPassage] = []
    spent = 0
    for passage in ranked:
        if kept and spent + len(passage.text) > DIGEST_MAX_CHARS:
            break
        kept.append(passage)
        spent += len(passage.text)
    of = kept[0].of if kept else 0
    picked = matched_words if kept and kept[0].score > 0 else "its opening"
    parts = [f"[A document of {length:,} characters in {of} passages; below, "
             f"{len(kept)} of them — {picked}. Read any passage as "
             f"note:{note_id}@{version}#<n>.]"]
    for passage in sorted(kept, key=lambda p: p.position):
        trail = " › ".join(passage.headings)
        parts.append(f"[{passage.ref(version).id}{' — ' + trail if trail else ''}]\n"
                     f"{passage.text}")
    return Digest(text="\n\n".join(parts), passages=of)


class Document(Protocol):
    id: uuid.UUID
    version: int
    content: str


def digests_of(notes: Sequence[Document], arms: QueryArms, *,
               matched_words: str) -> dict[uuid.UUID, Digest]:
    """The digests of the notes longer than DIGEST_OVER_CHARS. Caller holds a tenant
    transaction."""
    long = {n.id: n for n in notes if len(n.content) > DIGEST_OVER_CHARS}
    if not long:
        return {}
    ranked = best_passages(list(long), arms, per_note=DIGEST_PASSAGES_MAX)
    return {note_id: document_digest(note_id, note.version, len(note.content), found,
                                     matched_words=matched_words)
            for note_id, note in long.items() if (found := ranked.get(note_id))}
