"""Recently deleted (SPEC §3): what the owner may still bring back, newest first.

What was deleted together with its notebook is not listed on its own: it comes back
with that notebook (`notebooks.services.trash.notebook_undelete`). Which rows count —
deleted within `TRASH_DAYS` days, and for notes not past their retention — is the rule
the restore services check too (`notebooks.rules.note_in_trash_filter`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, F
from django.utils import timezone

from grove.kernel.actor import Actor
from grove.kernel.paging import caller_binding, cursor_after, cursor_read, keyset_page
from grove.kernel.tenancy import tenant
from notebooks.models import Note, Notebook
from notebooks.rules import (
    TRASH_DAYS,
    TRASH_NOTEBOOKS_MAX,
    TRASH_PAGE_SIZE,
    note_in_trash_filter,
    notebook_in_trash_filter,
    trash_until,
)
from notebooks.schemas.notes import SubtreeCounts
from notebooks.selectors.access import deleted_together

TRASH_CURSOR_SALT = "grove.notebooks.trash"


@dataclass(frozen=True)
class DeletedNote:
    note: Note  # `notebook` loaded: where it was
    until: datetime  # restorable until then


@dataclass(frozen=True)
class DeletedNotebook:
    notebook: Notebook  # `parent` loaded: where it was
    brings_back: SubtreeCounts  # itself, the sub-notebooks and notes deleted with it
    until: datetime


@dataclass(frozen=True)
class TrashPage:
    """One page of deleted notes, with the real count and the next signed cursor; the
    deleted notebooks (newest `TRASH_NOTEBOOKS_MAX`, and how many in all) come with the
    first page."""

    notes: list[DeletedNote]
    notes_available: int
    next_cursor: str | None
    notebooks: list[DeletedNotebook]
    notebooks_available: int
    days: int = TRASH_DAYS


def trash_list(*, actor: Actor, cursor: str | None = None,
               limit: int = TRASH_PAGE_SIZE) -> TrashPage:
    """Notes and notebooks deleted in the last `TRASH_DAYS` days that the owner may
    restore. The website session only (`session_required`): connections never see what
    was deleted. A bad cursor is `invalid_cursor`."""
    actor.require_session()
    opened = cursor_read(cursor, salt=TRASH_CURSOR_SALT, binding=caller_binding(actor),
                         fingerprint="trash")
    with tenant(actor):
        now = timezone.now()
        # Newest first by deletion time: a deletion made while paging lands before the
        # first page, so no ceiling is needed for a stable walk.
        notes = (Note.objects.filter(account_id=actor.account_id)
                 .filter(note_in_trash_filter(now=now))
                 .exclude(notebook__deleted_at=F("deleted_at"))
                 .select_related("notebook"))
        page = keyset_page(notes, order=("-deleted_at", "-id"), after=opened.key, limit=limit)
        notes_available = notes.count()
        notebooks: list[DeletedNotebook] = []
        notebooks_available = 0
        if opened.key is None:
            deleted = (Notebook.objects.filter(account_id=actor.account_id)
                       .filter(notebook_in_trash_filter(now=now))
                       .exclude(parent__deleted_at=F("deleted_at")))
            notebooks_available = deleted.count()
            if notebooks_available:
                shown = list(deleted.select_related("parent")
                             .order_by("-deleted_at", "-id")[:TRASH_NOTEBOOKS_MAX])
                notebooks = _with_counts(shown, now=now)
    next_cursor = cursor_after(opened, page, ceiling=None, salt=TRASH_CURSOR_SALT)
    return TrashPage(notes=[DeletedNote(note=note, until=_until(note.deleted_at, note.expires_at))
                            for note in page.rows], notes_available=notes_available,
                     next_cursor=next_cursor, notebooks=notebooks,
                     notebooks_available=notebooks_available)


def _with_counts(shown: list[Notebook], *, now: datetime) -> list[DeletedNotebook]:
    """What restoring each notebook brings back, in two queries for the whole list."""
    together = deleted_together([nb.id for nb in shown])
    root_of = {member: root for root, members in together.items() for member in members}
    notes: dict[uuid.UUID, int] = {}
    for row in (Note.objects.filter(notebook_id__in=list(root_of))
                .filter(note_in_trash_filter(now=now))
                .filter(deleted_at=F("notebook__deleted_at"))
                .values("notebook_id").annotate(n=Count("id"))):
        root = root_of[row["notebook_id"]]
        notes[root] = notes.get(root, 0) + row["n"]
    return [DeletedNotebook(notebook=nb, brings_back=SubtreeCounts(
        notebooks=len(together.get(nb.id, [nb.id])), notes=notes.get(nb.id, 0)),
        until=_until(nb.deleted_at, None)) for nb in shown]


def _until(deleted_at: datetime | None, expires_at: datetime | None) -> datetime:
    assert deleted_at is not None  # what is listed here is deleted
    return trash_until(deleted_at, expires_at)
