"""A note by id, as every interface hands it out (STYLE §13, §15): as it is now, with what
declared ground truth says of it (`truth_marks`), or exactly one of its revisions.

"A note at a version" lives here alone: REST (`GET /v1/get/note:<id>@<version>`), the
`get_note` tool and the `note://{id}@{version}` resource read it through `revision_at`
— one query for that one revision, after the note itself was checked against the
grant — and a version the note never had is the same `NotFound` everywhere, code
`version_not_found` (404). The current version is the note itself (`read_of`); a past
one carries the known-false marks of its own text (`marked_revision`)."""

from __future__ import annotations

import uuid

from grove.kernel.actor import READ, Actor
from grove.kernel.errors import NotFound
from grove.kernel.tenancy import tenant
from notebooks.models import NegativeClaim, Note, Revision
from notebooks.rules import INT_MAX
from notebooks.schemas.notes import NoteRead, RevisionOut, RevisionRead
from notebooks.selectors import negatives
from notebooks.selectors.access import access_note, resolve_scope
from notebooks.selectors.truth import scoped_truth
from notebooks.selectors.truth_marks import active_profile, claims_on, truth_marks


def note_read(*, actor: Actor, note_id: uuid.UUID | str,
              version: int | None = None) -> NoteRead | RevisionRead:
    """The note as it is now with its ground-truth marks — or, given a `version` other
    than its current one, that revision with the marks of its text (`version_not_found`
    when it never had it). The same answer for `note:<id>` and `note:<id>@<current>`."""
    with tenant(actor):
        note = access_note(actor, note_id, need=READ)
        if version is None or version == note.version:
            return read_of(actor, note)
        revision, claims = past_revision(actor, note, version)
    return marked_revision(revision, claims)


def read_of(actor: Actor, note: Note) -> NoteRead:
    """A note the caller may read, with its marks as a read of it by id is held to them
    (the grant's one notebook, else the note's own place). Caller holds a tenant
    transaction."""
    marks = truth_marks([note], scoped_truth(resolve_scope(actor)),
                        profile=active_profile())[note.id]
    return NoteRead.of(note).model_copy(update={"authority": marks.authority,
                                                "known_false": list(marks.known_false)})


def past_revision(actor: Actor, note: Note, version: int
                  ) -> tuple[Revision, list[NegativeClaim]]:
    """A revision of a note the caller may read (`revision_at`), and the claims known to
    be false its text is held to — the note's, as `read_of` holds the note. Caller holds
    a tenant transaction; `marked_revision` marks it after (it may embed the text)."""
    revision = revision_at(note, version)
    return revision, claims_on(note, scoped_truth(resolve_scope(actor)))


def marked_revision(revision: Revision, claims: list[NegativeClaim]) -> RevisionRead:
    """A past revision with the claims its text matches, by the rule notes are matched
    by (`negatives`). Outside any transaction: it may ask the embedding provider."""
    [found] = negatives.texts_matching([revision.content], claims)
    return RevisionRead(**RevisionOut.of(revision).model_dump(), known_false=found)


def revision_at(note: Note, version: int) -> Revision:
    """One revision of a note already checked against the grant: one query. The
    revision's `note` is this note (no second read of it). Caller holds a tenant
    transaction."""
    revision = (Revision.objects.filter(note=note, version=version).first()
                if 1 <= version <= INT_MAX else None)  # past INT_MAX: no such column value
    if revision is None:
        raise NotFound(f"{note.typed_id} has no version {version} (it is at version "
                       f"{note.version}).", code="version_not_found",
                       current_version=note.version)
    revision.note = note
    return revision
