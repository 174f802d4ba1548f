"""Export and import (SPEC §7): an account's notebooks, notes and revision history as
NDJSON, one JSON object per line with a `type` field.

    {"type": "grove-export", "format": 1, "exportedAt": …}
    {"type": "notebook", "id", "name", "parentId", "archivedAt", "createdAt", "updatedAt"}
    {"type": "note", "id", "notebookId", "content", "kind", …, "version", "status", …}
    {"type": "revision", "noteId", "version", "reason", "restoredFrom", "createdAt", …}
    {"type": "vision", "notebookId", "version", "content", …, "revisions": [{…}, …]}

Notebooks come parents first, then their visions (and the account's, `notebookId`
null) with their history; each note is followed by its revisions, oldest first.
Format 2 added visions; format 1 files (without them) still import.
Export is what the caller can see (grant-scoped, deleted things left out); import
recreates everything under new ids in the importing account, in one transaction —
all or nothing.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic import ValidationError as SchemaError

from grove.kernel.actor import READ, WRITE, Actor
from grove.kernel.errors import Invalid
from grove.kernel.paging import Key, keyset_page
from grove.kernel.tenancy import tenant
from notebooks.models import (
    Note,
    Notebook,
    NoteFields,
    Revision,
    RevisionReason,
    Status,
    Vision,
    VisionRevision,
)
from notebooks.rules import (
    clean_bool,
    clean_capture,
    clean_content,
    clean_importance,
    clean_kind,
    clean_name,
    clean_retention,
    clean_source_agent,
    clean_tags,
    clean_task_id,
    clean_vision,
)
from notebooks.schemas.notes import (
    ExportedNoteFields,
    ExportRecord,
    Header,
    ImportOut,
    NotebookRecord,
    NoteRecord,
    RevisionRecord,
    VisionRecord,
    VisionRevisionRecord,
)
from notebooks.selectors.access import notebooks_visible_to, notes_visible_to
from notebooks.selectors.library import notebooks_as_seen
from notebooks.services.frame import tree_lock
from notebooks.services.indexing import mark_for_indexing
from notebooks.services.notebooks import free_name

FORMAT = 2
READABLE_FORMATS = (1, 2)
PAGE = 500
IMPORT_MAX_LINES = 500_000


def _fields(row: Any, names: Iterable[str]) -> dict[str, Any]:
    return {name: getattr(row, name) for name in names}


NOTE_FIELDS = [name for name in NoteFields.snapshot_field_names() if name != "notebook"]


def _snapshot(row: Any) -> dict[str, Any]:
    return {"notebook_id": row.notebook_id, **_fields(row, NOTE_FIELDS)}


def _dump(record: ExportRecord) -> dict[str, Any]:
    return record.model_dump(mode="json", by_alias=True)


# -- export ----------------------------------------------------------------------------------


def export_records(*, actor: Actor) -> Iterator[dict[str, Any]]:
    """Everything the caller may see, as export records (a generator: notes are read in
    pages of 500, each page in its own short tenant transaction, so a large export never
    holds one transaction open while the client reads)."""
    with tenant(actor):
        actor.require(READ)
        notebooks = notebooks_as_seen(
            actor, list(notebooks_visible_to(actor).order_by("created_at", "id")))
        visions = _visions(actor, {nb.id for nb in notebooks})
    yield _dump(Header(type="grove-export", format=FORMAT, exported_at=timezone.now()))
    for notebook in parents_first(notebooks):
        yield _dump(NotebookRecord(type="notebook", id=notebook.id, name=notebook.name,
                                   parent_id=notebook.parent_id,
                                   archived_at=notebook.archived_at,
                                   created_at=notebook.created_at,
                                   updated_at=notebook.updated_at))
    for vision in visions:
        yield _dump(vision)
    after: Key | None = None
    while True:
        with tenant(actor):
            page = keyset_page(notes_visible_to(actor), order=("created_at", "id"),
                               after=after, limit=PAGE)
            revisions: dict[uuid.UUID, list[Revision]] = {}
            for revision in Revision.objects.filter(note__in=page.rows)\
                    .order_by("note", "version"):
                revisions.setdefault(revision.note_id, []).append(revision)
        for note in page.rows:
            yield _dump(NoteRecord(
                type="note", id=note.id, version=note.version, archived_at=note.archived_at,
                expired_at=note.expired_at, created_at=note.created_at,
                updated_at=note.updated_at, superseded_by=note.superseded_by_id,
                **_snapshot(note)))
            for revision in revisions.get(note.id, []):
                yield _dump(RevisionRecord(
                    type="revision", note_id=note.id, version=revision.version,
                    reason=revision.reason, restored_from=revision.restored_from,
                    operation_id=revision.operation_id, created_at=revision.created_at,
                    **_snapshot(revision)))
        if page.next_key is None:
            return
        after = page.next_key


def _visions(actor: Actor, notebook_ids: set[uuid.UUID]) -> list[VisionRecord]:
    """The account's vision and those of the notebooks exported, with their history."""
    rows = [row for row in Vision.objects.order_by("created_at", "id")
            if row.notebook_id is None or row.notebook_id in notebook_ids]
    history: dict[uuid.UUID, list[VisionRevisionRecord]] = {}
    for revision in VisionRevision.objects.filter(vision__in=rows).order_by("vision",
                                                                            "version"):
        history.setdefault(revision.vision_id, []).append(VisionRevisionRecord(
            version=revision.version, content=revision.content,
            created_at=revision.created_at))
    return [VisionRecord(type="vision", notebook_id=row.notebook_id, version=row.version,
                         content=row.content, created_at=row.created_at,
                         updated_at=row.updated_at, revisions=history.get(row.id, []))
            for row in rows]


