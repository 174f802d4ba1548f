"""Writes to notebooks and notes: one keyword-only function per use case (STYLE §1).

Each service takes the resolved `actor`, validates its input before touching the
database, then runs in one tenant transaction (`grove.kernel.tenancy.tenant`): access checks,
the operation-id claim (`grove.kernel.operations`), the change, a revision row per changed
note, and the operation record. Errors are `grove.kernel.errors` exceptions with stable codes;
when one is raised nothing has changed.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any, Final

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from grove.kernel import operations
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import Conflict, Forbidden, Gone, Invalid, NotFound
from grove.kernel.tenancy import tenant
from grove.kernel.validation import storable_text
from grove.models import Account, Connection
from notebooks.indexing import mark_for_indexing
from notebooks.models import (
    CONTENT_MAX_CHARS,
    EXPIRED_RESTORE_WINDOW_DAYS,
    HANDOFF_DEFAULT_RETENTION_DAYS,
    NAME_MAX_CHARS,
    RETENTION_MAX_DAYS,
    SOURCE_AGENT_MAX_CHARS,
    TASK_ID_MAX_CHARS,
    Capture,
    Indexing,
    Kind,
    Note,
    Notebook,
    NoteFields,
    Revision,
    RevisionReason,
    Status,
)
from notebooks.schemas import (
    BatchOut,
    ExpireOut,
    ItemResult,
    ItemStatus,
    NotebookOut,
    NoteOut,
    RememberOut,
    SubtreeCounts,
)
from notebooks.selectors import (
    access_destination,
    access_note,
    access_notebook,
    ancestor_ids,
    count_subtree,
    lock_subtree,
    parse_uuid,
)


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()
"""Marks an argument the caller omitted (as opposed to an explicit null)."""

BATCH_MAX = 100
HANDOFF_UNIQUE = "note_one_live_handoff_per_task"


# -- validation (shared by every caller: REST, MCP, web, tasks) ---------------------------


def clean_content(value: Any) -> str:
    if not isinstance(value, str):
        raise Invalid("content must be text.", code="invalid_content")
    content = storable_text(value, what="content", code="invalid_content").strip()
    if not content:
        raise Invalid("content is empty.", code="content_empty")
    if len(content) > CONTENT_MAX_CHARS:
        raise Invalid(
            f"content is {len(content)} characters; the limit is {CONTENT_MAX_CHARS}.",
            code="content_too_long",
        )
    return content


def clean_kind(value: Any) -> str:
    if value not in Kind.values:
        raise Invalid(
            f"kind must be one of {', '.join(Kind.values)}.", code="invalid_kind"
        )
    return str(value)


def clean_task_id(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise Invalid("taskId must be non-empty text.", code="invalid_task_id")
    storable_text(value, what="taskId", code="invalid_task_id")
    if len(value.strip()) > TASK_ID_MAX_CHARS:
        raise Invalid(f"taskId is longer than {TASK_ID_MAX_CHARS} characters.",
                      code="invalid_task_id")
    return value.strip()


def clean_source_agent(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value.strip()) > SOURCE_AGENT_MAX_CHARS:
        raise Invalid(f"sourceAgent must be text of at most {SOURCE_AGENT_MAX_CHARS} "
                      "characters.", code="invalid_source_agent")
    storable_text(value, what="sourceAgent", code="invalid_source_agent")
    return value.strip() or None


def clean_capture(value: Any) -> str:
    if value not in Capture.values:
        raise Invalid("capture must be explicit or automatic.", code="invalid_capture")
    return str(value)


def clean_importance(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise Invalid("importance must be a number from 0 to 1.", code="invalid_importance")
    if not 0 <= value <= 1:
        raise Invalid("importance must be a number from 0 to 1.", code="invalid_importance")
    return float(value)


def clean_bool(value: Any, *, what: str) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"{what} must be true or false.", code=f"invalid_{what}")
    return value


def clean_retention(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(
            f"retentionDays must be null or a whole number of days (1–{RETENTION_MAX_DAYS}).",
            code="invalid_retention",
        )
    if not 1 <= value <= RETENTION_MAX_DAYS:
        raise Invalid(f"retentionDays must be between 1 and {RETENTION_MAX_DAYS}.",
                      code="invalid_retention")
    return value


def clean_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid("A notebook needs a name.", code="invalid_name")
    name = storable_text(value, what="name", code="invalid_name").strip()
    if len(name) > NAME_MAX_CHARS:
        raise Invalid(f"Notebook names are at most {NAME_MAX_CHARS} characters.",
                      code="invalid_name")
    return name


def clean_version(value: Any, *, what: str = "expectedVersion") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Invalid(f"{what} must be a positive whole number.", code="invalid_version")
    return value


def clean_batch(values: Iterable[Any], *, what: str = "ids") -> list[uuid.UUID]:
    ids = [parse_uuid(v, what="note id") for v in values]
    if not ids:
        raise Invalid(f"{what} is empty.", code="empty_batch")
    if len(ids) > BATCH_MAX:
        raise Invalid(f"At most {BATCH_MAX} {what} per request.", code="batch_too_large")
    if len(set(ids)) != len(ids):
        raise Invalid(f"{what} contains duplicates.", code="duplicate_ids")
    return ids


def clean_items(items: Iterable[Any]) -> list[tuple[uuid.UUID, int | None]]:
    """Batch items: a note id, or `{"id": ..., "expectedVersion": n}`."""
    parsed: list[tuple[uuid.UUID, int | None]] = []
    for item in items:
        if isinstance(item, dict):
            unknown = set(item) - {"id", "expectedVersion", "expected_version"}
            if unknown or "id" not in item:
                raise Invalid("Each item is {id, expectedVersion?}.", code="invalid_item")
            expected = item.get("expectedVersion", item.get("expected_version"))
            parsed.append((parse_uuid(item["id"], what="note id"),
                           None if expected is None else clean_version(expected)))
        else:
            parsed.append((parse_uuid(item, what="note id"), None))
    clean_batch([note_id for note_id, _ in parsed], what="items")
    return parsed


def _expiry(days: int | None, now: datetime) -> datetime | None:
    return None if days is None else now + timedelta(days=days)


# -- helpers used inside a tenant transaction ------------------------------------------


def _write_revision(
    note: Note, *, reason: str, actor: Actor, operation_id: uuid.UUID | None,
    restored_from: int | None = None,
) -> Revision:
    snapshot = {name: getattr(note, name) for name in NoteFields.snapshot_field_names()}
    return Revision.objects.create(
        account_id=note.account_id, note=note, version=note.version, reason=reason,
        connection_id=actor.connection_id, operation_id=operation_id,
        restored_from=restored_from, created_at=note.updated_at, **snapshot,
    )


def _save_new_version(
    note: Note, *, reason: str, actor: Actor, operation_id: uuid.UUID | None,
    now: datetime, restored_from: int | None = None,
) -> None:
    """Bump the version, save, and snapshot the result. Handoff clashes → Conflict."""
    note.version += 1
    note.updated_at = now
    try:
        with transaction.atomic():
            note.save()
    except IntegrityError as exc:
        raise _integrity_conflict(exc) from None
    _write_revision(note, reason=reason, actor=actor, operation_id=operation_id,
                    restored_from=restored_from)


def _integrity_conflict(exc: IntegrityError) -> Exception:
    """Map the one expected constraint clash to a Conflict; anything else is a bug."""
    if HANDOFF_UNIQUE in str(exc):
        return Conflict(
            "A live handoff with this taskId already exists in that notebook.",
            code="handoff_exists",
        )
    return exc


def _replay(
    actor: Actor,
    existing: Any,
    decode: Callable[[Any], Any],
    *,
    gone_if_deleted: bool,
    note_ids: Callable[[Any], Iterable[uuid.UUID]] = lambda result: (),
) -> Any:
    """The stored result of an operation already done — after checking, as for any
    request, that the caller may still see what it names (grants can narrow)."""
    if gone_if_deleted and existing.target_note_id is not None:
        status = (
            Note.objects.filter(id=existing.target_note_id).values_list("status", flat=True).first()
        )
        if status is None or status == Status.DELETED:
            raise Gone("The note this operation saved has since been deleted.", code="gone")
    if existing.result is None:
        # Claimed by a transaction that committed without recording: cannot happen while
        # services record before commit; refuse rather than guess.
        raise Conflict("This operationId is still being processed.", code="operation_in_progress")
    result = decode(existing.result)
    for note_id in note_ids(result):
        access_note(actor, note_id)
    return result


def _require_capture_allowed(actor: Actor, capture: str) -> None:
    if capture != Capture.AUTOMATIC:
        return
    paused = Account.objects.filter(id=actor.account_id).values_list(
        "capture_paused_at", flat=True
    ).first()
    if paused is not None:
        raise Conflict(
            "Automatic capture is paused for this account; explicit saves still work.",
            code="capture_paused",
        )


def _require_open_notebook(notebook: Notebook | None) -> None:
    if notebook is not None and notebook.archived_at is not None:
        raise Conflict("That notebook is archived; restore it first.", code="notebook_archived")


def _effectively_active(note: Note, now: datetime) -> bool:
    return note.status == Status.ACTIVE and (note.expires_at is None or note.expires_at > now)


def _require_active(note: Note, now: datetime) -> None:
    if not _effectively_active(note, now):
        status = Status.EXPIRED if note.status == Status.ACTIVE else note.status
        raise Conflict(f"The note is {status}; restore it first.", code="note_not_active")


def _tree_lock(actor: Actor) -> None:
    """Serialise notebook-tree moves within one account (cycle checks stay true)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                       [f"grove.tree:{actor.account_id}"])


