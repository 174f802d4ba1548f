"""Shapes of share links: the owner's view of a link (REST and pages) and what a visitor
may see of a shared note."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime
from typing import ClassVar, Literal

from django.utils import timezone
from pydantic.json_schema import JsonDict

from grove.kernel.schemas import In, ListMeta, Out, Uuid


class ShareOut(Out):
    id: uuid.UUID
    kind: Literal["note", "notebook"]
    note_id: uuid.UUID | None
    notebook_id: uuid.UUID | None
    title: str  # the notebook's name, or the note's first line
    token: str
    url: str
    include_subnotebooks: bool
    allow_indexing: bool
    view_count: int
    last_viewed_at: datetime | None
    created_at: datetime
    # False while the target is archived, expired or deleted: the link shows a 404.
    available: bool


@dataclass(frozen=True)
class PublicShare:
    id: uuid.UUID
    token: str
    kind: str  # note | notebook
    title: str
    subnotebooks: bool
    allow_indexing: bool


@dataclass(frozen=True)
class PublicNote:
    """A shared note as a visitor may see it: no version (an edit count), no provenance,
    no kind (how its owner and agents file it, not part of what it says). `created_at`
    only orders pages; what is shown of the note's times is `updated_on`."""

    id: uuid.UUID
    content: str
    created_at: datetime
    updated_at: datetime

    @property
    def updated_on(self) -> date:
        """The day of the last change — all the page and the JSON show of its times."""
        return timezone.localtime(self.updated_at).date()


@dataclass(frozen=True)
class ShareVisit:
    """What one visitor request opened: the share and either one note (`note`) or a page
    of a notebook share's notes (`notes`, the `limit` it was cut at, `next_cursor`, and
    how many notes the share holds in all, `available`)."""

    share: PublicShare
    note: PublicNote | None = None
    notes: tuple[PublicNote, ...] = ()
    limit: int = 0
    next_cursor: str | None = None
    available: int = 0  # the share's notes in all (a page's)
    # The shown note's links: (form, target as written, the note it reaches when that
    # note is in the share, else None) — `selectors.share_links`.
    links: tuple[tuple[str, str, uuid.UUID | None], ...] = ()


class PublicNoteOut(Out):
    """A shared note on the wire: what the page shows of it, and nothing more (SPEC §9)."""

    id: uuid.UUID
    content: str
    updated: date  # the day of the last change

    @classmethod
    def of(cls, note: PublicNote) -> PublicNoteOut:
        return cls(id=note.id, content=note.content, updated=note.updated_on)


class ShareMeta(Out):
    """Delivery metadata of a public answer: what it is and how long it may be kept."""

    share: str  # note | notebook
    title: str | None
    generated_at: datetime
    max_age_seconds: int


class SharePageMeta(ListMeta, ShareMeta):
    """A page of a notebook share's notes: every list's meta (`ListMeta.of`: how many
    notes the share holds in all, `truncated` whenever this page is not all of them) and
    the delivery metadata."""


class ShareIn(In):
    note_id: Uuid | None = None
    notebook_id: Uuid | None = None
    include_subnotebooks: bool = False
    allow_indexing: bool = False

    # What the service checks across fields, for the OpenAPI document: one note or one
    # notebook; only a notebook has sub-notebooks.
    openapi_rules: ClassVar[JsonDict] = {
        "anyOf": [{"required": ["noteId"], "properties": {"noteId": {"type": "string"},
                                                          "notebookId": {"type": "null"}}},
                  {"required": ["notebookId"],
                   "properties": {"notebookId": {"type": "string"}, "noteId": {"type": "null"}}}],
        "if": {"required": ["noteId"], "properties": {"noteId": {"type": "string"}}},
        "then": {"properties": {"includeSubnotebooks": {"const": False}}}}
