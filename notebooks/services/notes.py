"""Notes: update (the whole text or a partial edit) and move; `remember` saves them."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from django.utils import timezone

from grove.identity.hygiene import Origin, screen
from grove.kernel import operations
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import Conflict, Invalid
from links.services import links_to
from notebooks.edits import Edit, clean_edit
from notebooks.models import (
    Kind,
    Note,
    NoteFields,
    RevisionReason,
)
from notebooks.rules import (
    UNSET,
    _Unset,
    check_content_fits,
    clean_batch,
    clean_bool,
    clean_content,
    clean_importance,
    clean_kind,
    clean_retention,
    clean_source_agent,
    clean_tags,
    clean_task_id,
    clean_version,
    given,
    parse_uuid,
)
from notebooks.schemas.notes import NoteOut
from notebooks.schemas.truth import PendingRef
from notebooks.selectors.access import (
    access_destination,
    access_note,
)
from notebooks.selectors.truth import is_declared
from notebooks.services import write_check
from notebooks.services.edit_text import edited_content
from notebooks.services.frame import (
    apply_changes,
    expect_version,
    idempotent,
    note_to_change,
    require_open_notebook,
)
from notebooks.services.indexing import index_if_changed
from notebooks.services.relink import relink_after_move, relink_after_rename
from notebooks.services.revisions import save_new_version
from notebooks.services.truth import hold

# -- notes -----------------------------------------------------------------------------


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
    tags: list[str] | _Unset = UNSET,
    importance: float | _Unset = UNSET,
    retention_days: int | None | _Unset = UNSET,
    relink: bool = False,
    edit: Edit | None = None,
) -> NoteOut:
    """Correct a note (`update_memory`): omitted fields stay; a given retention restarts
    the clock. `edit` (instead of `content`): a partial edit of the text as it is when
    the change is made (`notebooks.edits`; the `note_edit` service retries it when the
    note moves on in between). With `expected_version`, a note changed meanwhile →
    `version_conflict`.
    Only active notes can be corrected (`note_not_active`). `relink`: when the title
    changes, the links that meant the note by its old title are written anew
    (`relink.relink_after_rename`; the result's `relinked` says in how many notes).

    A connection's change is held for the owner (the result's `pending_revision`; the
    note keeps its version) when the note is declared ground truth, or when it gives a
    fact, decision or solution new text in a notebook that checks agents' writes and the
    text fails the check (`write_check`)."""
    op_id = operations.coerce_operation_id(operation_id)
    note_uuid = parse_uuid(note_id, what="note id")
    changes = given(
        content=(content, clean_content),
        kind=(kind, clean_kind),
        task_id=(task_id, clean_task_id),
        source_agent=(source_agent, clean_source_agent),
        pinned=(pinned, lambda value: clean_bool(value, what="pinned")),
        tags=(tags, clean_tags),
        importance=(importance, clean_importance),
        retention_days=(retention_days, clean_retention),
    )
    if not changes and edit is None:
        raise Invalid("Nothing to change: give at least one field.", code="no_changes")
    if expected_version is not None:
        expected_version = clean_version(expected_version)
    if edit is not None and "content" in changes:
        raise Invalid("Give content (the whole text) or edit (a part of it), not both.",
                      code="edit_with_content")
    actor.require(WRITE)
    fence = expected_version
    if edit is not None:
        edited = edited_content(actor, op_id, note_uuid, expected_version, edit)
        if edited is not None:  # else a replay: the frame answers it
            changes["content"], fence = clean_content(edited[0]), edited[1]
    redacted: dict[str, int] = {}
    if "content" in changes:
        screened = screen(actor, changes["content"], origin=Origin.EXPLICIT)
        changes["content"], redacted = clean_content(screened.text), screened.redacted
    checked = None if not {"content", "kind"} & set(changes) else write_check.check_write(
        actor, operation_id=op_id, notebook_id=None, note_id=note_uuid,
        kind=changes.get("kind"), content=changes.get("content"),
        expected_version=fence)

    def write() -> NoteOut:
        note, now = note_to_change(actor, note_uuid, fence)
        new_kind = changes.get("kind", note.kind)
        new_task = changes.get("task_id", note.task_id)
        if new_kind == Kind.HANDOFF and not new_task:
            if {"kind", "task_id"} <= set(changes):  # the request contradicts itself
                raise Invalid("A handoff needs a taskId.", code="task_id_required")
            # The rest comes from the note as it is now, which the request cannot show.
            raise Conflict("A handoff needs a taskId, and this note would have none: send "
                           "taskId with the change.", code="task_id_required")
        declared = actor.connection_id is not None and is_declared(note.id)
        text = changes.get("content", note.content)
        if "content" in changes or "kind" in changes:
            check_content_fits(text, new_kind)  # each kind holds its own length
        if actor.connection_id is not None and not declared \
                and write_check.brings_news(note, new_kind, text):
            failed = write_check.decide(actor, note.notebook, note, new_kind, text, checked)
            if failed is not None:
                held = hold(actor, note=note, notebook=note.notebook, checked=failed,
                            changes=changes, operation_id=op_id)
                return NoteOut.of(note).model_copy(update={
                    "pending_revision": write_check.answer(actor, held), "redacted": redacted})
        before = _snapshot(note)
        apply_changes(note, changes, now)
        if _snapshot(note) != before or "retention_days" in changes:
            if declared:
                # Declared ground truth: the change waits for the owner (SPEC §10);
                # readers — this caller included — keep the accepted version.
                note.refresh_from_db()
                held = hold(actor, note=note, changes=changes, operation_id=op_id)
                return NoteOut.of(note).model_copy(update={
                    "pending_revision": PendingRef(id=held.id), "redacted": redacted})
            save_new_version(note, reason=RevisionReason.UPDATE, actor=actor,
                             operation_id=op_id, now=now)
            index_if_changed(note, content=before["content"], kind=before["kind"])
            if relink and note.content != before["content"]:
                relinked = relink_after_rename(actor, note, before=before["content"],
                                               operation_id=op_id, now=now)
                return NoteOut.of(note).model_copy(update={"redacted": redacted,
                                                           "relinked": relinked})
        return NoteOut.of(note).model_copy(update={"redacted": redacted})

    def replayed(data: Any) -> NoteOut:
        result = NoteOut.model_validate(data)
        return result.model_copy(update={
            "pending_revision": write_check.still_readable(actor, result.pending_revision)})

    arguments = {"noteId": note_uuid, "expectedVersion": expected_version, **changes,
                 **({"relink": True} if relink else {})}
    if edit is not None:  # what was asked, not the text it made of the note then
        arguments.pop("content", None)
        arguments["edit"] = edit.to_json()
    return idempotent(actor=actor, operation_id=op_id, action="note_update",
                      arguments=arguments, decode=replayed, write=write,
                      target=lambda result: result.id, gone_if_deleted=True,
                      note_ids=lambda result: [result.id])


EDIT_ATTEMPTS = 3


def note_edit(*, actor: Actor, operation_id: uuid.UUID | str, note_id: uuid.UUID | str,
              edit: Any, expected_version: int | None = None, **changes: Any) -> NoteOut:
    """A partial edit of a note's text (`edit_note`; `notebooks.edits` says what each
    operation does), with any other field `note_update` takes, as one revision. Fenced
    by `expected_version` when given; without it the edit applies to the text as it is,
    made again (up to three times) when the note changes between reading it and
    writing."""
    cleaned, op_id = clean_edit(edit), operations.coerce_operation_id(operation_id)
    for attempt in range(1, EDIT_ATTEMPTS + 1):
        try:
            return note_update(actor=actor, operation_id=op_id, note_id=note_id,
                               expected_version=expected_version, edit=cleaned, **changes)
        except Conflict as exc:
            if expected_version is not None or exc.code != "version_conflict" \
                    or attempt == EDIT_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _snapshot(note: Note) -> dict[str, Any]:
    return {name: getattr(note, name) for name in NoteFields.snapshot_field_names()}


def note_move(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    note_ids: Iterable[Any],
    notebook_id: uuid.UUID | str | None,
    expected_versions: Mapping[Any, int] | None = None,
    relink: bool = False,
) -> list[NoteOut]:
    """Move notes to a notebook (None = Personal): all or nothing. Needs write access to
    every note's current place and to the destination. `expected_versions` fences some
    of the notes (note id → the version read): one moved on refuses the whole move
    (`version_conflict`) — the website's Undo of a move relies on it. `relink`: the
    links whose written path no longer reaches a moved note are written anew so they do
    (`relink.relink_after_move`, each changed note a revision under this operation;
    each moved note's `relinked` says in how many notes)."""
    op_id = operations.coerce_operation_id(operation_id)
    ids = clean_batch(note_ids)
    destination_uuid = None if notebook_id is None else parse_uuid(notebook_id,
                                                                    what="notebook id")
    fences = {parse_uuid(note_id, what="note id"): clean_version(version)
              for note_id, version in (expected_versions or {}).items()}
    if not set(fences) <= set(ids):
        raise Invalid("expectedVersions names a note that is not moved.", code="invalid_item")

    def write() -> list[NoteOut]:
        destination = access_destination(actor, destination_uuid)
        require_open_notebook(destination)
        now = timezone.now()
        notes = [access_note(actor, note_uuid, need=WRITE, for_update=True)
                 for note_uuid in sorted(ids, key=str)]
        for note in notes:
            expect_version(note, fences.get(note.id))
        reached = links_to(actor.account_id, [note.id for note in notes]) if relink else {}
        for note in notes:
            if note.notebook_id != destination_uuid:
                note.notebook_id = destination_uuid
                save_new_version(note, reason=RevisionReason.MOVE, actor=actor,
                                 operation_id=op_id, now=now)
        relinked = relink_after_move(actor, reached, operation_id=op_id, now=now) \
            if reached else {}
        by_id = {note.id: note for note in notes}
        return [NoteOut.of(by_id[note_uuid]).model_copy(
            update={"relinked": relinked.get(note_uuid, 0)}) for note_uuid in ids]

    arguments: dict[str, Any] = {"noteIds": sorted(str(i) for i in ids),
                                 "notebookId": destination_uuid}
    if fences:
        arguments["expectedVersions"] = {str(k): v for k, v in fences.items()}
    if relink:
        arguments["relink"] = True
    return idempotent(actor=actor, operation_id=op_id, action="note_move",
                      arguments=arguments,
                      decode=lambda data: [NoteOut.model_validate(n) for n in data],
                      write=write, encode=lambda result: [n.to_json() for n in result],
                      note_ids=lambda result: [n.id for n in result])