class _Tree(Protocol):
    id: uuid.UUID
    parent_id: uuid.UUID | None


def parents_first[TreeT: _Tree](notebooks: list[TreeT]) -> list[TreeT]:
    """A parent before its children (a parent the caller cannot see is already hidden:
    `notebooks_as_seen` exported such a notebook at the root)."""
    children: dict[uuid.UUID | None, list[TreeT]] = {}
    for notebook in notebooks:
        children.setdefault(notebook.parent_id, []).append(notebook)
    ordered: list[TreeT] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        notebook = stack.pop()
        ordered.append(notebook)
        stack.extend(reversed(children.get(notebook.id, [])))
    return ordered


# -- import ----------------------------------------------------------------------------------


def _parse(number: int, raw: dict[str, Any]) -> ExportRecord:
    kinds: dict[str, type[ExportRecord]] = {"grove-export": Header, "notebook": NotebookRecord,
                                       "note": NoteRecord, "revision": RevisionRecord,
                                       "vision": VisionRecord}
    model = kinds.get(str(raw.get("type"))) if isinstance(raw, dict) else None
    if model is None:
        raise Invalid(f"line {number}: not a Grove export record (unknown type).",
                      code="invalid_import")
    try:
        return model.model_validate(raw)
    except SchemaError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise Invalid(f"line {number}: {where}: {first['msg']}", code="invalid_import") from None


