"""Recall's items within its budget: what an item costs, and how many of the ranked
notes fit. Shared by every way recall ranks (the search, the profile, a time window's
list), below all of them."""

from __future__ import annotations

from notebooks.models import Note
from notebooks.schemas.notes import NoteOut, RecallItem
from notebooks.selectors.truth import Truth
from notebooks.selectors.truth_marks import truth_marks
from passages.schemas import PassageRef


def item_chars(note: NoteOut, passage: PassageRef | None = None) -> int:
    """What an item costs against the budget: its content (a document's passage, when
    that is what it returns) and its metadata."""
    return len(note.content) + sum(len(str(v)) for v in (
        note.versioned_id, note.kind, note.task_id or "", note.source_agent or "",
        note.notebook_id or "", note.updated_at.isoformat())) + (
        0 if passage is None else len(passage.id) + sum(len(h) for h in passage.headings))


def within_budget(ranked: list[tuple[Note, float, list[str], float | None]], limit: int,
                  max_chars: int, *, truth: Truth, profile: str | None,
                  passages: dict | None = None, via: dict | None = None) -> list[RecallItem]:
    """Items in rank order until the item or character budget is spent (the first item
    is always returned, even if it alone is larger than the budget); declared notes
    marked as such, and any claim known to be false that an item matches named on it.
    `passages`: note id → the passage a document's item returns (its note's `content`
    is that passage's text); `via`: note id → the note a linked note was reached from."""
    passages, via = passages or {}, via or {}
    chosen: list[tuple[NoteOut, float, list[str], float | None]] = []
    spent = 0
    for note, score, matched, distance in ranked:
        if len(chosen) >= limit:
            break
        out = NoteOut.of(note)
        cost = item_chars(out, passages.get(note.id))
        if chosen and spent + cost > max_chars:
            break
        spent += cost
        chosen.append((out, score, matched, distance))
    marks = truth_marks([out for out, *_ in chosen], truth, profile=profile)
    return [RecallItem(note=out, score=round(score, 6), matched=matched,
                       distance=None if distance is None else round(distance, 6),
                       authority=marks[out.id].authority,
                       known_false=list(marks[out.id].known_false),
                       passage=passages.get(out.id), via=via.get(out.id))
            for out, score, matched, distance in chosen]
