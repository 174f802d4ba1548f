"""Recent activity (SPEC §10): revisions in the caller's scope since a time, newest first,
each with its note, version, kind of change and the connection that made it — "what did
my agents write today". Paged by signed cursor (`grove.kernel.paging`), bound to the
caller, the filters and a time ceiling fixed by the first page.

Scope is the grant applied to each note's *current* notebook, as for a note's history
(`note_history`): a connection sees every revision of a note it may read. A deleted
note's revisions stay in the list — an owner wants to see what an agent deleted — but
without their text (`title` empty), since its content is no longer readable.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import Q
from django.utils import timezone

from grove.interfaces.rendering import note_title
from grove.kernel.actor import READ, Actor
from grove.kernel.errors import Invalid
from grove.kernel.paging import caller_binding, cursor_after, cursor_read, keyset_page
from grove.kernel.schemas import ListMeta
from grove.kernel.tenancy import tenant
from notebooks import rules
from notebooks.models import Revision, Status
from notebooks.rules import EVERYWHERE, notebook_paths, parse_uuid, place_key, since_instant
from notebooks.schemas.briefs import BYLINE_SYSTEM, ActivityItem, ActivityPage
from notebooks.selectors.access import grant_filter, notebooks_visible_to, resolve_scope
from notebooks.selectors.vision import byline, connection_names

ACTIVITY_CURSOR_SALT = "grove.activity.cursor"
ORDER = ("-created_at", "-id")
# `connection_id` filter value for changes made on the website (no connection).
WEBSITE = "website"


def _connection_filter(value: Any) -> uuid.UUID | str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.strip().lower() == WEBSITE:
        return WEBSITE
    return parse_uuid(value, what="connection id")


def activity_list(
    *,
    actor: Actor,
    since: datetime | date | None = None,
    notebook_id: Any = EVERYWHERE,
    connection_id: uuid.UUID | str | None = None,
    cursor: str | None = None,
    limit: int = rules.ACTIVITY_DEFAULT_LIMIT,
) -> ActivityPage:
    """One page of the revisions in scope made at or after `since` (default: 7 days
    ago; a date is its midnight UTC), newest first. `notebook_id`: everything granted
    (`EVERYWHERE`), Personal (None) or a notebook; `connection_id`: only changes made by
    that connection, or `"website"` for the owner's own. Read-only."""
    actor.require(READ)
    if isinstance(limit, bool) or not isinstance(limit, int) \
            or not 1 <= limit <= rules.ACTIVITY_MAX_LIMIT:
        raise Invalid(f"limit must be a whole number from 1 to {rules.ACTIVITY_MAX_LIMIT}.",
                      code="invalid_limit")
    if since is not None and not isinstance(since, date):
        raise Invalid("since must be an ISO 8601 date or time.", code="invalid_since")
    by = _connection_filter(connection_id)
    place = place_key(notebook_id)
    fingerprint = hashlib.sha256(json.dumps(
        {"since": None if since is None else since.isoformat(), "place": place,
         "by": str(by)},
        sort_keys=True).encode()).hexdigest()[:32]
    opened = cursor_read(cursor, salt=ACTIVITY_CURSOR_SALT, binding=caller_binding(actor),
                         fingerprint=fingerprint)

    with tenant(actor):
        actor.require(READ)
        # The first page fixes the ceiling, and the default window is counted back from
        # it, so every page of one listing has the same bounds.
        ceiling = opened.ceiling or timezone.now()
        since_at = since_instant(since, ZoneInfo("UTC"), ceiling,
                                 rules.ACTIVITY_DEFAULT_DAYS)
        scope = resolve_scope(actor, notebook_id)
        revisions = Revision.objects.filter(
            grant_filter(actor, "note__notebook_id"), scope.place_q("note__"),
            created_at__gte=since_at, created_at__lte=ceiling)
        if scope.everywhere:
            # Not a note in a deleted notebook (what a connection could never reach).
            revisions = revisions.filter(Q(note__notebook__isnull=True)
                                         | Q(note__notebook__deleted_at__isnull=True))
        if by == WEBSITE:
            revisions = revisions.filter(connection__isnull=True).exclude(
                reason=Revision.Reason.EXPIRE)
        elif by is not None:
            revisions = revisions.filter(connection_id=by)
        available = revisions.count()
        page = keyset_page(revisions.select_related("note").only(
            "id", "version", "reason", "kind", "content", "notebook_id", "connection_id",
            "created_at", "note_id", "note__status", "note__notebook_id"),
            order=ORDER, after=opened.key, limit=limit)
        names = connection_names()
        places = notebook_paths(notebooks_visible_to(actor))
        items = [_item(revision, names, places) for revision in page.rows]
        next_cursor = cursor_after(opened, page, ceiling=ceiling, salt=ACTIVITY_CURSOR_SALT)
    return ActivityPage(data=items, meta=ListMeta.of(
        returned=len(items), available=available, limit=limit, next_cursor=next_cursor))


def _item(revision: Revision, names: dict[uuid.UUID, str],
          places: dict[uuid.UUID, str]) -> ActivityItem:
    deleted = revision.note.status == Status.DELETED
    who = (BYLINE_SYSTEM if revision.reason == Revision.Reason.EXPIRE and
           revision.connection_id is None else byline(revision.connection_id, names))
    fields: dict[str, Any] = {
        "id": revision.versioned_id, "change": revision.reason, "kind": revision.kind,
        "title": "" if deleted else note_title(revision.content, 100),
        "at": revision.created_at, "by": who}
    notebook = revision.note.notebook_id
    if notebook is not None:
        fields["notebook"] = places.get(notebook, "(a notebook you cannot see)")
    if revision.connection_id is not None:
        fields["connection_id"] = revision.connection_id
    return ActivityItem(**fields)
