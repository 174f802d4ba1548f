"""Shapes of notebook and note results, shared by services, REST and MCP.

JSON is camelCase (SPEC §3); Python code uses the snake_case attribute names.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal, Self

from grove.kernel.schemas import Out


def _now() -> datetime:
    from django.utils import timezone

    return timezone.now()


class NoteOut(Out):
    id: uuid.UUID
    typed_id: str
    versioned_id: str
    notebook_id: uuid.UUID | None
    content: str
    kind: str
    task_id: str | None
    source_agent: str | None
    capture: str
    pinned: bool
    importance: float
    retention_days: int | None
    expires_at: datetime | None
    version: int
    status: str
    indexing: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, note: object) -> NoteOut:
        from notebooks.models import Note

        assert isinstance(note, Note)
        status = note.status
        if status == "active" and note.expires_at is not None and note.expires_at <= _now():
            status = "expired"  # past expiry: expired at once, whether or not the job ran
        return cls(
            id=note.id, typed_id=note.typed_id, versioned_id=note.versioned_id,
            notebook_id=note.notebook_id, content=note.content, kind=note.kind,
            task_id=note.task_id, source_agent=note.source_agent, capture=note.capture,
            pinned=note.pinned, importance=note.importance, retention_days=note.retention_days,
            expires_at=note.expires_at, version=note.version, status=status,
            indexing=note.indexing, created_at=note.created_at, updated_at=note.updated_at,
        )


class RememberOut(Out):
    note: NoteOut
    # False when a handoff with the same task id was updated instead of created.
    created: bool


class NotebookOut(Out):
    id: uuid.UUID
    typed_id: str
    name: str
    parent_id: uuid.UUID | None
    archived_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, notebook: object) -> NotebookOut:
        from notebooks.models import Notebook

        assert isinstance(notebook, Notebook)
        return cls(
            id=notebook.id, typed_id=notebook.typed_id, name=notebook.name,
            parent_id=notebook.parent_id, archived_at=notebook.archived_at,
            created_at=notebook.created_at, updated_at=notebook.updated_at,
        )


ItemStatus = Literal[
    "deleted", "archived", "restored", "not_found", "version_conflict", "not_restorable"
]


class ItemResult(Out):
    id: uuid.UUID
    status: ItemStatus
    version: int | None = None


class BatchOut(Out):
    items: list[ItemResult]


class SubtreeCounts(Out):
    notebooks: int
    notes: int


class ExpireOut(Out):
    expired: int
    deleted: int


class RevisionOut(Out):
    note_id: uuid.UUID
    versioned_id: str
    version: int
    reason: str
    restored_from: int | None
    connection_id: uuid.UUID | None
    operation_id: uuid.UUID | None
    created_at: datetime
    content: str
    kind: str
    notebook_id: uuid.UUID | None
    task_id: str | None
    source_agent: str | None
    capture: str
    pinned: bool
    importance: float
    retention_days: int | None
    expires_at: datetime | None
    status: str

    @classmethod
    def of(cls, revision: object) -> RevisionOut:
        from notebooks.models import Revision

        assert isinstance(revision, Revision)
        return cls(
            note_id=revision.note_id, versioned_id=revision.versioned_id,
            version=revision.version, reason=revision.reason,
            restored_from=revision.restored_from, connection_id=revision.connection_id,
            operation_id=revision.operation_id, created_at=revision.created_at,
            content=revision.content, kind=revision.kind, notebook_id=revision.notebook_id,
            task_id=revision.task_id, source_agent=revision.source_agent,
            capture=revision.capture, pinned=revision.pinned, importance=revision.importance,
            retention_days=revision.retention_days, expires_at=revision.expires_at,
            status=revision.status,
        )


# -- what tools return: compact items, the full record on request -----------------------------


def _minute(value: datetime) -> datetime:
    return value.replace(second=0, microsecond=0)


class CompactNote(Out):
    """A note as the MCP tools return it — what a model needs to read and cite it: the
    versioned id, kind, notebook name (left out for a Personal note), content, last
    change (to the minute), a handoff's task id, whether it is pinned. Optional fields
    are left out rather than null: single-type schemas are the portable ones (the MCP
    Inspector's --strict lint)."""

    id: str  # note:<uuid>@<version>
    kind: str
    content: str
    updated: datetime
    notebook: str | None = None  # set only for a note in a notebook
    task_id: str | None = None  # set only for a note that has one
    pinned: bool | None = None  # set (true) only for a pinned note

    @classmethod
    def of(cls, note: NoteOut | RevisionOut, names: dict[uuid.UUID, str], *,
           full: bool = False, record: dict[str, Any] | None = None) -> Self:
        """The compact note of a note or of one of its revisions (`updated`: when that
        revision was made); `names` holds the notebook names the caller may see."""
        changed = note.updated_at if isinstance(note, NoteOut) else note.created_at
        fields: dict[str, object] = {
            "id": note.versioned_id, "kind": note.kind, "content": note.content,
            "updated": _minute(changed)}
        if note.notebook_id is not None:
            fields["notebook"] = names.get(note.notebook_id, "(a notebook you cannot see)")
        if note.task_id:
            fields["task_id"] = note.task_id
        if note.pinned:
            fields["pinned"] = True
        if full:
            fields["record"] = note.to_json() if record is None else record
        return cls(**fields)  # type: ignore[arg-type]

    def mcp_line(self) -> str:
        """`note:<id>@<v> kind[, pinned][, notebook], date` over the content: what a model
        reads. A Personal note names no notebook (the tools' descriptions say so)."""
        head = self.kind + (f" ({self.task_id})" if self.task_id else "")
        if self.pinned:
            head += ", pinned"
        if self.notebook is not None:
            head += f", {self.notebook}"
        return f"{self.id} {head}, {self.updated:%Y-%m-%d}\n{self.content}"


class ToolNote(CompactNote):
    """A compact note that can carry its full record (`full: true`, get_note), as
    `GET /v1/notes/{id}` returns it."""

    record: dict[str, Any] | None = None


class ToolNotebook(Out):
    id: str  # notebook:<uuid>
    name: str
    # notebook:<uuid>; left out at the top level (or for a parent you may not see)
    parent_id: str | None = None
    archived: bool | None = None  # set (true) only for an archived notebook

    @classmethod
    def of(cls, notebook: NotebookOut) -> ToolNotebook:
        fields: dict[str, object] = {"id": notebook.typed_id, "name": notebook.name}
        if notebook.parent_id:
            fields["parent_id"] = f"notebook:{notebook.parent_id}"
        if notebook.archived_at is not None:
            fields["archived"] = True
        return cls(**fields)  # type: ignore[arg-type]


class ToolRevision(Out):
    id: str  # note:<uuid>@<version>
    reason: str
    created: datetime
    kind: str
    content: str
    status: str
    restored_from: int | None = None

    @classmethod
    def of(cls, revision: RevisionOut) -> ToolRevision:
        fields: dict[str, object] = {
            "id": revision.versioned_id, "reason": revision.reason,
            "created": _minute(revision.created_at), "kind": revision.kind,
            "content": revision.content, "status": revision.status}
        if revision.restored_from is not None:
            fields["restored_from"] = revision.restored_from
        return cls(**fields)  # type: ignore[arg-type]
