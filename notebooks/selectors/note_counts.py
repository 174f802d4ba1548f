"""Live note counts from the counts the writes keep (`NoteCount`, migration 0022), for
the library sidebar's per-notebook counts and the "of N" of an unfiltered list — so
neither counts every note of the account on every page.

The kept counts are of active notes per place (notebook, or Personal). What they do not
know is read beside them, in the same statement (one snapshot), from indexes that hold
only a few rows:

* a note past its expiry is still `active` until the expire job runs: those are taken
  off (the partial index `note_expiry_due`);
* a notebook's own state (archived, deleted) and the caller's grant decide which places
  count at all;
* a list counts notes created up to its first page's time (the cursor's ceiling): any
  made later are taken off (`note_created`).

Callers hold a tenant transaction.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet

from grove.kernel.actor import Actor
from notebooks.models import Note, NoteCount, Status
from notebooks.selectors.access import grant_filter, live_filter, live_notebooks

_SIDEBAR = """
SELECT c.notebook_id, c.notes - coalesce(e.expired, 0) FROM (
    SELECT notebook_id, sum(notes) AS notes FROM notebooks_notecount
    WHERE notebook_id IS NOT NULL GROUP BY notebook_id
) c LEFT JOIN (
    SELECT notebook_id, count(*) AS expired FROM notebooks_note
    WHERE status = 'active' AND expires_at <= %s AND notebook_id IS NOT NULL
    GROUP BY notebook_id
) e ON e.notebook_id = c.notebook_id
"""


def notebook_live_counts(actor: Actor, *, now: datetime) -> dict[uuid.UUID, int]:
    """How many live notes (active, not past expiry) each granted notebook holds,
    whatever the notebook's own state; notebooks with none are left out. Row-level
    security keeps both reads to the account."""
    with connection.cursor() as cursor:
        cursor.execute(_SIDEBAR, [now])
        return {notebook_id: int(notes) for notebook_id, notes in cursor.fetchall()
                if notes > 0 and actor.grant.allows(notebook_id)}


def live_places(actor: Actor) -> Q:
    """The places (on `notebook_id`) whose active notes a list shows: granted, and
    Personal or a notebook neither archived nor deleted — `live_filter`'s rule for the
    notebook, as a condition both notes and kept counts can take."""
    return grant_filter(actor) & (
        Q(notebook_id__isnull=True) | Q(notebook_id__in=live_notebooks(actor).values("id")))


def live_note_count(actor: Actor, *, within: Q, now: datetime, ceiling: datetime) -> int:
    """The number of notes `live_filter` gives in the places `within` (a condition on
    `notebook_id`: everything, Personal, a notebook or a subtree) created up to
    `ceiling` — what `Note.objects.filter(live_filter(actor, now=now), within,
    created_at__lte=ceiling).count()` gives, in one statement over a few rows."""
    places = live_places(actor) & within
    kept = NoteCount.objects.filter(places).values("notes")
    expired = Note.objects.filter(places, account_id=actor.account_id, status=Status.ACTIVE,
                                  expires_at__lte=now).values("id")
    late = Note.objects.filter(live_filter(actor, now=now), within,
                               created_at__gt=ceiling).values("id")
    parts = [_sql(kept), _sql(expired), _sql(late)]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT coalesce(sum(s.notes), 0) FROM ({parts[0][0]}) s)"  # noqa: S608 - compiled querysets
            f" - (SELECT count(*) FROM ({parts[1][0]}) s)"
            f" - (SELECT count(*) FROM ({parts[2][0]}) s)",
            [*parts[0][1], *parts[1][1], *parts[2][1]])
        return int(cursor.fetchone()[0])


def _sql(queryset: QuerySet[Any]) -> tuple[str, tuple[Any, ...]]:
    sql, params = queryset.query.sql_with_params()
    return sql, tuple(params)
