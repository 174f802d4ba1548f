"""Revisions: every change to a note writes one, and an old one can be restored as a new one."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import IntegrityError, transaction

from grove.kernel import operations
from grove.kernel.actor import Actor
from grove.kernel.errors import Forbidden, NotFound
from links.services import NoteText, links_sync, targets_changed
from notebooks.models import (
    Kind,
    Note,
    NoteFields,
    Revision,
    RevisionReason,
)
from notebooks.rules import clean_bool, clean_version, parse_uuid
from notebooks.schemas.notes import NoteOut
from notebooks.selectors.truth import is_declared
from notebooks.services import write_check
from notebooks.services.frame import (
    idempotent,
    integrity_conflict,
    note_to_change,
)
from notebooks.services.indexing import index_if_changed, mark_for_indexing


def revision_of(
    note: Note, *, reason: str, actor: Actor, operation_id: uuid.UUID | None,
    restored_from: int | None = None,
) -> Revision:
    """The snapshot of `note` as it is now, not yet saved."""
    snapshot = {name: getattr(note, name) for name in NoteFields.snapshot_field_names()}
    return Revision(
        account_id=note.account_id, note=note, version=note.version, reason=reason,
        connection_id=actor.connection_id, operation_id=operation_id,
        restored_from=restored_from, created_at=note.updated_at, **snapshot,
    )


def write_revision(
    note: Note, *, reason: str, actor: Actor, operation_id: uuid.UUID | None,
    restored_from: int | None = None,
) -> Revision:
    revision = revision_of(note, reason=reason, actor=actor, operation_id=operation_id,
                           restored_from=restored_from)
    revision.save(force_insert=True)
    return revision


def record_created(note: Note, *, actor: Actor, operation_id: uuid.UUID | None) -> None:
    """After a new note is inserted: its first revision, and its embedding job."""
    write_revision(note, reason=RevisionReason.CREATE, actor=actor, operation_id=operation_id)
    mark_for_indexing(note)


# Changes of whether a note can be a link's target, or where it sits.
PLACE_CHANGES = frozenset({RevisionReason.DELETE, RevisionReason.RESTORE, RevisionReason.MOVE})


def save_new_version(
    note: Note, *, reason: str, actor: Actor, operation_id: uuid.UUID | None,
    now: datetime, restored_from: int | None = None,
) -> None:
    """Bump the version, save, and snapshot the result. Handoff clashes → Conflict.

    A connection never changes declared ground truth directly: a correction is held for
    the owner (`note_update`), and every other change — move, archive, delete, restore,
    a handoff's update — is refused (`declared_note`)."""
    if not actor.is_session and actor.connection_id is not None and is_declared(note.id):
        raise Forbidden("This note is declared ground truth: only the owner may move, "
                        "archive, delete or restore it; a correction (update_memory) is "
                        "held for the owner's review.", code="declared_note")
    if reason in (RevisionReason.MOVE, RevisionReason.RESTORE_REVISION):
        write_check.refuse_unchecked(actor, note)  # they bring text in without a check
    note.version += 1
    note.updated_at = now
    try:
        with transaction.atomic():
            note.save()
    except IntegrityError as exc:
        raise integrity_conflict(exc) from None
    write_revision(note, reason=reason, actor=actor, operation_id=operation_id,
                   restored_from=restored_from)
    if reason in PLACE_CHANGES:
        # The notes a link may mean changed: links asking for this note's names again.
        targets_changed(note.account_id, [note.id])
    if reason == RevisionReason.MOVE:  # and its own links start from its new place
        links_sync(note.account_id, [NoteText(note.id, note.notebook_id, note.content,
                                              note.source_path)], placed=True)


def note_restore_revision(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    note_id: uuid.UUID | str,
    revision: int,
    durable: bool = False,
    expected_version: int | None = None,
) -> NoteOut:
    """Write a new revision whose content and metadata come from an older one (history is
    never rewritten). `durable=True` promotes a handoff to a permanent fact."""
    op_id = operations.coerce_operation_id(operation_id)
    note_uuid = parse_uuid(note_id, what="note id")
    revision = clean_version(revision, what="revision")
    durable = clean_bool(durable, what="durable")
    if expected_version is not None:
        expected_version = clean_version(expected_version)

    def write() -> NoteOut:
        note, now = note_to_change(actor, note_uuid, expected_version)
        old = Revision.objects.filter(note=note, version=revision).first()
        if old is None:
            raise NotFound(f"The note has no revision {revision}.", code="revision_not_found")
        previous_content, previous_kind = note.content, note.kind
        for field in ("content", "kind", "task_id", "source_agent", "pinned", "tags",
                      "importance"):
            setattr(note, field, getattr(old, field))
        if durable and note.kind == Kind.HANDOFF:
            note.kind, note.retention_days, note.expires_at = Kind.FACT, None, None
        save_new_version(note, reason=RevisionReason.RESTORE_REVISION, actor=actor,
                         operation_id=op_id, now=now, restored_from=revision)
        index_if_changed(note, content=previous_content, kind=previous_kind)
        return NoteOut.of(note)

    arguments = {"noteId": note_uuid, "revision": revision, "durable": durable,
                 "expectedVersion": expected_version}
    return idempotent(actor=actor, operation_id=op_id, action="note_restore_revision",
                      arguments=arguments, decode=NoteOut.model_validate, write=write,
                      target=lambda result: result.id, gone_if_deleted=True,
                      note_ids=lambda result: [result.id])
