"""Remember: save a note — or update the live handoff of its task — one at a time or a
batch of up to 50 in one transaction (`remember` with `items`, `POST /v1/notes/batch`).

Both go through the same two steps: `_prepared` cleans and screens an item and does the
work that must come before the transaction (the duplicate probe's embedding, the check
of agents' writes); `_saved` writes it inside the transaction. A batch reports each
item as a single save would — its result, or its refusal by the same code — and is
idempotent as a whole by its operation id."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from grove.identity.hygiene import Origin, screen
from grove.kernel import operations
from grove.kernel.actor import READ, WRITE, Actor
from grove.kernel.errors import GroveError, Invalid
from notebooks.models import Capture, Kind, Note, RevisionReason, Status
from notebooks.rules import (
    BATCH_REMEMBER_MAX,
    HOME,
    UNSET,
    _Unset,
    clean_bool,
    clean_capture,
    clean_content,
    clean_importance,
    clean_kind,
    clean_retention,
    clean_source_agent,
    clean_tags,
    clean_task_id,
    clean_version,
    given,
    note_is_live,
    parse_uuid,
)
from notebooks.schemas.notes import BatchSaved, BatchSavedOut, NoteOut, RememberOut
from notebooks.selectors import duplicates
from notebooks.selectors.access import access_destination, access_note, notes_visible_to
from notebooks.services import write_check
from notebooks.services.frame import (
    HANDOFF_UNIQUE,
    expect_version,
    expiry,
    idempotent,
    new_note,
    require_active,
    require_capture_allowed,
    require_open_notebook,
)
from notebooks.services.indexing import mark_for_indexing
from notebooks.services.revisions import record_created, save_new_version
from notebooks.services.truth import hold


@dataclass(frozen=True)
class _Item:
    """One save, cleaned and screened, with what had to be done before the
    transaction."""

    content: str
    kind: str
    task_id: str | None
    notebook_id: uuid.UUID | None
    fields: dict[str, Any]
    redacted: dict[str, int]
    probe: Any
    checked: Any
    supersedes: tuple[uuid.UUID, int | None] | None = None

    def arguments(self) -> dict[str, Any]:
        """As the operation record compares a repeat."""
        replaced = {} if self.supersedes is None else {
            "supersedes": f"{self.supersedes[0]}@{self.supersedes[1]}"}
        return {"content": self.content, "kind": self.kind, "notebookId": self.notebook_id,
                "taskId": self.task_id, **self.fields, **replaced}


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
    tags: list[str] | _Unset = UNSET,
    importance: float | _Unset = UNSET,
    retention_days: int | None | _Unset = UNSET,
    find_similar: bool = False,
    supersedes: tuple[uuid.UUID | str, int | None] | None = None,
) -> RememberOut:
    """Save a note (`remember`). A handoff with the `task_id` of a live handoff in the same
    notebook updates that note instead (new revision; retention kept unless given).

    Omitted fields take their defaults on a new note (capture explicit, not pinned,
    importance 0.5, no source agent) and stay as they are on a handoff update.
    Retention defaults: handoffs 30 days, other kinds permanent. Writes the note and its
    revision in one transaction. Raises Invalid, NotFound (notebook), Conflict
    (`capture_paused`, `notebook_archived`, `operation_conflict`), Gone (replay of a
    save whose note was deleted since).

    **`similar`** names likely duplicates of the saved content in the same place (its
    notebook or Personal) among the live notes the caller may read — it never refuses the
    save. Always: the notes with the same text up to case and whitespace (the content
    key, a few milliseconds). With `find_similar`, also the notes whose stored vectors
    are within `DUPLICATE_MAX_DISTANCE` of the content's: the note's own vector is made
    later by its embed job, so the content is embedded here, before the transaction
    opens, with the active provider — as recall embeds a query (`duplicates.probe_of`).
    That costs one embedding in the request (~57 ms for a 600-character note with the
    local model on 2 cores, docs/benchmarks.md), which is why it is asked for, not done
    on every save: saves stay within their p95 target by default. When embeddings are
    disabled or the provider fails, `similar` holds the exact-content duplicates alone
    and the save goes on.
    `similar` is computed inside the write's transaction, after the note is written, and
    is part of the stored result: a replay of the operation id returns the list the save
    saw (what was a duplicate *then*), less any note the caller can no longer see
    (grants can narrow), rather than a fresh search — a replay answers what happened.

    A connection's new fact, decision or solution in a notebook that checks agents'
    writes is checked against its declared truth first (`write_check`); one that fails
    is held for the owner: `note` is None and `pending_revision` says so.
    """
    op_id = operations.coerce_operation_id(operation_id)
    item = _prepared(actor, op_id, content=content, kind=kind, notebook_id=notebook_id,
                     task_id=task_id, source_agent=source_agent, capture=capture,
                     pinned=pinned, tags=tags, importance=importance,
                     retention_days=retention_days, find_similar=find_similar,
                     supersedes=supersedes)
    return idempotent(actor=actor, operation_id=op_id, action="note_remember",
                      arguments=item.arguments(),
                      decode=lambda data: _replayed(actor, RememberOut.model_validate(data)),
                      write=lambda: _saved(actor, op_id, item),
                      target=lambda result: result.note.id if result.note else None,
                      gone_if_deleted=True,
                      note_ids=lambda result: [result.note.id] if result.note else [])


def note_remember_batch(*, actor: Actor, operation_id: uuid.UUID | str,
                        items: Sequence[Mapping[str, Any] | GroveError]) -> BatchSavedOut:
    """Save up to 50 notes in one call and one transaction (`remember` with `items`,
    `POST /v1/notes/batch`). Each item takes `note_remember`'s fields and is saved by its
    rules — a handoff updates its task's live one, a connection's checked write may be
    held, `similar` names its likely duplicates (an earlier item of the batch
    included) — or refused with the code a single save would give (`error`), which
    refuses nothing else. The operation id covers the batch: a repeat replays every
    item's result. Raises only for the batch itself (none or too many items, no write
    capability, an operation id used for another request). An item the interface
    could not read arrives as its refusal (`GroveError`) and is reported as one."""
    op_id = operations.coerce_operation_id(operation_id)
    if not isinstance(items, Sequence) or isinstance(items, str | bytes) \
            or not 1 <= len(items) <= BATCH_REMEMBER_MAX:
        raise Invalid(f"Give 1–{BATCH_REMEMBER_MAX} items.", code="invalid_batch")
    actor.require(WRITE)
    prepared: list[_Item | GroveError] = []
    for given_item in items:
        try:
            if isinstance(given_item, GroveError):
                raise given_item
            if not isinstance(given_item, Mapping):
                raise Invalid("Each item is an object with content and kind.",
                              code="invalid_item")
            prepared.append(_prepared(actor, op_id, **given_item))
        except GroveError as exc:
            prepared.append(exc)
        except TypeError as exc:  # a field remember does not take
            prepared.append(Invalid(f"An item has a field remember does not take ({exc}).",
                                    code="invalid_item"))

    def write() -> BatchSavedOut:
        results = []
        for index, item in enumerate(prepared):
            if isinstance(item, GroveError):
                results.append(BatchSaved.refused(index, item))
                continue
            try:
                with transaction.atomic():  # a refused item leaves no trace
                    results.append(BatchSaved.of(index, _saved(actor, op_id, item)))
            except GroveError as exc:
                results.append(BatchSaved.refused(index, exc))
        return BatchSavedOut(items=results)

    def replayed(data: Any) -> BatchSavedOut:
        stored = BatchSavedOut.model_validate(data)
        return BatchSavedOut(items=[
            item if item.error is not None else _replayed(actor, item)
            for item in stored.items])

    # What was asked, item by item — not what became of it: an item refused now for a
    # passing reason (the model budget of a checked write) must not make its retry look
    # like another request.
    arguments = {"items": [_asked(given_item) for given_item in items]}
    return idempotent(actor=actor, operation_id=op_id, action="note_remember_batch",
                      arguments=arguments, decode=replayed, write=write,
                      note_ids=lambda result: [item.note.id for item in result.items
                                               if item.note is not None])


def _asked(item: Mapping[str, Any] | GroveError) -> Any:
    """An item as the operation record compares a repeat: its fields as given (or the
    interface's refusal of it, which the same request always meets again)."""
    if isinstance(item, GroveError):
        return {"refused": item.code}
    return json.loads(json.dumps(dict(item), default=str, sort_keys=True))


def _prepared(actor: Actor, op_id: uuid.UUID, *, content: Any, kind: Any,
              notebook_id: Any = None, task_id: Any = None,
              source_agent: Any = UNSET, capture: Any = UNSET, pinned: Any = UNSET,
              tags: Any = UNSET, importance: Any = UNSET, retention_days: Any = UNSET,
              find_similar: Any = False, supersedes: Any = None) -> _Item:
    """One save's input cleaned and screened, its duplicate probe embedded (with
    `find_similar`) and a connection's write checked — all before the transaction."""
    kind = clean_kind(kind)
    content = clean_content(content, kind=kind)
    task_id = clean_task_id(task_id)
    if kind == Kind.HANDOFF and task_id is None:
        raise Invalid("A handoff needs a taskId.", code="task_id_required")
    fields = given(
        source_agent=(source_agent, clean_source_agent),
        capture=(capture, clean_capture),
        pinned=(pinned, lambda value: clean_bool(value, what="pinned")),
        tags=(tags, clean_tags),
        importance=(importance, clean_importance),
        retention_days=(retention_days, clean_retention),
    )
    if notebook_id is HOME:
        notebook_id = actor.home
    notebook_uuid = None if notebook_id is None else parse_uuid(notebook_id, what="notebook id")
    actor.require(WRITE)  # before any embedding work, as the frame would
    # Credentials go before anything else sees the text: the probe, the check, the row.
    screened = screen(actor, content, origin=Origin.AUTOMATIC
                      if fields.get("capture") == Capture.AUTOMATIC else Origin.EXPLICIT)
    content = clean_content(screened.text, kind=kind)  # markers can make it longer
    probe = duplicates.probe_of(content) if clean_bool(find_similar, what="find_similar") \
        else None
    checked = write_check.check_write(actor, operation_id=op_id, notebook_id=notebook_uuid,
                                      note_id=None, kind=kind, content=content,
                                      capture=fields.get("capture"))
    return _Item(content=content, kind=kind, task_id=task_id, notebook_id=notebook_uuid,
                 fields=fields, redacted=screened.redacted, probe=probe, checked=checked,
                 supersedes=_clean_supersedes(supersedes))


def _clean_supersedes(value: Any) -> tuple[uuid.UUID, int | None] | None:
    """`supersedes` as (note id, the version read — None: not fenced)."""
    if value is None:
        return None
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise Invalid("supersedes names a note: note:<id>@<version>.",
                      code="invalid_supersedes")
    version = None if value[1] is None else clean_version(value[1])
    return parse_uuid(value[0], what="note id"), version


def _supersede(actor: Actor, op_id: uuid.UUID, note: Note, replaced: tuple[uuid.UUID,
               int | None], now: Any) -> uuid.UUID:
    """Archive the note `note` replaces and mark it as replaced by `note`, in the save's
    transaction: it must be live, writable by the caller and at the version read."""
    old = access_note(actor, replaced[0], need=WRITE, for_update=True)
    expect_version(old, replaced[1])
    if old.id == note.id:
        raise Invalid("A note cannot supersede itself.", code="invalid_supersedes")
    require_active(old, now)
    old.status, old.archived_at, old.superseded_by_id = Status.ARCHIVED, now, note.id
    save_new_version(old, reason=RevisionReason.ARCHIVE, actor=actor, operation_id=op_id,
                     now=now)
    return old.id


def _saved(actor: Actor, op_id: uuid.UUID, item: _Item) -> RememberOut:
    """`item` written, in the caller's transaction."""
    content, kind, task_id, fields = item.content, item.kind, item.task_id, item.fields
    notebook_uuid = item.notebook_id
    require_capture_allowed(actor, fields.get("capture", Capture.EXPLICIT))
    notebook = access_destination(actor, notebook_uuid)
    require_open_notebook(notebook)
    now = timezone.now()

    note: Note | None = None
    if kind == Kind.HANDOFF:
        note = _live_handoff(actor, notebook_uuid, task_id)
    created = note is None
    if note is None:
        failed = write_check.decide(actor, notebook, None, kind, content, item.checked)
        if failed is not None:
            held = hold(actor, note=None, notebook=notebook, checked=failed,
                        changes={"content": content, "kind": kind, "task_id": task_id,
                                 **fields}, operation_id=op_id)
            return RememberOut(note=None, created=False,
                               pending_revision=write_check.answer(actor, held),
                               redacted=item.redacted)
        note = new_note(actor, notebook_uuid, content=content, kind=kind,
                        task_id=task_id, fields=fields, now=now)
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
            record_created(note, actor=actor, operation_id=op_id)
    if not created:
        assert note is not None
        reactivate = not note_is_live(note, now)
        content_changed = note.content != content
        note.content = content
        for field in ("source_agent", "capture", "pinned", "tags", "importance"):
            if field in fields:
                setattr(note, field, fields[field])
        if "retention_days" in fields:
            days = fields["retention_days"]
            note.retention_days, note.expires_at = days, expiry(days, now)
        elif reactivate:
            note.expires_at = expiry(note.retention_days, now)
        if reactivate:
            note.status, note.archived_at, note.expired_at = Status.ACTIVE, None, None
        save_new_version(note, reason=RevisionReason.UPDATE, actor=actor,
                         operation_id=op_id, now=now)
        if content_changed:
            mark_for_indexing(note)
    assert note is not None
    superseded = None if item.supersedes is None else _supersede(
        actor, op_id, note, item.supersedes, now)
    similar = duplicates.similar_to_text(actor=actor, notebook_id=note.notebook_id,
                                         content=content, probe=item.probe, exclude=note.id)
    return RememberOut(note=NoteOut.of(note).model_copy(
        update={"redacted": item.redacted}), created=created, similar=similar,
        redacted=item.redacted, superseded=superseded,
        replaces=_replaces(note, similar) if item.probe is not None else [])


def _replaces(note: Note, similar: list[uuid.UUID]) -> list[uuid.UUID]:
    """Of the likely duplicates found by meaning, those `note` likely replaces: the same
    kind in other words (an exact duplicate repeats it; it replaces nothing)."""
    if not similar:
        return []
    keys = dict(Note.objects.filter(id__in=[*similar, note.id], kind=note.kind)
                .values_list("id", "content_key"))
    mine = keys.pop(note.id, None)
    return [other for other in similar if other in keys and keys[other] != mine]


def _replayed[R: RememberOut](actor: Actor, result: R) -> R:
    """A stored result, naming only the similar notes the caller can still see."""
    visible = set(notes_visible_to(actor).filter(id__in=[*result.similar, *result.replaces])
                  .values_list("id", flat=True)) if READ in actor.capabilities else set()
    return result.model_copy(update={
        "similar": [note_id for note_id in result.similar if note_id in visible],
        "replaces": [note_id for note_id in result.replaces if note_id in visible],
        "pending_revision": write_check.still_readable(actor, result.pending_revision)})


def _live_handoff(actor: Actor, notebook_id: uuid.UUID | None, task_id: str | None) -> Note | None:
    return (
        Note.objects.select_for_update()
        .filter(Q(notebook__isnull=True) if notebook_id is None else Q(notebook_id=notebook_id))
        .filter(account_id=actor.account_id, task_id=task_id, kind=Kind.HANDOFF)
        .exclude(status=Status.DELETED)
        .first()
    )
