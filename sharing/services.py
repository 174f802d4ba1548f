"""Share links, the owner's side (SPEC §9): create, list, revoke. Only the owner signed
in to the website may publish — an API key or OAuth client gets 403 `session_required`,
whatever its grant. Sharing a target that already has a live link returns that link."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from grove.interfaces.rendering import first_line
from grove.kernel.actor import Actor
from grove.kernel.errors import Invalid, NotFound
from grove.kernel.schemas import Out
from grove.kernel.tenancy import tenant
from notebooks.selectors.access import access_note, access_notebook
from sharing.models import Share
from sharing.tokens import token_for


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


def share_url(token: str) -> str:
    return settings.GROVE_BASE_URL.rstrip("/") + reverse("public-share", args=[token])


def _title(share: Share) -> str:
    if share.notebook_id is not None:
        return share.notebook.name if share.notebook else ""
    return first_line(share.note.content) if share.note else ""


def _available(share: Share) -> bool:
    if share.note is not None:
        note = share.note
        return note.status == "active" and (note.expires_at is None
                                            or note.expires_at > timezone.now())
    notebook = share.notebook
    return notebook is not None and notebook.deleted_at is None \
        and notebook.archived_at is None


def _out(share: Share) -> ShareOut:
    token = token_for(share.id)
    return ShareOut(
        id=share.id, kind="note" if share.note_id else "notebook", note_id=share.note_id,
        notebook_id=share.notebook_id, title=_title(share), token=token,
        url=share_url(token), include_subnotebooks=share.include_subnotebooks,
        allow_indexing=share.allow_indexing, view_count=share.view_count,
        last_viewed_at=share.last_viewed_at, created_at=share.created_at,
        available=_available(share))


def share_create(*, actor: Actor, note_id: Any = None, notebook_id: Any = None,
                 include_subnotebooks: bool = False,
                 allow_indexing: bool = False) -> tuple[ShareOut, bool]:
    """Publish a note or a notebook. Returns (share, created): a target with a live link
    returns that link (its options unchanged)."""
    actor.require_session()
    if (note_id is None) == (notebook_id is None):
        raise Invalid("Share one note or one notebook.", code="invalid_share_target")
    if not isinstance(include_subnotebooks, bool) or not isinstance(allow_indexing, bool):
        raise Invalid("includeSubnotebooks and allowIndexing are true or false.",
                      code="invalid_argument")
    if note_id is not None and include_subnotebooks:
        raise Invalid("Only a notebook has sub-notebooks.", code="invalid_argument")
    with tenant(actor):
        target: dict[str, Any]
        if note_id is not None:
            note = access_note(actor, note_id)
            if note.status != "active":
                raise Invalid("Only an active note can be shared.", code="note_not_active")
            target = {"note_id": note.id}
        else:
            notebook = access_notebook(actor, notebook_id)
            if notebook.archived_at is not None:
                raise Invalid("An archived notebook cannot be shared.",
                              code="notebook_archived")
            target = {"notebook_id": notebook.id}
        live = Share.objects.select_related("note", "notebook")\
            .filter(revoked_at__isnull=True, **target).first()
        if live is not None:
            return _out(live), False
        try:
            with transaction.atomic():
                share = Share.objects.create(
                    account_id=actor.account_id, include_subnotebooks=include_subnotebooks,
                    allow_indexing=allow_indexing, **target)
        except IntegrityError:  # a concurrent request shared it first
            share = Share.objects.get(revoked_at__isnull=True, **target)
            return _out(share), False
        share = Share.objects.select_related("note", "notebook").get(id=share.id)
        return _out(share), True


def share_list(*, actor: Actor) -> list[ShareOut]:
    """The account's live share links, newest first, with their view counts."""
    actor.require_session()
    with tenant(actor):
        shares = Share.objects.select_related("note", "notebook")\
            .filter(revoked_at__isnull=True).order_by("-created_at", "-id")
        return [_out(s) for s in shares]


def share_for(*, actor: Actor, note_id: Any = None,
              notebook_id: Any = None) -> ShareOut | None:
    """The live link of a note or notebook, if it has one (for its page)."""
    actor.require_session()
    with tenant(actor):
        target = {"note_id": note_id} if note_id is not None else {"notebook_id": notebook_id}
        share = Share.objects.select_related("note", "notebook")\
            .filter(revoked_at__isnull=True, **target).first()
        return _out(share) if share else None


def share_revoke(*, actor: Actor, share_id: Any) -> None:
    """End a link, at once and for good (its next request is a 404)."""
    actor.require_session()
    try:
        key = uuid.UUID(str(share_id))
    except ValueError:
        raise NotFound("No such share.", code="share_not_found") from None
    with tenant(actor):
        revoked = Share.objects.filter(id=key, revoked_at__isnull=True)\
            .update(revoked_at=timezone.now())
        if not revoked:
            raise NotFound("No such share.", code="share_not_found")