# -- notes -----------------------------------------------------------------------------


def note_remember(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    content: str,
    kind: str,
    notebook_id: uuid.UUID | str | None = None,
    task_id: str | None = None,
    source_agent: str | None | _Unset = UNSET,
    capture: str | _Unset = UNSET,
    pinned: bool | _Unset = UNSET,
    importance: float | _Unset = UNSET,
    retention_days: int | None | _Unset = UNSET,
) -> RememberOut:
    """Save a note (`remember`). A handoff with the `task_id` of a live handoff in the same
    notebook updates that note instead (new revision; retention kept unless given).

    Omitted fields take their defaults on a new note (capture explicit, not pinned,
    importance 0.5, no source agent) and stay as they are on a handoff update.
    Retention defaults: handoffs 30 days, other kinds permanent. Writes the note and its
    revision in one transaction. Raises Invalid, NotFound (notebook), Conflict
    (`capture_paused`, `notebook_archived`, `operation_conflict`), Gone (replay of a
    save whose note was deleted since).
    """
    op_id = operations.coerce_operation_id(operation_id)
    content = clean_content(content)
    kind = clean_kind(kind)
    task_id = clean_task_id(task_id)
    if kind == Kind.HANDOFF and task_id is None:
        raise Invalid("A handoff needs a taskId.", code="task_id_required")
    given: dict[str, Any] = {}
    if not isinstance(source_agent, _Unset):
        given["source_agent"] = clean_source_agent(source_agent)
    if not isinstance(capture, _Unset):
        given["capture"] = clean_capture(capture)
    if not isinstance(pinned, _Unset):
        given["pinned"] = clean_bool(pinned, what="pinned")
    if not isinstance(importance, _Unset):
        given["importance"] = clean_importance(importance)
    if not isinstance(retention_days, _Unset):
        given["retention_days"] = clean_retention(retention_days)
    notebook_uuid = None if notebook_id is None else parse_uuid(notebook_id, what="notebook id")

    arguments = {"content": content, "kind": kind, "notebookId": notebook_uuid,
                 "taskId": task_id, **given}
    with tenant(actor):
        actor.require(WRITE)
        existing = operations.claim(actor=actor, operation_id=op_id, action="note_remember",
                                    arguments=arguments)
        if existing:
            return _replay(actor, existing, RememberOut.model_validate, gone_if_deleted=True,
                           note_ids=lambda result: [result.note.id])
        _require_capture_allowed(actor, given.get("capture", Capture.EXPLICIT))
        notebook = access_destination(actor, notebook_uuid)
        _require_open_notebook(notebook)
        now = timezone.now()

        note: Note | None = None
        if kind == Kind.HANDOFF:
            note = _live_handoff(actor, notebook_uuid, task_id)
        created = note is None
        if note is None:
            default_days = HANDOFF_DEFAULT_RETENTION_DAYS if kind == Kind.HANDOFF else None
            days = given.get("retention_days", default_days)
            note = Note(
                account_id=actor.account_id, notebook_id=notebook_uuid, content=content,
                kind=kind, task_id=task_id, source_agent=given.get("source_agent"),
                capture=given.get("capture", Capture.EXPLICIT),
                pinned=given.get("pinned", False), importance=given.get("importance", 0.5),
                retention_days=days, expires_at=_expiry(days, now),
                created_by_id=actor.connection_id, created_at=now, updated_at=now, version=1,
            )
            try:
                with transaction.atomic():
                    note.save(force_insert=True)
            except IntegrityError as exc:
                if HANDOFF_UNIQUE not in str(exc):
                    raise
                # A concurrent save created the handoff first: update that one instead.
                note = _live_handoff(actor, notebook_uuid, task_id)
                assert note is not None
                created = False
            else:
                _write_revision(note, reason=RevisionReason.CREATE, actor=actor,
                                operation_id=op_id)
                mark_for_indexing(note)
        if not created:
            assert note is not None
            reactivate = not _effectively_active(note, now)
            content_changed = note.content != content
            note.content = content
            for field in ("source_agent", "capture", "pinned", "importance"):
                if field in given:
                    setattr(note, field, given[field])
            if "retention_days" in given:
                days = given["retention_days"]
                note.retention_days, note.expires_at = days, _expiry(days, now)
            elif reactivate:
                note.expires_at = _expiry(note.retention_days, now)
            if reactivate:
                note.status, note.archived_at, note.expired_at = Status.ACTIVE, None, None
            _save_new_version(note, reason=RevisionReason.UPDATE, actor=actor,
                              operation_id=op_id, now=now)
            if content_changed:
                mark_for_indexing(note)

        result = RememberOut(note=NoteOut.of(note), created=created)
        operations.record(actor=actor, operation_id=op_id, result=result.to_json(),
                          target_note_id=note.id)
        return result