def ndjson_records(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The records of an export file, line by line (blank lines skipped); a line that is
    not JSON is `Invalid` with its number."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except (ValueError, RecursionError):
            raise Invalid(f"Line {number} is not JSON (or nests too deep).",
                          code="invalid_import") from None


def account_import(*, actor: Actor, records: Iterable[dict[str, Any]]) -> ImportOut:
    """Recreate exported notebooks, visions, notes and revision history in the caller's
    account, under new ids, in one transaction (website owner only; anything invalid →
    Invalid and nothing is stored). Active notes are queued for embedding on commit. The
    account's own vision is imported only into an account that has none yet (an
    existing one is the owner's current word and is kept)."""
    actor.require_session()
    notebook_ids: dict[uuid.UUID, uuid.UUID] = {}
    note_ids: dict[uuid.UUID, uuid.UUID] = {}
    counts = {"notebooks": 0, "notes": 0, "revisions": 0, "visions": 0}
    seen_visions: set[uuid.UUID | None] = set()
    current: Note | None = None
    versions: list[int] = []
    to_index: list[Note] = []
    replaced: dict[uuid.UUID, uuid.UUID] = {}  # a new note → the exported note replacing it
    with tenant(actor):
        actor.require(WRITE)
        tree_lock(actor)  # the names `free_name` finds stay free until this commits
        for number, raw in enumerate(records, start=1):
            if number > IMPORT_MAX_LINES:
                raise Invalid(f"An import holds at most {IMPORT_MAX_LINES:,} lines.",
                              code="import_too_large")
            record = _parse(number, raw)
            if number == 1:
                if not isinstance(record, Header) or record.format not in READABLE_FORMATS:
                    raise Invalid(f"line 1: expected a grove-export header of format "
                                  f"{' or '.join(map(str, READABLE_FORMATS))}.",
                                  code="invalid_import")
                continue
            if isinstance(record, Header):
                raise Invalid(f"line {number}: a second header.", code="invalid_import")
            if isinstance(record, NotebookRecord):
                _check_history(current, versions)
                current = None
                parent = _mapped(notebook_ids, record.parent_id, number, "parentId")
                name = clean_name(record.name)
                if record.archived_at is None:  # beside a live one of its name: "Name (2)"
                    name = free_name(actor, name, parent)
                new = Notebook.objects.create(
                    account_id=actor.account_id, name=name, parent_id=parent,
                    archived_at=record.archived_at, created_at=record.created_at,
                    updated_at=record.updated_at)
                if record.id in notebook_ids:
                    raise Invalid(f"line {number}: notebook {record.id} twice.",
                                  code="invalid_import")
                notebook_ids[record.id] = new.id
                counts["notebooks"] += 1
            elif isinstance(record, VisionRecord):
                _check_history(current, versions)
                current = None
                place = _mapped(notebook_ids, record.notebook_id, number, "notebookId")
                if place in seen_visions:
                    raise Invalid(f"line {number}: a second vision for one place.",
                                  code="invalid_import")
                seen_visions.add(place)
                counts["visions"] += _import_vision(actor, record, place, number)
            elif isinstance(record, NoteRecord):
                _check_history(current, versions)
                if record.id in note_ids:
                    raise Invalid(f"line {number}: note {record.id} twice.",
                                  code="invalid_import")
                current = Note(
                    account_id=actor.account_id, version=record.version,
                    archived_at=record.archived_at, expired_at=record.expired_at,
                    created_at=record.created_at, updated_at=record.updated_at,
                    deleted_at=timezone.now() if record.status == Status.DELETED else None,
                    **_clean_fields(record, notebook_ids, number))
                try:
                    with transaction.atomic():
                        current.save(force_insert=True)
                except IntegrityError:
                    raise Invalid(f"line {number}: this note clashes with an existing one "
                                  "(a live handoff with the same task id in Personal).",
                                  code="import_conflict") from None
                note_ids[record.id] = current.id
                if record.superseded_by is not None:
                    replaced[current.id] = record.superseded_by
                versions = []
                counts["notes"] += 1
                if current.status == Status.ACTIVE:
                    to_index.append(current)
            else:
                assert isinstance(record, RevisionRecord)
                if current is None or note_ids.get(record.note_id) != current.id:
                    raise Invalid(f"line {number}: a revision must follow its note.",
                                  code="invalid_import")
                if record.reason not in RevisionReason.values:
                    raise Invalid(f"line {number}: unknown revision reason.",
                                  code="invalid_import")
                Revision.objects.create(
                    account_id=actor.account_id, note=current, version=record.version,
                    reason=record.reason, restored_from=record.restored_from,
                    operation_id=record.operation_id, created_at=record.created_at,
                    connection_id=None, **_clean_fields(record, notebook_ids, number))
                versions.append(record.version)
                counts["revisions"] += 1
        _check_history(current, versions)
        for note_id, by in replaced.items():  # a replacement outside the file: no mark
            Note.objects.filter(id=note_id).update(superseded_by_id=note_ids.get(by))
        for note in to_index:
            mark_for_indexing(note)
    return ImportOut(**counts)


def _import_vision(actor: Actor, record: VisionRecord, place: uuid.UUID | None,
                   number: int) -> int:
    """One vision with its history (1 if stored, 0 if the account already has its own)."""
    if place is None and Vision.objects.filter(notebook__isnull=True).exists():
        return 0
    # Lengths first: a version near 2**31 must not become a list of that many numbers.
    if len(record.revisions) != record.version \
            or [r.version for r in record.revisions] != list(range(1, record.version + 1)) \
            or record.revisions[-1].content != record.content:
        raise Invalid(f"line {number}: a vision's revisions must be versions 1 to "
                      f"{record.version} in order, the last one its content.",
                      code="invalid_import")
    try:
        contents = [clean_vision(r.content) for r in record.revisions]
    except Invalid as exc:
        raise Invalid(f"line {number}: {exc.message}", code="invalid_import") from None
    vision = Vision.objects.create(
        account_id=actor.account_id, notebook_id=place, content=contents[-1],
        version=record.version, created_at=record.created_at, updated_at=record.updated_at)
    VisionRevision.objects.bulk_create([
        VisionRevision(account_id=actor.account_id, vision=vision, version=r.version,
                       content=text, created_at=r.created_at)
        for r, text in zip(record.revisions, contents, strict=True)])
    return 1


def _mapped(ids: dict[uuid.UUID, uuid.UUID], old: uuid.UUID | None, number: int,
            what: str) -> uuid.UUID | None:
    if old is None:
        return None
    if old not in ids:
        raise Invalid(f"line {number}: {what} {old} is not a notebook earlier in the file.",
                      code="invalid_import")
    return ids[old]


def _clean_fields(record: ExportedNoteFields, notebook_ids: dict[uuid.UUID, uuid.UUID],
                  number: int) -> dict[str, Any]:
    """A record's note fields through the same cleaners as `note_remember` (notebooks.rules),
    so an import accepts and refuses exactly what a save does."""
    try:
        return {
            "notebook_id": _mapped(notebook_ids, record.notebook_id, number, "notebookId"),
            "content": clean_content(record.content, kind=clean_kind(record.kind)),
            "kind": clean_kind(record.kind),
            "task_id": clean_task_id(record.task_id),
            "source_agent": clean_source_agent(record.source_agent),
            "capture": clean_capture(record.capture),
            "pinned": clean_bool(record.pinned, what="pinned"),
            "tags": clean_tags(record.tags),
            "importance": clean_importance(record.importance),
            "retention_days": clean_retention(record.retention_days),
            "expires_at": record.expires_at, "status": record.status,
        }
    except Invalid as exc:
        raise Invalid(f"line {number}: {exc.message}", code="invalid_import") from None


def _check_history(note: Note | None, versions: list[int]) -> None:
    """A note's revisions are 1…version, each once, in order."""
    # Lengths first: a version near 2**31 must not become a list of that many numbers.
    if note is not None and (len(versions) != note.version
                             or versions != list(range(1, note.version + 1))):
        raise Invalid(f"note {note.id}: its revisions must be versions 1 to {note.version} "
                      "in order.", code="invalid_import")
