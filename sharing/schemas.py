"""Shapes of share links: the owner's view of a link (REST and pages) and what a visitor
may see of a shared note."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal

from django.utils import timezone

from grove.kernel.schemas import In, Out


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
    of a notebook share's notes (`notes`, the `limit` it was cut at, `next_cursor`)."""

    share: PublicShare
    note: PublicNote | None = None
    notes: tuple[PublicNote, ...] = ()
    limit: int = 0
    next_cursor: str | None = None


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


class SharePageMeta(ShareMeta):
    """A page of a notebook share's notes: the list fields of every list's meta
    (`ListMeta`) but `available` — the public read path pages, it does not count (its
    functions return at most a page), so there is no real count to give."""

    returned: int
    limit: int
    truncated: bool  # a next page exists
    next_cursor: str | None = None


class ShareIn(In):
    note_id: uuid.UUID | None = None
    notebook_id: uuid.UUID | None = None
    include_subnotebooks: bool = False
    allow_indexing: bool = False
