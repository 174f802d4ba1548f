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
from grove.kernel.errors import Invalid, NotFound
from grove.kernel.tenancy import tenant
from notebooks.models import NegativeClaim, Note, Revision, Status
from notebooks.rules import INT_MAX, parse_uuid
from notebooks.schemas.notes import NoteRead, RevisionOut, RevisionRead
from notebooks.selectors import negatives
from notebooks.selectors.access import access_note, resolve_scope
from notebooks.selectors.as_of import AsOf, clean_as_of, granted_then, latest_at
from notebooks.selectors.note_links import backlinks_of, links_of
from notebooks.selectors.truth import scoped_truth
from notebooks.selectors.truth_marks import active_profile, claims_on, truth_marks
from passages.rules import pieces
from passages.schemas import PassageRef, passage_id


def note_read(*, actor: Actor, note_id: uuid.UUID | str, version: int | None = None,
              passage: int | None = None, as_of: str | None = None
              ) -> NoteRead | RevisionRead:
    """The note as it is now with its ground-truth marks — or, given a `version` other
    than its current one, that revision with the marks of its text (`version_not_found`
    when it never had it). The same answer for `note:<id>` and `note:<id>@<current>`.
    `passage` (with a version): only that passage of it (`passage_of`). `as_of`: the
    revision the note had at that instant (`read_at`)."""
    if as_of is not None:
        if version is not None:
            raise Invalid("Name a version or give asOf, not both.", code="invalid_as_of")
        at = clean_as_of(as_of, actor=actor)
        assert at is not None
        past = read_at(actor, note_id, at)
        return past if passage is None else passage_of(past, passage)
    with tenant(actor):
        note = access_note(actor, note_id, need=READ)
        if version is None or version == note.version:
            current = read_of(actor, note)
            return current if passage is None else passage_of(current, passage)
        revision, claims = past_revision(actor, note, version)
    past = marked_revision(revision, claims)
    return past if passage is None else passage_of(past, passage)


def read_at(actor: Actor, note_id: uuid.UUID | str, at: AsOf) -> RevisionRead:
    """The revision a note had at the instant, if the caller may read it as of then
    (`as_of`: its notebook then granted and live, the note not deleted then) — a note
    deleted since included. Otherwise, or when the note did not exist yet, the same
    `note_not_found` as for a note the caller cannot see (nothing told apart)."""
    actor.require(READ)
    note_uuid = parse_uuid(note_id, what="note id")
    with tenant(actor):
        revision = (latest_at(at).filter(note_id=note_uuid).filter(granted_then(actor, at))
                    .exclude(status=Status.DELETED).select_related("note").first())
        if revision is None:
            raise NotFound(f"No such note as of {at.out()}.", code="note_not_found")
        claims = claims_on(revision.note, scoped_truth(resolve_scope(actor)))
    return marked_revision(revision, claims).model_copy(update={"as_of": at.out()})


def passage_of[R: (NoteRead, RevisionRead)](read: R, position: int) -> R:
    """A read of one passage of a note at a version: `content` that passage's text,
    `passage` naming it (`note:<id>@<version>#<position>`), every other field the
    note's at that version. The cut is a function of the version's kind and text
    (`passages.rules.pieces`), so a past version's passages are the same every time.
    A position the version does not have: NotFound `passage_not_found`."""
    cut = pieces(read.kind, read.content)
    if not 1 <= position <= len(cut):
        raise NotFound(f"{read.versioned_id} has {len(cut)} passage"
                       f"{'' if len(cut) == 1 else 's'}; there is no passage {position}.",
                       code="passage_not_found", passages=len(cut))
    piece = cut[position - 1]
    return read.model_copy(update={
        "content": piece.text,
        "passage": PassageRef(id=passage_id(read.note_id if isinstance(read, RevisionRead)
                                            else read.id, read.version, position),
                              position=position, of=len(cut), headings=list(piece.headings))})


def read_of(actor: Actor, note: Note) -> NoteRead:
    """A note the caller may read, with its marks as a read of it by id is held to them
    (the grant's one notebook, else the note's own place). Caller holds a tenant
    transaction."""
    marks = truth_marks([note], scoped_truth(resolve_scope(actor)),
                        profile=active_profile())[note.id]
    return NoteRead.of(note).model_copy(update={"authority": marks.authority,
                                                "known_false": list(marks.known_false),
                                                "links": links_of(actor, note),
                                                "backlinks": backlinks_of(actor, note)})


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
