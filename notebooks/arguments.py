"""Arguments shared by the REST API (request bodies) and the MCP tools (tool arguments):
one pydantic model per use case, camelCase, unknown fields refused. Each knows how to
become its service's keyword arguments, so REST and MCP cannot map them differently.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from grove.errors import Invalid
from grove.schemas import In
from notebooks import recall, search
from notebooks.services import BATCH_MAX

KindName = Literal["preference", "fact", "decision", "solution", "handoff"]
CONTENT_MAX = 6000


class Operated(In):
    """Every change may carry its operation id in the body (or `Idempotency-Key`)."""

    operation_id: uuid.UUID | None = None



class RememberIn(Operated):
    content: str = Field(max_length=CONTENT_MAX * 2)
    kind: KindName
    notebook_id: uuid.UUID | None = None
    task_id: str | None = Field(default=None, max_length=200)
    source_agent: str | None = Field(default=None, max_length=200)
    capture: Literal["explicit", "automatic"] | None = None
    pinned: bool | None = None
    importance: float | None = None
    retention_days: int | None = None

    def service_kwargs(self) -> dict[str, Any]:
        """`note_remember` keywords (without actor and operation id)."""
        optional = self.not_null("capture", "pinned", "importance")
        optional |= self.given("source_agent", "retention_days")
        return {"content": self.content, "kind": self.kind, "notebook_id": self.notebook_id,
                "task_id": self.task_id, **optional}


class NoteUpdateIn(Operated):
    expected_version: int | None = None
    content: str | None = Field(default=None, max_length=CONTENT_MAX * 2)
    kind: KindName | None = None
    task_id: str | None = Field(default=None, max_length=200)
    source_agent: str | None = Field(default=None, max_length=200)
    pinned: bool | None = None
    importance: float | None = None
    retention_days: int | None = None


    def changes(self) -> dict[str, Any]:
        """The fields to change (omitted fields stay; null only where it means "clear")."""
        changes = self.not_null("content", "kind", "pinned", "importance")
        return changes | self.given("task_id", "source_agent", "retention_days")


class BatchItem(In):
    id: uuid.UUID
    expected_version: int | None = None


class BatchIn(Operated):
    items: list[uuid.UUID | BatchItem] = Field(min_length=1, max_length=BATCH_MAX)


    def service_items(self) -> list[Any]:
        return [str(i) if isinstance(i, uuid.UUID) else
                {"id": str(i.id), "expectedVersion": i.expected_version} for i in self.items]


class MoveIn(Operated):
    note_ids: list[uuid.UUID] = Field(min_length=1, max_length=BATCH_MAX)
    notebook_id: uuid.UUID | None


class RestoreRevisionIn(Operated):
    revision: int
    durable: bool = False
    expected_version: int | None = None



class SearchIn(In):
    query: str | None = Field(default=None, max_length=search.QUERY_MAX_CHARS)
    notebook_id: uuid.UUID | None = None
    kind: list[KindName] | None = None
    source_agent: str | None = Field(default=None, max_length=200)
    updated_after: datetime | None = None
    lifetime: Literal["permanent", "ephemeral"] | None = None
    status: Literal["active", "archived", "expired"] = "active"
    sort: Literal["relevance", "updated_desc", "updated_asc", "created_desc"] | None = None
    cursor: str | None = Field(default=None, max_length=2000)
    limit: int = Field(default=search.DEFAULT_LIMIT, ge=1, le=search.MAX_LIMIT)
    matches: bool = False

    def service_kwargs(self) -> dict[str, Any]:
        """`note_search` keywords: an omitted notebookId means everything granted."""
        place = self.notebook_id if "notebook_id" in self.model_fields_set \
            else search.EVERYWHERE
        return {"query": self.query, "notebook_id": place, "kinds": self.kind,
                "source_agent": self.source_agent, "updated_after": self.updated_after,
                "lifetime": self.lifetime, "status": self.status, "sort": self.sort,
                "cursor": self.cursor, "limit": self.limit, "matches": self.matches}



class NotebookCreateIn(Operated):
    name: str = Field(max_length=400)
    parent_id: uuid.UUID | None = None


class NotebookUpdateIn(Operated):
    name: str | None = Field(default=None, max_length=400)
    parent_id: uuid.UUID | None = None

    def changes(self) -> dict[str, Any]:
        return self.not_null("name") | self.given("parent_id")



class RecallIn(In):
    query: str | None = Field(default=None, max_length=recall.QUERY_MAX_CHARS)
    notebook_id: uuid.UUID | None = Field(
        default=None, description="One notebook; null = Personal only; omit for all granted")
    notebook_ids: list[uuid.UUID] | None = Field(default=None, max_length=100)
    include_personal: bool = True
    task_id: str | None = Field(default=None, max_length=200)
    limit: int = Field(default=recall.DEFAULT_LIMIT, ge=1, le=recall.MAX_LIMIT)
    max_chars: int = Field(default=recall.DEFAULT_MAX_CHARS,
                           ge=recall.MIN_MAX_CHARS, le=recall.MAX_MAX_CHARS)

    def service_kwargs(self) -> dict[str, Any]:
        """`recall` keywords: notebookId (one, or null = Personal only) or notebookIds."""
        notebook_ids: list[uuid.UUID] | None = self.notebook_ids
        include_personal = self.include_personal
        if "notebook_id" in self.model_fields_set:
            if self.notebook_ids is not None:
                raise Invalid("Send notebookId or notebookIds, not both.", code="invalid_scope")
            if self.notebook_id is None:  # Personal only
                notebook_ids, include_personal = [], True
            else:
                notebook_ids = [self.notebook_id]
        return {"query": self.query, "notebook_ids": notebook_ids,
                "include_personal": include_personal, "task_id": self.task_id,
                "limit": self.limit, "max_chars": self.max_chars}
