"""Batch changes of notes with a result per item: forget, archive, restore (`BatchOut`,
the tools' batches), and the library's bulk move and tag (`BulkOut`)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from grove.kernel import fences, operations
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import GroveError, Invalid, NotFound
from notebooks.models import (
    EXPIRED_RESTORE_WINDOW_DAYS,
    Note,
    RevisionReason,
    Status,
)
from notebooks.rules import clean_items, clean_tag, clean_tags, note_is_live, parse_uuid
from notebooks.schemas.bulk import BulkItem, BulkOut, BulkStatus
from notebooks.schemas.notes import BatchOut, ItemResult, ItemStatus
from notebooks.selectors.access import access_destination, access_note
from notebooks.services.frame import (
    expiry,
    idempotent,
    require_active,
    require_open_notebook,
)
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
        note.superseded_by_id = None  # brought back: no longer replaced
        note.expires_at = expiry(note.retention_days, now)
        save_new_version(note, reason=RevisionReason.RESTORE, actor=actor,
                         operation_id=op_id, now=now)
        return "restored"

    return _batch(actor=actor, operation_id=operation_id, items=items, action="note_restore",
                  apply=apply)


# -- the library's bulk changes: a result per note, a rule's "no" for one note reported ----


def each_note(
    parsed: Sequence[tuple[uuid.UUID, int | None]],
    *,
    lock: Callable[[uuid.UUID], Note],
    apply: Callable[[Note, datetime], BulkStatus],
) -> BulkOut:
    """Inside the caller's transaction, per note in id order (so concurrent batches
    cannot deadlock): `lock` it (NotFound → `not_found`), check its fence
    (`version_conflict`), then `apply` the change in a savepoint — a rule that refuses
    this one note (any domain error) leaves it as it was, reported `refused` with the
    error's code, and the other notes go on. Results in the order asked."""
    now = timezone.now()
    results: dict[uuid.UUID, BulkItem] = {}
    for note_uuid, expected in sorted(parsed, key=lambda item: str(item[0])):
        try:
            note = lock(note_uuid)
        except NotFound:
            results[note_uuid] = BulkItem(id=note_uuid, status="not_found")
            continue
        version = note.version
        if fences.is_stale(actual=version, expected=expected):
            results[note_uuid] = BulkItem(id=note_uuid, status="version_conflict",
                                          version=version)
            continue
        try:
            with transaction.atomic():
                status = apply(note, now)
        except GroveError as exc:
            results[note_uuid] = BulkItem(id=note_uuid, status="refused", version=version,
                                          code=exc.code)
            continue
        results[note_uuid] = BulkItem(id=note_uuid, status=status, version=note.version)
    return BulkOut(items=[results[note_uuid] for note_uuid, _ in parsed])


def _writable(actor: Actor) -> Callable[[uuid.UUID], Note]:
    return lambda note_uuid: access_note(actor, note_uuid, need=WRITE, for_update=True)


class _NotAll(Exception):
    """A batch move that cannot move every note: its savepoint is rolled back."""

    def __init__(self, result: BulkOut):
        super().__init__("not every note can move")
        self.result = result


def note_move_many(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    items: Iterable[Any],
    notebook_id: uuid.UUID | str | None,
) -> BulkOut:
    """Move each note to a notebook (None = Personal), a new revision each — the
    library's bulk move and its drag and drop. Items are note ids or
    `{id, expectedVersion}` (`clean_items`: at most `BATCH_MAX`).

    All or nothing (SPEC §3), as `note_move` (the `move_notes` tool) is — but where
    `note_move` raises the first problem, this reports each note, so the website can
    say which ones stopped the batch: moved | unchanged (already there) | not_found |
    version_conflict (changed since the version read) | refused (`handoff_exists`: its
    task has a live handoff there; `declared_note`, `writes_checked`: a connection
    moving ground truth, or a fact into a notebook that checks agents' writes). If any
    note is not_found, version_conflict or refused, no note moves and those that could
    have are `not_moved`. The destination is checked first, for the whole batch: not a
    live notebook the caller may write to → NotFound, archived → Conflict
    `notebook_archived`. Needs write access to each note's place, as `note_move` does."""
    op_id = operations.coerce_operation_id(operation_id)
    parsed = clean_items(items)
    destination_uuid = None if notebook_id is None else parse_uuid(notebook_id,
                                                                    what="notebook id")

    def write() -> BulkOut:
        require_open_notebook(access_destination(actor, destination_uuid))

        def apply(note: Note, now: datetime) -> BulkStatus:
            if note.notebook_id == destination_uuid:
                return "unchanged"
            note.notebook_id = destination_uuid
            save_new_version(note, reason=RevisionReason.MOVE, actor=actor,
                             operation_id=op_id, now=now)
            return "moved"

        try:
            with transaction.atomic():
                moved = each_note(parsed, lock=_writable(actor), apply=apply)
                if any(item.status not in ("moved", "unchanged") for item in moved.items):
                    raise _NotAll(moved)
        except _NotAll as stopped:  # the savepoint is rolled back: nothing moved
            return BulkOut(items=[
                # A move writes one revision: the version before it is one less.
                BulkItem(id=item.id, status="not_moved", version=(item.version or 1) - 1)
                if item.status == "moved" else item for item in stopped.result.items])
        return moved

    return idempotent(actor=actor, operation_id=op_id, action="note_move_many",
                      arguments={"items": [[str(i), v] for i, v in parsed],
                                 "notebookId": destination_uuid},
                      decode=BulkOut.model_validate, write=write)


def note_tag(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    items: Iterable[Any],
    add: str | None = None,
    remove: str | None = None,
) -> BulkOut:
    """Add one tag to each note and/or remove one (normalised as every tag is,
    `clean_tag`): a new revision of each note whose tags change, as a correction of its
    tags by `note_update` makes. Items as for `note_move_many`.

    Per note: tagged | unchanged (it had the tag already, or not the one removed) |
    not_found | version_conflict | refused (`note_not_active`: archived and expired
    notes are not corrected, as `note_update` says; `invalid_tags`: it would pass
    `TAGS_MAX` tags; `declared_note`: a connection changing declared ground truth)."""
    op_id = operations.coerce_operation_id(operation_id)
    parsed = clean_items(items)
    added = None if add is None else clean_tag(add)
    removed = None if remove is None else clean_tag(remove)
    if added is None and removed is None:
        raise Invalid("Give a tag to add or one to remove.", code="no_changes")
    if added == removed:
        raise Invalid("Adding and removing the same tag changes nothing.",
                      code="invalid_tags")

    def apply(note: Note, now: datetime) -> BulkStatus:
        require_active(note, now)
        tags = [tag for tag in note.tags if tag != removed] + ([added] if added else [])
        tags = clean_tags(tags)  # sorted, once each; more than TAGS_MAX → invalid_tags
        if set(tags) == set(note.tags):
            return "unchanged"
        note.tags = tags
        save_new_version(note, reason=RevisionReason.UPDATE, actor=actor,
                         operation_id=op_id, now=now)
        return "tagged"

    def write() -> BulkOut:
        return each_note(parsed, lock=_writable(actor), apply=apply)

    return idempotent(actor=actor, operation_id=op_id, action="note_tag",
                      arguments={"items": [[str(i), v] for i, v in parsed],
                                 "add": added, "remove": removed},
                      decode=BulkOut.model_validate, write=write)
