"""Reads of share links: the owner's list, and what a link shows (SPEC §9).

What a visitor sees is read only through the security-definer functions of migration
sharing 0003, with no account context — so whatever a visitor sends (ids,
cursors), nothing outside the share's target can come back. They take the link's token
and check its MAC themselves: a share id alone opens nothing, even to SQL run as the
runtime role."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from grove.interfaces.rendering import note_title
from grove.kernel.actor import Actor
from grove.kernel.errors import Invalid, NotFound
from grove.kernel.paging import cursor_after, cursor_read, keyset_page
from grove.kernel.tenancy import tenant
from notebooks.rules import note_is_live
from sharing.models import Share
from sharing.schemas import PublicNote, PublicShare, ShareOut, ShareVisit
from sharing.tokens import share_id_of, token_for

PAGE_DEFAULT, PAGE_MAX = 20, 50
CURSOR_SALT = "grove.sharing.page"


class InvalidPage(Exception):
    """A page cursor or size a visitor may not use."""


def open_share(token: str) -> PublicShare | None:
    """The live share a token opens, or None (unknown, forged and revoked alike)."""
    share_id = share_id_of(token)
    if share_id is None:
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT kind, title, subnotebooks, allow_indexing "
                       "FROM grove_share_open(%s)", [token])
        row = cursor.fetchone()
    if row is None:
        return None
    return PublicShare(id=share_id, token=token, kind=row[0], title=row[1],
                       subnotebooks=row[2], allow_indexing=row[3])


def _notes(share: PublicShare, *, note_id: uuid.UUID | None = None,
           after: tuple[datetime, uuid.UUID] | None = None, limit: int = 1) -> list[PublicNote]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, content, created_at, updated_at "
            "FROM grove_share_notes(%s, %s, %s, %s, %s)",
            [share.token, note_id, after[0] if after else None, after[1] if after else None,
             limit])
        return [PublicNote(*row) for row in cursor.fetchall()]


def member(share: PublicShare, note_id: Any) -> PublicNote | None:
    """One note of the share (the shared note itself, or a live member of the shared
    notebook), or None."""
    try:
        key = uuid.UUID(str(note_id))
    except ValueError:
        return None
    found = _notes(share, note_id=key)
    return found[0] if found else None


def the_note(share: PublicShare) -> PublicNote | None:
    """A note share's note, if it is still live."""
    found = _notes(share)
    return found[0] if found else None


def member_count(share: PublicShare) -> int:
    """How many notes the share holds now (what its pages list, in all)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT grove_share_count(%s)", [share.token])
        return int(cursor.fetchone()[0])


def clean_limit(value: Any) -> int:
    if value in (None, ""):
        return PAGE_DEFAULT
    try:
        limit = int(value)
    except (TypeError, ValueError):
        raise InvalidPage("limit is a whole number.") from None
    if not 1 <= limit <= PAGE_MAX:
        raise InvalidPage(f"limit is from 1 to {PAGE_MAX}.")
    return limit


def page(share: PublicShare, *, cursor: str | None = None,
         limit: int = PAGE_DEFAULT) -> tuple[list[PublicNote], str | None]:
    """A page of a notebook share's live notes, newest first, and the next cursor (signed,
    bound to this share; a visitor has no account to bind it to). The seek runs in
    `grove_share_notes`; membership is live, so there is no ceiling."""
    try:
        opened = cursor_read(cursor or None, salt=CURSOR_SALT,
                             binding=("share", str(share.id)), fingerprint="notes")
        found = keyset_page(
            lambda after, count: _notes(share, after=after, limit=count),
            order=("-created_at", "-id"), after=opened.key, limit=limit)
    except Invalid:
        raise InvalidPage("The cursor is not valid.") from None
    return found.rows, cursor_after(opened, found, ceiling=None, salt=CURSOR_SALT)


def share_url(token: str) -> str:
    return settings.GROVE_BASE_URL.rstrip("/") + reverse("public-share", args=[token])


def _title(share: Share) -> str:
    if share.notebook_id is not None:
        return share.notebook.name if share.notebook else ""
    return note_title(share.note.content, path=share.note.source_path) if share.note else ""


def _available(share: Share) -> bool:
    if share.note is not None:
        note = share.note
        return note_is_live(note, timezone.now())
    notebook = share.notebook
    return notebook is not None and notebook.deleted_at is None \
        and notebook.archived_at is None


def share_out(share: Share) -> ShareOut:
    token = token_for(share.id)
    return ShareOut(
        id=share.id, kind="note" if share.note_id else "notebook", note_id=share.note_id,
        notebook_id=share.notebook_id, title=_title(share), token=token,
        url=share_url(token), include_subnotebooks=share.include_subnotebooks,
        allow_indexing=share.allow_indexing, view_count=share.view_count,
        last_viewed_at=share.last_viewed_at, created_at=share.created_at,
        available=_available(share))


def share_list(*, actor: Actor) -> list[ShareOut]:
    """The account's live share links, newest first, with their view counts."""
    actor.require_session()
    with tenant(actor):
        shares = Share.objects.select_related("note", "notebook")\
            .filter(revoked_at__isnull=True).order_by("-created_at", "-id")
        return [share_out(s) for s in shares]


