"""Reads of visions (SPEC §10): the account's and a notebook's, with their history.

The account's vision is read by every caller that may read at all (it heads every
brief); a notebook's by callers granted that notebook. A vision never enters recall or
search: those read notes only, and a vision is not a note.
"""

from __future__ import annotations

import uuid

from django.db.models import Model, QuerySet

from grove.kernel.actor import READ, Actor
from grove.kernel.tenancy import tenant
from grove.models import Connection
from notebooks.models import Vision, VisionRevision
from notebooks.rules import parse_uuid
from notebooks.schemas.briefs import (
    BYLINE_WEBSITE,
    VisionOut,
    VisionRevisionOut,
)
from notebooks.selectors.access import access_notebook

VISION_HISTORY_MAX = 100


def connection_names() -> dict[uuid.UUID, str]:
    """Every connection of the tenant's account by id, with its name (a short table:
    read once per request that names who made a change). Caller holds a tenant tx."""
    return dict(Connection.objects.values_list("id", "name"))


def byline(connection_id: uuid.UUID | None, names: dict[uuid.UUID, str]) -> str:
    """Who made a change: the connection's name, or the owner on the website."""
    if connection_id is None:
        return BYLINE_WEBSITE
    return names.get(connection_id, "a removed connection")


def vision_row(actor: Actor, notebook_id: uuid.UUID | None) -> Vision | None:
    """The vision of a notebook the caller may read (checked), or the account's (None).
    Caller holds a tenant transaction."""
    if notebook_id is not None:
        notebook_id = access_notebook(actor, notebook_id).id
    return place_filter(Vision.objects.all(), notebook_id).first()


def place_filter[M: Model](rows: QuerySet[M], notebook_id: uuid.UUID | None) -> QuerySet[M]:
    """The rows of a place — a notebook, or the account's own (None): visions, truth
    declarations, negative claims."""
    if notebook_id is None:
        return rows.filter(notebook__isnull=True)
    return rows.filter(notebook_id=notebook_id)


def vision_out(row: Vision | None, notebook_id: uuid.UUID | None,
               names: dict[uuid.UUID, str]) -> VisionOut:
    if row is None:
        return VisionOut(notebook_id=notebook_id, content="", version=0, updated_at=None,
                         updated_by=None)
    return VisionOut(notebook_id=row.notebook_id, content=row.content, version=row.version,
                     updated_at=row.updated_at, updated_by=byline(row.updated_by_id, names))


def vision_get(*, actor: Actor, notebook_id: uuid.UUID | str | None = None) -> VisionOut:
    """The account's vision (`notebook_id` None) or a notebook's; version 0 and empty
    when none was written. A notebook the caller may not see is NotFound."""
    actor.require(READ)
    with tenant(actor):
        actor.require(READ)
        row = vision_row(actor, _notebook(notebook_id))
        place = row.notebook_id if row is not None else _notebook(notebook_id)
        return vision_out(row, place, connection_names())


def vision_revisions(*, actor: Actor, notebook_id: uuid.UUID | str | None = None
                     ) -> list[VisionRevisionOut]:
    """A vision's revisions, newest first (at most VISION_HISTORY_MAX)."""
    actor.require(READ)
    with tenant(actor):
        actor.require(READ)
        row = vision_row(actor, _notebook(notebook_id))
        if row is None:
            return []
        names = connection_names()
        revisions = VisionRevision.objects.filter(vision=row).order_by("-version")
        return [VisionRevisionOut(version=r.version, content=r.content,
                                  created_at=r.created_at,
                                  by=byline(r.connection_id, names),
                                  operation_id=r.operation_id)
                for r in revisions[:VISION_HISTORY_MAX]]


def _notebook(notebook_id: uuid.UUID | str | None) -> uuid.UUID | None:
    return None if notebook_id is None else parse_uuid(notebook_id, what="notebook id")