def _live_handoff(actor: Actor, notebook_id: uuid.UUID | None, task_id: str | None) -> Note | None:
    return (
        Note.objects.select_for_update()
        .filter(Q(notebook__isnull=True) if notebook_id is None else Q(notebook_id=notebook_id))
        .filter(account_id=actor.account_id, task_id=task_id, kind=Kind.HANDOFF)
        .exclude(status=Status.DELETED)
        .first()
    )


def note_update(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    note_id: uuid.UUID | str,
    expected_version: int | None = None,
    content: str | _Unset = UNSET,
    kind: str | _Unset = UNSET,
    task_id: str | None | _Unset = UNSET,
    source_agent: str | None | _Unset = UNSET,
    pinned: bool | _Unset = UNSET,
    importance: float | _Unset = UNSET,
    retention_days: int | None | _Unset = UNSET,
) -> NoteOut:
    """Correct a note (`update_memory`): omitted fields stay; a given retention restarts
    the clock. With `expected_version`, a note changed meanwhile → `version_conflict`.
    Only active notes can be corrected (`note_not_active`)."""
    op_id = operations.coerce_operation_id(operation_id)
    note_uuid = parse_uuid(note_id, what="note id")
    changes: dict[str, Any] = {}
    if not isinstance(content, _Unset):
        changes["content"] = clean_content(content)
    if not isinstance(kind, _Unset):
        changes["kind"] = clean_kind(kind)
    if not isinstance(task_id, _Unset):
        changes["task_id"] = clean_task_id(task_id)
    if not isinstance(source_agent, _Unset):
        changes["source_agent"] = clean_source_agent(source_agent)
    if not isinstance(pinned, _Unset):
        changes["pinned"] = clean_bool(pinned, what="pinned")
    if not isinstance(importance, _Unset):
        changes["importance"] = clean_importance(importance)
    if not isinstance(retention_days, _Unset):
        changes["retention_days"] = clean_retention(retention_days)
    if not changes:
        raise Invalid("Nothing to change: give at least one field.", code="no_changes")
    if expected_version is not None:
        expected_version = clean_version(expected_version)

    arguments = {"noteId": note_uuid, "expectedVersion": expected_version, **changes}
    with tenant(actor):
        actor.require(WRITE)
        existing = operations.claim(actor=actor, operation_id=op_id, action="note_update",
                                    arguments=arguments)
        if existing:
            return _replay(actor, existing, NoteOut.model_validate, gone_if_deleted=True,
                           note_ids=lambda result: [result.id])
        note = access_note(actor, note_uuid, need=WRITE, for_update=True)
        _check_version(note, expected_version)
        now = timezone.now()
        _require_active(note, now)

        new_kind = changes.get("kind", note.kind)
        new_task = changes.get("task_id", note.task_id)
        if new_kind == Kind.HANDOFF and not new_task:
            raise Invalid("A handoff needs a taskId.", code="task_id_required")
        before = _snapshot(note)
        for field, value in changes.items():
            if field == "retention_days":
                note.retention_days, note.expires_at = value, _expiry(value, now)
            else:
                setattr(note, field, value)
        if _snapshot(note) != before or "retention_days" in changes:
            _save_new_version(note, reason=RevisionReason.UPDATE, actor=actor,
                              operation_id=op_id, now=now)
            if note.content != before["content"]:
                mark_for_indexing(note)
        result = NoteOut.of(note)
        operations.record(actor=actor, operation_id=op_id, result=result.to_json(),
                          target_note_id=note.id)
        return result


