"""The notebook page's Ground truth card (SPEC §10, §11): what the notebook declares (or
inherits), the notes it could declare, its negative claims, and the changes agents
proposed to declared notes, waiting for the owner. Read in the notebook page's own
transaction (`notebooks.selectors.vision_pages.notebook_vision_page`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db.models import Q

from grove.interfaces.rendering import note_title
from grove.kernel.actor import Actor
from notebooks.models import Note, Notebook, PendingOrigin, PendingRevision, PendingStatus
from notebooks.schemas.truth import TruthNoteOut, TruthOut
from notebooks.selectors.access import notes_live
from notebooks.selectors.truth import truth_for, truth_out
from notebooks.selectors.vision import connection_names

PICKER_NOTES = 200  # the newest live notes of the notebook offered in the picker


@dataclass(frozen=True)
class Choice:
    id: uuid.UUID
    title: str
    kind: str
    declared: bool


@dataclass(frozen=True)
class HeldChange:
    """A connection's write waiting for the owner: a change to a declared note, or a
    write into this notebook that failed its check against the declared truth (`checked`;
    `note_id` None for a new note)."""

    id: uuid.UUID
    note_id: uuid.UUID | None
    checked: bool
    title: str  # the note's first line, as readers get it now (a new note's own)
    base_version: int
    current_version: int
    by: str
    created: object  # datetime
    current: str  # the accepted text ("" for a new note)
    proposed: str  # the text after the change
    changes: dict[str, object]  # every field the change sets
    verdict: str
    findings: list[dict[str, object]]

    @property
    def stale(self) -> bool:
        return self.current_version != self.base_version

    @property
    def verdict_label(self) -> str:
        return VERDICT_LABELS.get(self.verdict, self.verdict)


VERDICT_LABELS = {
    "supported": "supported by the declared notes",
    "contradicts": "contradicts the declared notes",
    "unverifiable": "not covered by the declared notes",
    "needs_review": "needs your review (no verdict from a model)",
}


@dataclass(frozen=True)
class TruthCard:
    truth: TruthOut
    declared: list[tuple[TruthNoteOut, str]]  # each declared note, with its first line
    choices: list[Choice]  # this notebook's newest live notes, declared ones first
    more_choices: int
    held: list[HeldChange]


def truth_card(actor: Actor, notebook: Notebook) -> TruthCard:
    """Caller holds a tenant transaction (owner session: the card is the owner's)."""
    truth = truth_for(actor, notebook)
    declared = {note.id for note, _ in truth.notes}
    titles = {note.id: note_title(note.content, 100, path=note.source_path)
              for note, _ in truth.notes}
    notes = notes_live(actor).filter(notebook_id=notebook.id).order_by("-updated_at", "id")
    shown = list(notes[:PICKER_NOTES])
    more = 0 if len(shown) < PICKER_NOTES else notes.count() - len(shown)
    choices = [Choice(id=n.id, title=note_title(n.content, 100, path=n.source_path), kind=n.kind,
                      declared=n.id in declared) for n in shown]
    in_picker = {c.id for c in choices}
    # Declared notes from elsewhere (another notebook, Personal) are offered too, first.
    choices = [Choice(id=note.id, title=titles[note.id], kind=note.kind, declared=True)
               for note, _ in truth.notes if note.id not in in_picker] + choices
    choices.sort(key=lambda c: not c.declared)
    names = connection_names()
    held = []
    rows = list(PendingRevision.objects.filter(
        Q(note_id__in=declared) | Q(notebook_id=notebook.id, origin=PendingOrigin.CHECKED),
        status=PendingStatus.PENDING).order_by("created_at", "id"))
    heads = {n.id: n for n in Note.objects.filter(id__in=[r.note_id for r in rows])}
    for row in rows:
        head = heads.get(row.note_id) if row.note_id else None
        proposed = str(row.changes.get("content", head.content if head else ""))
        held.append(HeldChange(
            id=row.id, note_id=row.note_id, checked=row.origin == PendingOrigin.CHECKED,
            title=note_title(head.content if head else proposed, 100),
            base_version=row.base_version, current_version=head.version if head else 0,
            by=names.get(row.connection_id, "a connection"), created=row.created_at,
            current=head.content if head else "", proposed=proposed,
            changes=dict(row.changes), verdict=row.verdict, findings=list(row.findings)))
    out = truth_out(truth, full=False)
    return TruthCard(truth=out, declared=[(n, titles[n.id]) for n in out.notes],
                     choices=choices, more_choices=more, held=held)
