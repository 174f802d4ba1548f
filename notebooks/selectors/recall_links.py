"""Recall's `expand: "links"` (issue 38 item 4): the notes linked to and from the notes
recall would return join the candidates, each with its best passage for the query and
marked as reached through a link (`matched: ["link"]`, `via` the note it is linked
with). Links are the cheapest evidence for a question whose answer sits one link away
from what matched ("who leads the team that owns billing?"). Only notes in recall's
scope are reached; a linked note already among the candidates keeps its own rank."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import QuerySet

from links.models import Link
from notebooks.models import Note
from notebooks.selectors.passage_rank import PassageHits, QueryArms, best_passages
from passages.schemas import PassageRef

# A linked note scores this share of the note it was reached from: it ranks below that
# note, among the other candidates by score.
LINK_DECAY = 0.5
PER_SEED = 5  # linked notes one matching note brings at most
EXPAND = ("links",)


@dataclass(frozen=True)
class Reached:
    note: Note
    via: uuid.UUID
    score: float
    passage: PassageRef | None  # a document's best passage (its note's content is it)


def linked(scope_notes: QuerySet[Note], seeds: Sequence[uuid.UUID], scores: dict[uuid.UUID, float],
           known: set[uuid.UUID], arms: QueryArms,
           hits: PassageHits | None = None) -> list[Reached]:
    """The in-scope notes linked to or from `seeds` (best first), not in `known`, each
    scored from its best seed and read with its best passage for the query."""
    edges = list(Link.objects.filter(note_id__in=seeds, target_note__isnull=False)
                 .values_list("note_id", "target_note_id").order_by("note_id", "position"))
    edges += list(Link.objects.filter(target_note_id__in=seeds)
                  .values_list("target_note_id", "note_id").order_by("note_id"))
    order = {seed: rank for rank, seed in enumerate(seeds)}
    best: dict[uuid.UUID, uuid.UUID] = {}
    per_seed: dict[uuid.UUID, int] = {}
    for seed, other in sorted(edges, key=lambda e: order[e[0]]):
        if other in known or other in best or per_seed.get(seed, 0) >= PER_SEED:
            continue
        best[other] = seed
        per_seed[seed] = per_seed.get(seed, 0) + 1
    if not best:
        return []
    notes = {n.id: n for n in scope_notes.filter(id__in=list(best))}
    ranked = best_passages(list(notes), arms, per_note=1, hits=hits)
    out = []
    for note_id, note in notes.items():
        passage = None
        top = ranked.get(note_id)
        if top and top[0].of > 1:
            passage = top[0].ref(note.version)
            note.content = top[0].text
        out.append(Reached(note, best[note_id], scores[best[note_id]] * LINK_DECAY, passage))
    return sorted(out, key=lambda r: (-r.score, str(r.note.id)))


def interleave(order: list[uuid.UUID], reached: Sequence[Reached],
               scores: dict[uuid.UUID, float], fixed: set[uuid.UUID]) -> list[uuid.UUID]:
    """`order` with each reached note placed before the first note (not in `fixed`,
    which keep their places at the head) that scores less than it."""
    out = list(order)
    for item in reached:
        at = next((i for i, other in enumerate(out)
                   if other not in fixed and scores[other] < item.score), len(out))
        out.insert(at, item.note.id)
    return out