def _snapshot(note: Note) -> dict[str, Any]:
    return {name: getattr(note, name) for name in NoteFields.snapshot_field_names()}


def _check_version(note: Note, expected_version: int | None) -> None:
    if expected_version is not None and note.version != expected_version:
        raise Conflict(
            f"The note is at version {note.version}, not {expected_version}; "
            "read it again and retry.",
            code="version_conflict", current_version=note.version,
        )


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
    arguments = {"items": [[str(i), v] for i, v in parsed]}
    with tenant(actor):
        actor.require(WRITE)
        existing = operations.claim(actor=actor, operation_id=op_id, action=action,
                                    arguments=arguments)
        if existing:
            return _replay(actor, existing, BatchOut.model_validate, gone_if_deleted=False)
        now = timezone.now()
        results: list[ItemResult] = []
        # Lock in id order so concurrent batches cannot deadlock.
        for note_uuid, expected in sorted(parsed, key=lambda item: str(item[0])):
            try:
                note = access_note(actor, note_uuid, need=WRITE, for_update=True)
            except NotFound:
                results.append(ItemResult(id=note_uuid, status="not_found"))
                continue
            if expected is not None and note.version != expected:
                results.append(ItemResult(id=note_uuid, status="version_conflict",
                                          version=note.version))
                continue
            status = apply(note, now, op_id)
            results.append(ItemResult(id=note_uuid, status=status, version=note.version))
        order = {note_uuid: index for index, (note_uuid, _) in enumerate(parsed)}
        results.sort(key=lambda item: order[item.id])
        result = BatchOut(items=results)
        operations.record(actor=actor, operation_id=op_id, result=result.to_json(),
                          target_note_id=None)
        return result


