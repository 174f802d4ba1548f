"""Batch state changes of notes — forget, archive, restore — with a result per item."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from grove.kernel import fences, operations
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import NotFound
from notebooks.models import (
    EXPIRED_RESTORE_WINDOW_DAYS,
    Note,
    RevisionReason,
    Status,
)
from notebooks.rules import clean_items, note_is_live
from notebooks.schemas.notes import BatchOut, ItemResult, ItemStatus
from notebooks.selectors.access import (
    access_note,
)
from notebooks.services.frame import expiry, idempotent
from notebooks.services.revisions import save_new_version


def _batch(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    items: Iterable[Any],
    action: str,
    apply: Callable[[Note, datetime, uuid.UUID], ItemStatus],
) -> BatchOut:
    """Shared frame of forget / archive / restore: per-item results, one transaction."""
    op_id = operations.coerce_operation_id(operation_id)
    parsed = clean_items(items)

    def write() -> BatchOut:
        now = timezone.now()
        results: list[ItemResult] = []
        # Lock in id order so concurrent batches cannot deadlock.
        for note_uuid, expected in sorted(parsed, key=lambda item: str(item[0])):
            try:
                note = access_note(actor, note_uuid, need=WRITE, for_update=True)
            except NotFound:
                results.append(ItemResult(id=note_uuid, status="not_found"))
                continue
            if fences.is_stale(actual=note.version, expected=expected):
                results.append(ItemResult(id=note_uuid, status="version_conflict",
                                          version=note.version))
                continue
            status = apply(note, now, op_id)
            results.append(ItemResult(id=note_uuid, status=status, version=note.version))
        order = {note_uuid: index for index, (note_uuid, _) in enumerate(parsed)}
        results.sort(key=lambda item: order[item.id])
        return BatchOut(items=results)

    return idempotent(actor=actor, operation_id=op_id, action=action,
                      arguments={"items": [[str(i), v] for i, v in parsed]},
                      decode=BatchOut.model_validate, write=write)


def note_forget(*, actor: Actor, operation_id: uuid.UUID | str, items: Iterable[Any]) -> BatchOut:
    """Soft-delete notes (`forget`). Per item: deleted | not_found | version_conflict.
    Deleted notes stay in the database, hidden, and cannot be restored by tools."""

    def apply(note: Note, now: datetime, op_id: uuid.UUID) -> ItemStatus:
        note.status, note.deleted_at = Status.DELETED, now
        save_new_version(note, reason=RevisionReason.DELETE, actor=actor,
                         operation_id=op_id, now=now)
        return "deleted"

    return _batch(actor=actor, operation_id=operation_id, items=items, action="note_forget",
                  apply=apply)


def note_archive(*, actor: Actor, operation_id: uuid.UUID | str, items: Iterable[Any]) -> BatchOut:
    """Archive notes (the reversible way out of recall). Per item: archived | not_found |
    version_conflict. An archived note stays archived (no new revision)."""

    def apply(note: Note, now: datetime, op_id: uuid.UUID) -> ItemStatus:
        if note.status == Status.ARCHIVED:
            return "archived"
        note.status, note.archived_at = Status.ARCHIVED, now
        save_new_version(note, reason=RevisionReason.ARCHIVE, actor=actor,
                         operation_id=op_id, now=now)
        return "archived"

    return _batch(actor=actor, operation_id=operation_id, items=items, action="note_archive",
                  apply=apply)


def note_restore(*, actor: Actor, operation_id: uuid.UUID | str, items: Iterable[Any]) -> BatchOut:
    """Bring archived or expired notes back to active. Restore renews retention (the
    clock restarts). Expired notes are restorable for 60 days after expiry. Per item:
    restored | not_found | version_conflict | not_restorable."""

    def apply(note: Note, now: datetime, op_id: uuid.UUID) -> ItemStatus:
        if note_is_live(note, now):
            return "restored"
        # Expired since: the job's record, or — if the job has not run yet — the expiry.
        expired_since = note.expired_at if note.status == Status.EXPIRED else (
            note.expires_at if note.status == Status.ACTIVE else None)
        if expired_since is not None and \
                expired_since <= now - timedelta(days=EXPIRED_RESTORE_WINDOW_DAYS):
            return "not_restorable"
        note.status, note.archived_at, note.expired_at = Status.ACTIVE, None, None
        note.expires_at = expiry(note.retention_days, now)
        save_new_version(note, reason=RevisionReason.RESTORE, actor=actor,
                         operation_id=op_id, now=now)
        return "restored"

    return _batch(actor=actor, operation_id=operation_id, items=items, action="note_restore",
                  apply=apply)
