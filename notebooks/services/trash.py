"""Recently deleted (SPEC §3): the owner, signed in to the website, brings back a note or
a notebook deleted in the last `TRASH_DAYS` days — each note as a new revision; history
is never rewritten.

What comes back is as it was: a share link to it that was not revoked opens again, as
after restoring an archived notebook.

Deletion through the tools stays final (archive is their reversible path): these
services refuse every caller but the website session themselves (`session_required`),
whichever interface calls them, and no REST route or MCP tool calls them.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from grove.kernel import operations
from grove.kernel.actor import Actor
from grove.kernel.errors import Conflict, Gone, NotFound
from notebooks.models import Note, Notebook, RevisionReason, Status
from notebooks.rules import (
    TRASH_DAYS,
    clean_version,
    note_in_trash_filter,
    notebook_in_trash_filter,
    parse_uuid,
)
from notebooks.schemas.notes import NoteOut, SubtreeCounts
from notebooks.selectors.access import access_destination, deleted_together
from notebooks.services.frame import (
    expect_version,
    expiry,
    idempotent,
    require_open_notebook,
    tree_lock,
)
from notebooks.services.indexing import mark_for_indexing
from notebooks.services.notebooks import require_names_free
from notebooks.services.revisions import save_new_version

GONE_FOR_GOOD = (f"It was deleted more than {TRASH_DAYS} days ago, or its retention ran "
                 "out: it can no longer be restored.")


def note_undelete(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    note_id: uuid.UUID | str,
    expected_version: int | None = None,
) -> NoteOut:
    """Restore a deleted note (Recently deleted, or Undo after a delete): a new revision,
    active again, its retention renewed (restore renews it, SPEC §3). Website owner only.

    Refused, with nothing changed: another caller (`session_required`); a note that is
    not a deleted note of the account (`note_not_found`); one deleted more than
    `TRASH_DAYS` days ago or past its retention (Gone `not_restorable`); one whose
    notebook is deleted (`notebook_deleted`: restore the notebook, which brings back
    what was deleted with it) or archived (`notebook_archived`); a handoff whose task
    already has a live handoff there (`handoff_exists`); with `expected_version`, a note
    at another version (`version_conflict`). Queues indexing again."""
    actor.require_session()
    op_id = operations.coerce_operation_id(operation_id)
    note_uuid = parse_uuid(note_id, what="note id")
    if expected_version is not None:
        expected_version = clean_version(expected_version)

    def write() -> NoteOut:
        now = timezone.now()
        note = (Note.objects.select_for_update(of=("self",))
                .filter(account_id=actor.account_id, id=note_uuid, status=Status.DELETED)
                .first())
        if note is None:
            raise NotFound("No such deleted note.", code="note_not_found")
        expect_version(note, expected_version)
        undelete_locked(note, actor=actor, operation_id=op_id, now=now, status=Status.ACTIVE)
        return NoteOut.of(note)

    # The session requirement above stands for `need`: restoring is the owner's alone.
    return idempotent(actor=actor, operation_id=op_id, action="note_undelete",
                      arguments={"noteId": note_uuid, "expectedVersion": expected_version},
                      decode=NoteOut.model_validate, write=write, need=None,
                      target=lambda result: result.id, gone_if_deleted=True,
                      note_ids=lambda result: [result.id])


def notebook_undelete(
    *, actor: Actor, operation_id: uuid.UUID | str, notebook_id: uuid.UUID | str
) -> SubtreeCounts:
    """Restore a deleted notebook with what was deleted together with it: the
    sub-notebooks and notes of the same subtree delete. A sub-notebook or note deleted
    on its own before stays in Recently deleted (it comes back on its own); a note whose
    retention ran out meanwhile stays deleted. Each note comes back as a new revision, in
    the status it had (an archived note stays archived). Website owner only. Returns
    what came back.

    Refused, with nothing changed: another caller (`session_required`); not a deleted
    notebook of the account (`notebook_not_found`); deleted more than `TRASH_DAYS` days
    ago (Gone `not_restorable`); its parent still deleted (`parent_deleted`) or archived
    (`parent_archived`); a live notebook beside one of those coming back live with its
    name (`notebook_name_taken`); a handoff of it whose task has a live handoff there now
    (`handoff_exists`)."""
    actor.require_session()
    op_id = operations.coerce_operation_id(operation_id)
    notebook_uuid = parse_uuid(notebook_id, what="notebook id")

    def write() -> SubtreeCounts:
        tree_lock(actor)  # subtree actions and moves wait: the parent stays as checked
        now = timezone.now()
        notebook = (Notebook.objects.select_for_update()
                    .filter(account_id=actor.account_id, id=notebook_uuid,
                            deleted_at__isnull=False).first())
        if notebook is None:
            raise NotFound("No such deleted notebook.", code="notebook_not_found")
        if not Notebook.objects.filter(id=notebook.id) \
                .filter(notebook_in_trash_filter(now=now)).exists():
            raise Gone(GONE_FOR_GOOD, code="not_restorable")
        if notebook.parent_id is not None:
            parent = Notebook.objects.get(id=notebook.parent_id)
            if parent.deleted_at is not None:
                raise Conflict(f"It was inside “{parent.name}”, which is deleted too; "
                               "restore that first.", code="parent_deleted")
            if parent.archived_at is not None and notebook.archived_at is None:
                raise Conflict(f"It was inside “{parent.name}”, which is archived now; "
                               "restore that first.", code="parent_archived")
        ids = deleted_together([notebook.id])[notebook.id]
        rows = list(Notebook.objects.select_for_update().filter(id__in=ids).order_by("id"))
        require_names_free([nb.id for nb in rows if nb.archived_at is None])
        notes = (Note.objects.select_for_update(of=("self",))
                 .filter(notebook_id__in=ids, deleted_at=notebook.deleted_at)
                 .filter(note_in_trash_filter(now=now)).order_by("id"))
        count = 0
        for note in notes:
            _bring_back(note, actor=actor, operation_id=op_id, now=now,
                        status=Status.ARCHIVED if note.archived_at else Status.ACTIVE)
            count += 1
        Notebook.objects.filter(id__in=ids).update(deleted_at=None, updated_at=now)
        return SubtreeCounts(notebooks=len(ids), notes=count)

    return idempotent(actor=actor, operation_id=op_id, action="notebook_undelete",
                      arguments={"notebookId": notebook_uuid},
                      decode=SubtreeCounts.model_validate, write=write, need=None)


def undelete_locked(note: Note, *, actor: Actor, operation_id: uuid.UUID, now: datetime,
                    status: str) -> None:
    """Bring back a deleted note the caller has locked, made `status` (the checks and
    the change of `note_undelete`, which the Undo of a batch delete makes per note):
    Gone `not_restorable`, Conflict `notebook_deleted` / `notebook_archived`."""
    if not Note.objects.filter(id=note.id).filter(note_in_trash_filter(now=now)).exists():
        raise Gone(GONE_FOR_GOOD, code="not_restorable")
    if note.notebook_id is not None:
        _require_notebook_back(note.notebook_id)
        require_open_notebook(access_destination(actor, note.notebook_id))
    _bring_back(note, actor=actor, operation_id=operation_id, now=now, status=status)


def _require_notebook_back(notebook_id: uuid.UUID) -> None:
    """A note comes back only into a notebook that is not deleted (say so plainly,
    rather than the NotFound a deleted notebook gives everywhere else)."""
    name = Notebook.objects.filter(Q(id=notebook_id), ~Q(deleted_at=None)) \
        .values_list("name", flat=True).first()
    if name is not None:
        raise Conflict(f"Its notebook “{name}” is deleted too; restore that first.",
                       code="notebook_deleted")


def _bring_back(note: Note, *, actor: Actor, operation_id: uuid.UUID, now: datetime,
                status: str) -> None:
    """A deleted note made `status` again, as a new revision (its retention renewed)."""
    note.status, note.deleted_at, note.expired_at = status, None, None
    if status != Status.ARCHIVED:
        note.archived_at = None
    note.expires_at = expiry(note.retention_days, now)
    save_new_version(note, reason=RevisionReason.RESTORE, actor=actor,
                     operation_id=operation_id, now=now)
    # Its vector may be gone or stale (a reindex skips deleted notes; a job that
    # finished after the delete was discarded): index it again rather than claim ready.
    mark_for_indexing(note)
