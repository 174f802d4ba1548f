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

Compared in the database, in one statement: the cited revisions of the notes the reader
still reaches, each with its content against the note's now — nothing is hashed or
copied, and no column was added for it.
"""

from __future__ import annotations

import uuid

from django.db.models import BooleanField, ExpressionWrapper, F, Q

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
    reachable = notes_visible_to(actor).filter(id__in={n for n, _ in cited}).values("id")
    found = {(note_id, version): (now, same) for note_id, version, now, same in
             Revision.objects.filter(note_id__in=reachable, version__in={v for _, v in cited})
             .annotate(now=F("note__version"), same=ExpressionWrapper(
                 Q(content=F("note__content")), output_field=BooleanField()))
             .values_list("note_id", "version", "now", "same")}
    changed: dict[tuple[uuid.UUID, int], SourceChange] = {
        key: SourceChange(note_id=key[0], cited_version=key[1],
                          version=found[key][0] if key in found else None)
        for key in cited if not found.get(key, (None, False))[1]}
    return [turn.model_copy(update={"sources_changed": [
        changed[key] for key in dict.fromkeys((s.note_id, s.version) for s in turn.result.sources)
        if key in changed]}) if turn.result else turn for turn in turns]