def note_forget(*, actor: Actor, operation_id: uuid.UUID | str, items: Iterable[Any]) -> BatchOut:
    """Soft-delete notes (`forget`). Per item: deleted | not_found | version_conflict.
    Deleted notes stay in the database, hidden, and cannot be restored by tools."""

    def apply(note: Note, now: datetime, op_id: uuid.UUID) -> ItemStatus:
        note.status, note.deleted_at = Status.DELETED, now
        _save_new_version(note, reason=RevisionReason.DELETE, actor=actor,
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
        _save_new_version(note, reason=RevisionReason.ARCHIVE, actor=actor,
                          operation_id=op_id, now=now)
        return "archived"

    return _batch(actor=actor, operation_id=operation_id, items=items, action="note_archive",
                  apply=apply)


def note_restore(*, actor: Actor, operation_id: uuid.UUID | str, items: Iterable[Any]) -> BatchOut:
    """Bring archived or expired notes back to active. Restore renews retention (the
    clock restarts). Expired notes are restorable for 60 days after expiry. Per item:
    restored | not_found | version_conflict | not_restorable."""

    def apply(note: Note, now: datetime, op_id: uuid.UUID) -> ItemStatus:
        if _effectively_active(note, now):
            return "restored"
        # Expired since: the job's record, or — if the job has not run yet — the expiry.
        expired_since = note.expired_at if note.status == Status.EXPIRED else (
            note.expires_at if note.status == Status.ACTIVE else None)
        if expired_since is not None and \
                expired_since <= now - timedelta(days=EXPIRED_RESTORE_WINDOW_DAYS):
            return "not_restorable"
        note.status, note.archived_at, note.expired_at = Status.ACTIVE, None, None
        note.expires_at = _expiry(note.retention_days, now)
        _save_new_version(note, reason=RevisionReason.RESTORE, actor=actor,
                          operation_id=op_id, now=now)
        return "restored"

    return _batch(actor=actor, operation_id=operation_id, items=items, action="note_restore",
                  apply=apply)


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
    arguments = {"noteId": note_uuid, "revision": revision, "durable": durable,
                 "expectedVersion": expected_version}
    with tenant(actor):
        actor.require(WRITE)
        existing = operations.claim(actor=actor, operation_id=op_id,
                                    action="note_restore_revision", arguments=arguments)
        if existing:
            return _replay(actor, existing, NoteOut.model_validate, gone_if_deleted=True,
                           note_ids=lambda result: [result.id])
        note = access_note(actor, note_uuid, need=WRITE, for_update=True)
        _check_version(note, expected_version)
        now = timezone.now()
        _require_active(note, now)
        old = Revision.objects.filter(note=note, version=revision).first()
        if old is None:
            raise NotFound(f"The note has no revision {revision}.", code="revision_not_found")
        previous_content = note.content
        for field in ("content", "kind", "task_id", "source_agent", "pinned", "importance"):
            setattr(note, field, getattr(old, field))
        if durable and note.kind == Kind.HANDOFF:
            note.kind, note.retention_days, note.expires_at = Kind.FACT, None, None
        _save_new_version(note, reason=RevisionReason.RESTORE_REVISION, actor=actor,
                          operation_id=op_id, now=now, restored_from=revision)
        if note.content != previous_content:
            mark_for_indexing(note)
        result = NoteOut.of(note)
        operations.record(actor=actor, operation_id=op_id, result=result.to_json(),
                          target_note_id=note.id)
        return result


def note_move(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    note_ids: Iterable[Any],
    notebook_id: uuid.UUID | str | None,
) -> list[NoteOut]:
    """Move notes to a notebook (None = Personal): all or nothing. Needs write access to
    every note's current place and to the destination."""
    op_id = operations.coerce_operation_id(operation_id)
    ids = clean_batch(note_ids)
    destination_uuid = None if notebook_id is None else parse_uuid(notebook_id,
                                                                    what="notebook id")
    arguments = {"noteIds": sorted(str(i) for i in ids), "notebookId": destination_uuid}
    with tenant(actor):
        actor.require(WRITE)
        existing = operations.claim(actor=actor, operation_id=op_id, action="note_move",
                                    arguments=arguments)
        if existing:
            return _replay(actor, existing,
                           lambda data: [NoteOut.model_validate(n) for n in data],
                           gone_if_deleted=False,
                           note_ids=lambda result: [n.id for n in result])
        destination = access_destination(actor, destination_uuid)
        _require_open_notebook(destination)
        now = timezone.now()
        notes = [access_note(actor, note_uuid, need=WRITE, for_update=True)
                 for note_uuid in sorted(ids, key=str)]
        for note in notes:
            if note.notebook_id != destination_uuid:
                note.notebook_id = destination_uuid
                _save_new_version(note, reason=RevisionReason.MOVE, actor=actor,
                                  operation_id=op_id, now=now)
        by_id = {note.id: note for note in notes}
        result = [NoteOut.of(by_id[note_uuid]) for note_uuid in ids]
        operations.record(actor=actor, operation_id=op_id,
                          result=[n.to_json() for n in result], target_note_id=None)
        return result


def note_expire_due(*, actor: Actor, now: datetime | None = None) -> ExpireOut:
    """Retention for one account (the periodic `expire` job calls this per account):
    active notes past `expires_at` become expired; notes expired for more than 60 days
    are soft-deleted. Each change writes a revision."""
    now = now or timezone.now()
    expired = deleted = 0
    with tenant(actor):
        actor.require(WRITE)
        due = (Note.objects.select_for_update(skip_locked=True)
               .filter(account_id=actor.account_id, status=Status.ACTIVE, expires_at__lte=now))
        for note in due:
            note.status, note.expired_at = Status.EXPIRED, note.expires_at
            _save_new_version(note, reason=RevisionReason.EXPIRE, actor=actor,
                              operation_id=None, now=now)
            expired += 1
        cutoff = now - timedelta(days=EXPIRED_RESTORE_WINDOW_DAYS)
        stale = (Note.objects.select_for_update(skip_locked=True)
                 .filter(account_id=actor.account_id, status=Status.EXPIRED,
                         expired_at__lte=cutoff))
        for note in stale:
            note.status, note.deleted_at = Status.DELETED, now
            _save_new_version(note, reason=RevisionReason.DELETE, actor=actor,
                              operation_id=None, now=now)
            deleted += 1
    return ExpireOut(expired=expired, deleted=deleted)


# -- notebooks -------------------------------------------------------------------------


def notebook_create(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    name: str,
    parent_id: uuid.UUID | str | None = None,
) -> NotebookOut:
    """Create a notebook (at the root, or inside `parent_id`). A connection limited to a
    set of notebooks gets the new one added to its grant, so it can use what it made."""
    op_id = operations.coerce_operation_id(operation_id)
    name = clean_name(name)
    parent_uuid = None if parent_id is None else parse_uuid(parent_id, what="parent id")
    arguments = {"name": name, "parentId": parent_uuid}
    with tenant(actor):
        actor.require(WRITE)
        existing = operations.claim(actor=actor, operation_id=op_id, action="notebook_create",
                                    arguments=arguments)
        if existing:
            return _replay(actor, existing, NotebookOut.model_validate, gone_if_deleted=False)
        if parent_uuid is not None:
            _require_open_notebook(access_destination(actor, parent_uuid))
        now = timezone.now()
        notebook = Notebook.objects.create(
            account_id=actor.account_id, name=name, parent_id=parent_uuid, created_at=now,
            updated_at=now,
        )
        if actor.connection_id is not None and not actor.grant.all_notebooks:
            conn = Connection.objects.select_for_update().get(id=actor.connection_id)
            conn.grant_notebooks = [*conn.grant_notebooks, notebook.id]
            conn.save(update_fields=["grant_notebooks"])
        result = NotebookOut.of(notebook)
        operations.record(actor=actor, operation_id=op_id, result=result.to_json(),
                          target_note_id=None)
        return result


def notebook_update(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    notebook_id: uuid.UUID | str,
    name: str | _Unset = UNSET,
    parent_id: uuid.UUID | str | None | _Unset = UNSET,
) -> NotebookOut:
    """Rename and/or move a notebook. `parent_id=None` moves it to the root; a move under
    itself or a descendant is refused (`notebook_cycle`)."""
    op_id = operations.coerce_operation_id(operation_id)
    notebook_uuid = parse_uuid(notebook_id, what="notebook id")
    changes: dict[str, Any] = {}
    if not isinstance(name, _Unset):
        changes["name"] = clean_name(name)
    if not isinstance(parent_id, _Unset):
        changes["parent_id"] = None if parent_id is None else parse_uuid(parent_id,
                                                                         what="parent id")
    if not changes:
        raise Invalid("Nothing to change: give a name or a parentId.", code="no_changes")
    arguments = {"notebookId": notebook_uuid, **changes}
    with tenant(actor):
        actor.require(WRITE)
        existing = operations.claim(actor=actor, operation_id=op_id, action="notebook_update",
                                    arguments=arguments)
        if existing:
            return _replay(actor, existing, NotebookOut.model_validate, gone_if_deleted=False)
        if "parent_id" in changes:
            _tree_lock(actor)
        notebook = access_notebook(actor, notebook_uuid, need=WRITE, for_update=True)
        before = (notebook.name, notebook.parent_id)
        if "parent_id" in changes and changes["parent_id"] != notebook.parent_id:
            new_parent = changes["parent_id"]
            if notebook.parent_id is not None and not actor.grant.allows(notebook.parent_id):
                # Moving out changes the parent's tree (and what its shares show).
                raise Forbidden("Moving this notebook changes the notebook it is in, which "
                                "this connection is not granted.", code="parent_not_granted")
            if new_parent is not None:
                parent = access_destination(actor, new_parent)
                assert parent is not None
                _require_open_notebook(parent)
                if notebook.id in ancestor_ids(parent.id):
                    raise Conflict("A notebook cannot move inside itself or its descendants.",
                                   code="notebook_cycle")
            notebook.parent_id = new_parent
        if "name" in changes:
            notebook.name = changes["name"]
        if (notebook.name, notebook.parent_id) != before:  # a repeat changes nothing
            notebook.updated_at = timezone.now()
            notebook.save()
        result = NotebookOut.of(notebook)
        operations.record(actor=actor, operation_id=op_id, result=result.to_json(),
                          target_note_id=None)
        return result


def _subtree_action(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    notebook_id: uuid.UUID | str,
    action: str,
    apply: Callable[[Notebook, list[uuid.UUID], datetime, uuid.UUID], None],
) -> SubtreeCounts:
    actor.require_session()
    op_id = operations.coerce_operation_id(operation_id)
    notebook_uuid = parse_uuid(notebook_id, what="notebook id")
    with tenant(actor):
        existing = operations.claim(actor=actor, operation_id=op_id, action=action,
                                    arguments={"notebookId": notebook_uuid})
        if existing:
            return _replay(actor, existing, SubtreeCounts.model_validate,
                           gone_if_deleted=False)
        _tree_lock(actor)
        notebook = access_notebook(actor, notebook_uuid, need=WRITE, for_update=True)
        ids = lock_subtree(notebook.id)
        counts = count_subtree(ids)
        apply(notebook, ids, timezone.now(), op_id)
        operations.record(actor=actor, operation_id=op_id, result=counts.to_json(),
                          target_note_id=None)
        return counts


def notebook_archive(
    *, actor: Actor, operation_id: uuid.UUID | str, notebook_id: uuid.UUID | str
) -> SubtreeCounts:
    """Archive a notebook and its whole subtree (website owner only). Their notes keep
    their own status but leave lists and recall until the notebook is restored.
    Returns what was acted on."""

    def apply(notebook: Notebook, ids: list[uuid.UUID], now: datetime, op: uuid.UUID) -> None:
        Notebook.objects.filter(id__in=ids, archived_at__isnull=True).update(
            archived_at=now, updated_at=now
        )

    return _subtree_action(actor=actor, operation_id=operation_id, notebook_id=notebook_id,
                           action="notebook_archive", apply=apply)


def notebook_restore(
    *, actor: Actor, operation_id: uuid.UUID | str, notebook_id: uuid.UUID | str
) -> SubtreeCounts:
    """Restore an archived notebook and its whole subtree (website owner only). Refused
    while its parent is archived (`parent_archived`)."""

    def apply(notebook: Notebook, ids: list[uuid.UUID], now: datetime, op: uuid.UUID) -> None:
        if notebook.parent_id is not None and Notebook.objects.filter(
            id=notebook.parent_id, archived_at__isnull=False
        ).exists():
            raise Conflict("Its parent notebook is archived; restore that first.",
                           code="parent_archived")
        Notebook.objects.filter(id__in=ids).update(archived_at=None, updated_at=now)

    return _subtree_action(actor=actor, operation_id=operation_id, notebook_id=notebook_id,
                           action="notebook_restore", apply=apply)


def notebook_delete(
    *, actor: Actor, operation_id: uuid.UUID | str, notebook_id: uuid.UUID | str
) -> SubtreeCounts:
    """Delete a notebook, its subtree and every note in it (retained soft deletion;
    website owner only; not reversible through any interface)."""

    def apply(notebook: Notebook, ids: list[uuid.UUID], now: datetime, op: uuid.UUID) -> None:
        notes = (Note.objects.select_for_update().filter(notebook_id__in=ids)
                 .exclude(status=Status.DELETED).order_by("id"))
        for note in notes:
            note.status, note.deleted_at = Status.DELETED, now
            _save_new_version(note, reason=RevisionReason.DELETE, actor=actor,
                              operation_id=op, now=now)
        Notebook.objects.filter(id__in=ids).update(deleted_at=now, updated_at=now)

    return _subtree_action(actor=actor, operation_id=operation_id, notebook_id=notebook_id,
                           action="notebook_delete", apply=apply)


def note_retry_indexing(*, actor: Actor, note_id: uuid.UUID | str) -> NoteOut:
    """Queue semantic indexing again for a note whose indexing failed (the retry action
    of the note page). Idempotent: a note that is not `failed` is returned unchanged."""
    with tenant(actor):
        note = access_note(actor, note_id, need=WRITE, for_update=True)
        if note.indexing == Indexing.FAILED:
            mark_for_indexing(note)
        return NoteOut.of(note)


def note_index_missing(*, actor: Actor) -> int:
    """Queue indexing for notes that are `pending` without a live job (notes written
    before embeddings were enabled, or by an older version). Returns how many."""
    from grove.models import Job

    with tenant(actor):
        live_targets = Job.objects.filter(
            kind="embed", status__in=[Job.Status.QUEUED, Job.Status.RUNNING]
        ).values("target_id")
        waiting = (Note.objects.select_for_update(skip_locked=True)
                   .filter(account_id=actor.account_id, indexing=Indexing.PENDING)
                   .exclude(status=Status.DELETED).exclude(id__in=live_targets))
        count = 0
        for note in waiting:
            mark_for_indexing(note)
            count += 1
        return count