def _live_share(*, note_id: Any = None, notebook_id: Any = None) -> ShareOut | None:
    target = {"note_id": note_id} if note_id is not None else {"notebook_id": notebook_id}
    share = Share.objects.select_related("note", "notebook")\
        .filter(revoked_at__isnull=True, **target).first()
    return share_out(share) if share else None


def page_share(actor: Actor, target: Any) -> dict[str, Any]:
    """The share box of a note or notebook page (registered with notebooks' page reads in
    `sharing.apps`; runs in the page's transaction): the live link, for the owner's
    session, of an active note or a notebook that is not archived — else none."""
    from notebooks.models import Note

    if not actor.is_session:
        return {}
    if isinstance(target, Note):
        live = target.status == "active"
        return {"share": _live_share(note_id=target.id) if live else None}
    return {"share": None if target.archived_at else _live_share(notebook_id=target.id)}


# -- what a visitor asked for (one call per public view) -----------------------------------

SHARE_NOT_FOUND = "This link does not exist or was revoked by its owner."


class PageRefused(Invalid):
    """`invalid_page`: a cursor or page size a visitor may not use, on a share that
    exists — its answer keeps that share's cache and robots headers (`share`)."""

    def __init__(self, message: str, *, share: PublicShare):
        super().__init__(message, code="invalid_page")
        self.share = share


def _opened(token: str) -> PublicShare:
    share = open_share(token)
    if share is None:
        raise NotFound(SHARE_NOT_FOUND, code="share_not_found")
    return share


def _page_visit(share: PublicShare, cursor: str | None, limit: Any) -> ShareVisit:
    try:
        size = clean_limit(limit)
        notes, next_cursor = page(share, cursor=cursor or None, limit=size)
    except InvalidPage as error:
        raise PageRefused(str(error), share=share) from None
    return ShareVisit(share=share, notes=tuple(notes), limit=size, next_cursor=next_cursor,
                      available=member_count(share))


def share_content(*, token: str, note_id: Any = None, cursor: str | None = None,
                  limit: Any = None) -> ShareVisit:
    """What a link shows: with `note_id`, that note of the share; else a note share's
    note, or a page of a notebook share's notes (`cursor`, `limit` as the visitor sent
    them). Unknown, forged and revoked links and notes not (or no longer) in the share
    are the same NotFound (`share_not_found`); a bad cursor or limit is PageRefused."""
    share = _opened(token)
    if note_id is not None:
        note = member(share, note_id)
    elif share.kind == "note":
        note = the_note(share)
    else:
        return _page_visit(share, cursor, limit)
    if note is None:
        raise NotFound(SHARE_NOT_FOUND, code="share_not_found")
    return ShareVisit(share=share, note=note, links=share_links(share, note.id))


def share_links(share: PublicShare,
                note_id: uuid.UUID) -> tuple[tuple[str, str, uuid.UUID | None], ...]:
    """The links a note of the share writes, each with its target only when that note
    is in the share too (`grove_share_links`, sharing 0005)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT form, target, target_id FROM grove_share_links(%s, %s)",
                       [share.token, note_id])
        return tuple((form, target, target_id) for form, target, target_id in cursor.fetchall())


def share_notes_page(*, token: str, cursor: str | None = None,
                     limit: Any = None) -> ShareVisit:
    """A page of a notebook share's notes (a note share has none: NotFound)."""
    share = _opened(token)
    if share.kind != "notebook":
        raise NotFound(SHARE_NOT_FOUND, code="share_not_found")
    return _page_visit(share, cursor, limit)
