"""Share links, the owner's side (SPEC §9): create, list, revoke. Only the owner signed
in to the website may publish — an API key or OAuth client gets 403 `session_required`,
whatever its grant. Sharing a target that already has a live link returns that link."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from grove.kernel.actor import Actor
from grove.kernel.errors import Conflict, Invalid, NotFound
from grove.kernel.tenancy import tenant
from notebooks.selectors.access import access_note, access_notebook
from sharing.models import Share
from sharing.schemas import PublicShare, ShareOut, ShareVisit
from sharing.selectors import share_content, share_out


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
                raise Conflict("Only an active note can be shared.", code="note_not_active")
            target = {"note_id": note.id}
        else:
            notebook = access_notebook(actor, notebook_id)
            if notebook.archived_at is not None:
                raise Conflict("An archived notebook cannot be shared.",
                               code="notebook_archived")
            target = {"notebook_id": notebook.id}
        live = Share.objects.select_related("note", "notebook")\
            .filter(revoked_at__isnull=True, **target).first()
        if live is not None:
            return share_out(live), False
        try:
            with transaction.atomic():
                share = Share.objects.create(
                    account_id=actor.account_id, include_subnotebooks=include_subnotebooks,
                    allow_indexing=allow_indexing, **target)
        except IntegrityError:  # a concurrent request shared it first
            share = Share.objects.get(revoked_at__isnull=True, **target)
            return share_out(share), False
        share = Share.objects.select_related("note", "notebook").get(id=share.id)
        return share_out(share), True


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


def count_view(share: PublicShare) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT grove_share_viewed(%s)", [share.token])


def share_visit(*, token: str, note_id: Any = None, cursor: str | None = None,
                limit: Any = None) -> ShareVisit:
    """A visitor opens a link (or, with `note_id`, one of its notes): what it shows
    (`selectors.share_content`), and the view counted. Refusals (NotFound
    `share_not_found`, PageRefused `invalid_page`) count nothing. No account context:
    everything goes through the share's security-definer functions."""
    visit = share_content(token=token, note_id=note_id, cursor=cursor, limit=limit)
    count_view(visit.share)
    return visit
