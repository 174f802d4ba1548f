"""The Undo of a batch: what the library's bulk bar did — archive, delete, move, tag —
reversed note by note, each as a new revision (history is never rewritten).

The batch is named by its operation id: its record (`grove.kernel.operations`) says
which change it was and which notes it reported, and the revisions it wrote (they carry
its operation id) say which of those it really changed — a note it found archived,
already there or already tagged so got no revision, and is not touched now.
"""

from __future__ import annotations

import operator
import uuid
from datetime import datetime
from functools import reduce
from typing import Any

from django.db.models import Q

from grove.kernel import operations
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import NotFound
from notebooks.models import Note, Revision, RevisionReason, Status
from notebooks.rules import parse_uuid
from notebooks.schemas.bulk import BulkOut, BulkStatus
from notebooks.selectors.access import access_destination, access_note
from notebooks.services.batches import each_note
from notebooks.services.frame import expiry, idempotent, require_open_notebook
from notebooks.services.indexing import mark_for_indexing
from notebooks.services.revisions import save_new_version
from notebooks.services.trash import undelete_locked

# The batches that can be undone: their action, and the reason of the revisions they write.
UNDOABLE = {
    "note_archive": RevisionReason.ARCHIVE,
    "note_forget": RevisionReason.DELETE,
    "note_move_many": RevisionReason.MOVE,
    "note_tag": RevisionReason.UPDATE,
    # A rename with its relinking (`note_update` with relink): the note and the notes
    # whose links it rewrote.
    "note_update": RevisionReason.UPDATE,
}


def note_batch_undo(
    *, actor: Actor, operation_id: uuid.UUID | str, batch_id: uuid.UUID | str
) -> BulkOut:
    """Reverse the batch `batch_id` (an operation id the same caller used for
    `note_archive`, `note_forget`, `note_move_many` or `note_tag`): each note it
    changed goes back as a new revision — an archived note active again (its retention
    renewed, as restore does), a deleted one back from Recently deleted (archived again
    if it was archived), a moved one to the notebook it came from, a tagged one to the
    tags it had.

    Fenced per note by the version the batch made: a note changed since stays as it is
    (`version_conflict`). Per note the batch changed: undone | version_conflict |
    not_found | refused (`notebook_not_found` / `notebook_deleted` /
    `notebook_archived`: the place it came from is gone or archived; `not_restorable`;
    `handoff_exists`). Website owner only, as Recently deleted is (`session_required`).
    No such batch of this caller → NotFound `batch_not_found`."""
    actor.require_session()
    op_id = operations.coerce_operation_id(operation_id)
    batch = parse_uuid(batch_id, what="batch id")

    def write() -> BulkOut:
        done = operations.recorded(actor, batch)
        if done is None or done.action not in UNDOABLE or not isinstance(done.result, dict):
            raise NotFound("There is no such change to undo.", code="batch_not_found")
        reason = UNDOABLE[done.action]
        relinked = done.action == "note_update"
        if relinked:  # the renamed note first, then the notes whose links it rewrote
            renamed = parse_uuid(str(done.result.get("id", "")), what="note id")
            reported = [renamed, *Revision.objects.filter(operation_id=batch, reason=reason)
                        .exclude(note_id=renamed).order_by("note_id")
                        .values_list("note_id", flat=True)]
        else:
            reported = [parse_uuid(item["id"], what="note id")
                        for item in done.result.get("items", []) if isinstance(item, dict)]
        # The notes the batch changed, each at the version its revision made (the fence),
        # in the batch's order.
        order = {note_id: index for index, note_id in enumerate(reported)}
        changed = sorted(Revision.objects.filter(note_id__in=reported, operation_id=batch,
                                                 reason=reason)
                         .values_list("note_id", "version"), key=lambda row: order[row[0]])
        if not changed:
            return BulkOut(items=[])
        before = _before(changed) if reason in (RevisionReason.MOVE,
                                                RevisionReason.UPDATE) else {}
        places: dict[uuid.UUID, Any] = {}

        def lock(note_uuid: uuid.UUID) -> Note:
            if reason != RevisionReason.DELETE:
                return access_note(actor, note_uuid, need=WRITE, for_update=True)
            note = (Note.objects.select_for_update(of=("self",))
                    .filter(account_id=actor.account_id, id=note_uuid, status=Status.DELETED)
                    .first())
            if note is None:
                raise NotFound("No such deleted note.", code="note_not_found")
            return note

        def apply(note: Note, now: datetime) -> BulkStatus:
            if reason == RevisionReason.DELETE:
                undelete_locked(note, actor=actor, operation_id=op_id, now=now,
                                status=Status.ARCHIVED if note.archived_at else Status.ACTIVE)
                return "undone"
            if reason == RevisionReason.ARCHIVE:
                note.status, note.archived_at, note.expired_at = Status.ACTIVE, None, None
                note.expires_at = expiry(note.retention_days, now)
                save_new_version(note, reason=RevisionReason.RESTORE, actor=actor,
                                 operation_id=op_id, now=now)
                return "undone"
            if note.id not in before:  # history is never rewritten: cannot happen
                raise NotFound("The note's earlier revision is missing.",
                               code="revision_not_found")
            notebook_id, tags, content = before[note.id]
            if relinked:  # the text (and tags) each had: the rename and the links
                note.content, note.tags = content, tags
                save_new_version(note, reason=reason, actor=actor, operation_id=op_id,
                                 now=now)
                mark_for_indexing(note)
                return "undone"
            if reason == RevisionReason.MOVE:
                if notebook_id not in places:  # each place checked (and locked) once
                    places[notebook_id] = access_destination(actor, notebook_id)
                require_open_notebook(places[notebook_id])
                note.notebook_id = notebook_id
            else:
                note.tags = tags
            save_new_version(note, reason=reason, actor=actor, operation_id=op_id, now=now)
            return "undone"

        return each_note(changed, lock=lock, apply=apply)

    return idempotent(actor=actor, operation_id=op_id, action="note_batch_undo",
                      arguments={"batch": str(batch)}, decode=BulkOut.model_validate,
                      write=write, need=None)


def _before(changed: list[tuple[uuid.UUID, int]]
            ) -> dict[uuid.UUID, tuple[Any, list[str], str]]:
    """Each note's notebook, tags and text in the revision before the batch's one."""
    previous = reduce(operator.or_, (Q(note_id=note_id, version=version - 1)
                                     for note_id, version in changed))
    return {note_id: (notebook_id, tags, content) for note_id, notebook_id, tags, content in
            Revision.objects.filter(previous).values_list("note_id", "notebook_id", "tags",
                                                          "content")}
