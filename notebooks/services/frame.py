"""What every write shares: the idempotent frame (claim or replay, then record) and the
checks several use cases make (capture allowed, notebook open, note active, version)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, connection
from django.utils import timezone

from grove.kernel import fences, operations
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import Conflict, Gone
from grove.kernel.tenancy import tenant
from grove.models import Account
from notebooks.models import HANDOFF_DEFAULT_RETENTION_DAYS, Capture, Kind, Note, Notebook, Status
from notebooks.rules import note_is_live
from notebooks.selectors.access import access_note

HANDOFF_UNIQUE = "note_one_live_handoff_per_task"


def idempotent[R](
    *,
    actor: Actor,
    operation_id: uuid.UUID,
    action: str,
    arguments: dict[str, Any],
    decode: Callable[[Any], R],
    write: Callable[[], R],
    encode: Callable[[R], Any] = lambda result: result.to_json(),  # type: ignore[attr-defined]
    target: Callable[[R], uuid.UUID | None] = lambda result: None,
    gone_if_deleted: bool = False,
    note_ids: Callable[[R], Iterable[uuid.UUID]] = lambda result: (),
    need: str | None = WRITE,
) -> R:
    """The frame of every idempotent write (SPEC §3), in one tenant transaction: require
    `need`, claim the operation id — a repeat replays the stored result (`replay`) — else
    `write()` and record its result (`encode`d, naming the `target` note).

    The caller has coerced `operation_id` and cleaned `arguments` first: input errors come
    before any database work."""
    with tenant(actor):
        if need is not None:
            actor.require(need)
        existing = operations.claim(actor=actor, operation_id=operation_id, action=action,
                                    arguments=arguments)
        if existing:
            return replay(actor, existing, decode, gone_if_deleted=gone_if_deleted,
                          note_ids=note_ids)
        result = write()
        operations.record(actor=actor, operation_id=operation_id, result=encode(result),
                          target_note_id=target(result))
        return result


def expiry(days: int | None, now: datetime) -> datetime | None:
    return None if days is None else now + timedelta(days=days)


def integrity_conflict(exc: IntegrityError) -> Exception:
    """Map the one expected constraint clash to a Conflict; anything else is a bug."""
    if HANDOFF_UNIQUE in str(exc):
        return Conflict(
            "A live handoff with this taskId already exists in that notebook.",
            code="handoff_exists",
        )
    return exc


def replay(
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
    if existing.result == operations.PURGED:
        raise Gone("What this operation saved was deleted and has since been purged.",
                   code="gone")
    if existing.result is None:
        # Claimed by a transaction that committed without recording: cannot happen while
        # services record before commit; refuse rather than guess.
        raise Conflict("This operationId is still being processed.", code="operation_in_progress")
    result = decode(existing.result)
    for note_id in note_ids(result):
        access_note(actor, note_id)
    return result


def require_capture_allowed(actor: Actor, capture: str) -> None:
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


def require_open_notebook(notebook: Notebook | None) -> None:
    if notebook is not None and notebook.archived_at is not None:
        raise Conflict("That notebook is archived; restore it first.", code="notebook_archived")


def require_active(note: Note, now: datetime) -> None:
    if not note_is_live(note, now):
        status = Status.EXPIRED if note.status == Status.ACTIVE else note.status
        raise Conflict(f"The note is {status}; restore it first.", code="note_not_active")


def transaction_lock(key: str) -> None:
    """Hold a lock named `key` until the caller's transaction ends: writers of the same
    key run one after another (a PostgreSQL advisory lock on the key's hash)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])


def tree_lock(actor: Actor) -> None:
    """Serialise notebook-tree moves within one account (cycle checks stay true)."""
    transaction_lock(f"grove.tree:{actor.account_id}")


def note_to_change(actor: Actor, note_id: uuid.UUID,
                   expected_version: int | None) -> tuple[Note, datetime]:
    """The note a correction changes, locked: writable by the caller, at the version it
    was read at (when given) and active. With the time of the change."""
    note = access_note(actor, note_id, need=WRITE, for_update=True)
    expect_version(note, expected_version)
    now = timezone.now()
    require_active(note, now)
    return note, now


def expect_version(note: Note, expected_version: int | None) -> None:
    """The note's `expectedVersion` fence (`grove.kernel.fences`)."""
    fences.expect_version(what="note", actual=note.version, expected=expected_version)


def apply_changes(note: Note, changes: dict[str, Any], now: datetime) -> None:
    """Set a correction's cleaned fields on the note (a given retention restarts the
    clock). `note_update` and the owner's acceptance of a held change apply them alike
    (`notebooks.services.truth.pending_accept`)."""
    for field, value in changes.items():
        if field == "retention_days":
            note.retention_days, note.expires_at = value, expiry(value, now)
        else:
            setattr(note, field, value)


def new_note(actor: Actor, notebook_id: uuid.UUID | None, *, content: str, kind: str,
             task_id: str | None, fields: dict[str, Any], now: datetime) -> Note:
    """A new note (not yet saved) by `actor`, with the defaults of the fields not given:
    capture explicit, not pinned, no tags, importance 0.5, no source agent; retention 30 days for a
    handoff, else permanent."""
    default_days = HANDOFF_DEFAULT_RETENTION_DAYS if kind == Kind.HANDOFF else None
    days = fields.get("retention_days", default_days)
    return Note(
        account_id=actor.account_id, notebook_id=notebook_id, content=content, kind=kind,
        task_id=task_id, source_agent=fields.get("source_agent"),
        capture=fields.get("capture", Capture.EXPLICIT), pinned=fields.get("pinned", False),
        tags=fields.get("tags", []), importance=fields.get("importance", 0.5), retention_days=days,
        expires_at=expiry(days, now), created_by_id=actor.connection_id, created_at=now,
        updated_at=now, version=1,
    )
