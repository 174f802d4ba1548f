"""Many new notes in one go, for ingest (issue 22): each file's new chunks are one
INSERT of notes, one of their first revisions and one of their embed jobs, instead of
a `note_remember` each (~22 statements a chunk, docs/benchmarks.md).

The same rules as `note_remember` for a new note of the owner's: every text cleaned and
screened for credentials (the explicit-save rule), the notebook open and the caller's,
the same defaults (`new_note`), a revision per note, stated dates, an embed job. What
it leaves out is what only a single save needs: the duplicate report (`similar`), the
check of agents' writes (the owner's own saves are never checked) and the operation
record — ingest's own ledger is what makes a rerun write nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils import timezone

from grove.identity.hygiene import Origin, SecretRules, screen
from grove.kernel import jobs
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import Invalid
from links.services import NoteText, links_sync
from notebooks.models import Kind, Note, Revision, RevisionReason
from notebooks.rules import clean_content, clean_kind, clean_tags
from notebooks.selectors.access import access_destination
from notebooks.services.frame import new_note, require_open_notebook
from notebooks.services.indexing import EMBED, read_content
from notebooks.services.revisions import revision_of
from passages.services import passages_add


@dataclass(frozen=True)
class NewNote:
    content: str
    tags: list[str]


def notes_create_many(*, actor: Actor, notebook_id: uuid.UUID | None, kind: str,
                      items: Sequence[NewNote], rules: SecretRules | None = None
                      ) -> list[uuid.UUID]:
    """Create `items` as notes of `notebook_id` (None: Personal), in the caller's
    tenant transaction; returns their ids in order. Owner only (website session or
    its commands); not a handoff (a handoff updates the live one of its task:
    `note_remember`)."""
    actor.require_session()
    actor.require(WRITE)
    kind = clean_kind(kind)
    if kind == Kind.HANDOFF:
        raise Invalid("Handoffs are saved one at a time (note_remember).",
                      code="invalid_kind")
    notebook = access_destination(actor, notebook_id)
    require_open_notebook(notebook)
    now = timezone.now()
    notes, embedded = [], False
    for item in items:
        text = clean_content(screen(actor, clean_content(item.content, kind=kind),
                                    origin=Origin.EXPLICIT, rules=rules).text, kind=kind)
        note = new_note(actor, notebook_id, content=text, kind=kind, task_id=None,
                        fields={"tags": clean_tags(item.tags)}, now=now)
        embedded = read_content(note)
        note.passages_hash = note.content_hash
        notes.append(note)
    Note.objects.bulk_create(notes)
    passages_add([(note.account_id, note.id, note.kind, note.content) for note in notes])
    links_sync(actor.account_id, [NoteText(note.id, note.notebook_id, note.content,
                                           note.source_path) for note in notes])
    Revision.objects.bulk_create([revision_of(note, reason=RevisionReason.CREATE,
                                              actor=actor, operation_id=None)
                                  for note in notes])
    if embedded:
        jobs.enqueue_new(account_id=actor.account_id, kind=EMBED, targets=[
            (note.id, note.version, note.content_hash) for note in notes])
    return [note.id for note in notes]
