"""Whether what an answer cited still reads the same (issue 36 item 3.3): a turn's
`sourcesChanged`, and the Ask page's "note changed since (v3 → v5)".

**What a citation cites is the note's text** at the cited revision — its content, whose
first line is its title. That is what the model was shown and what the answer quotes.
Pinning, tags, importance, a move to another notebook, a kind, archiving and restoring —
and their undos — make new versions of a note (every change is a revision, and
`expectedVersion` fences writes by that version) without touching its text, so they leave
a citation as it was. An edit of the text makes it stale (one edited back to the cited
words reads as cited again); a note deleted since, or now out of the reader's reach, is
stale with no version to show.

Compared in the database, in one statement: the cited revision's content against the
note's content now — nothing is hashed or copied, and no column was added for it.
"""

from __future__ import annotations

import uuid

from django.db.models import F

from ask.schemas import SourceChange, TurnOut
from grove.kernel.actor import Actor
from notebooks.models import Revision
from notebooks.selectors.access import notes_visible_to


def with_changes(actor: Actor, turns: list[TurnOut]) -> list[TurnOut]:
    """The turns with `sources_changed` read now: each source whose cited text the note
    no longer has (caller holds a tenant transaction)."""
    cited = {(s.note_id, s.version) for t in turns if t.result for s in t.result.sources}
    if not cited:
        return turns
    ids = {note_id for note_id, _ in cited}
    now = dict(notes_visible_to(actor).filter(id__in=ids).values_list("id", "version"))
    same = set(Revision.objects.filter(
        note_id__in=list(now), version__in={v for _, v in cited}, content=F("note__content"))
        .values_list("note_id", "version")) if now else set()
    changed: dict[tuple[uuid.UUID, int], SourceChange] = {
        (note_id, version): SourceChange(note_id=note_id, cited_version=version,
                                         version=now.get(note_id))
        for note_id, version in cited if (note_id, version) not in same}
    return [turn.model_copy(update={"sources_changed": [
        changed[key] for key in dict.fromkeys((s.note_id, s.version) for s in turn.result.sources)
        if key in changed]}) if turn.result else turn for turn in turns]
