"""As-of reads (SPEC §4): what the notes said at an instant, read from their revisions.

Every save writes a full snapshot of the note (`Revision`: content, kind, notebook,
status, tags, pinning, importance, expiry), so the library at an instant T is, for each
note, its latest revision made at or before T:

* a note created after T has no such revision: it is left out;
* a note deleted since (in the trash) still has its revisions: it is included if it was
  live at T. A purged note is gone with its history;
* the revision says where the note was, so the grant is checked on **that** notebook: a
  note moved since into a notebook the caller may read does not bring along what it
  said while it was somewhere the caller may not read; one moved out is still read;
* a notebook archived or deleted at or before T hides its notes then, as it does now;
  a note whose expiry had passed at T is out, even if the expiry job ran later.

`asOf` is a day (`2026-05-31`: to the end of that day), a month (`2026-05`: to the end
of the month) or an ISO 8601 time, to the end of what it names (`17:00` the minute,
`17:00:05.123` that millisecond); a day, a month or a time without an offset
is read in the caller's time zone — `timeZone` where the call takes one, else the
account's. A day or month not yet over, or a moment still to come, is read up to now.
`AsOf.out()` is the `asOf` every answer states: the instant used, with its zone.
Notes read as of T are `Note` objects carrying the revision's fields (`note_then`), so
every output shape (NoteOut, recall items, tool notes) says of them what it says of a
note — the revision's versioned id, its content, and the note's `supersededBy` today.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from grove.kernel.actor import Actor
from grove.kernel.errors import Invalid
from grove.kernel.schemas import AS_OF_MAX_CHARS
from grove.kernel.validation import clean_time_zone
from notebooks.models import Note, NoteFields, Revision, Status
from notebooks.selectors.access import grant_filter

_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_FRACTION = re.compile(r"\.[0-9]+")
_CLOCK = re.compile(r"[T ]\d{2}:\d{2}(:\d{2}(?:[.,](\d+))?)?")
_INVALID = ("asOf must be a day (2026-05-31), a month (2026-05) or an ISO 8601 time "
            "(2026-05-31T17:00:00+02:00).")


@dataclass(frozen=True)
class AsOf:
    """The instant a read is made at (inclusive), the zone it was read in, and what was
    asked."""

    instant: datetime
    zone: ZoneInfo
    asked: str

    def out(self) -> str:
        """The instant used, ISO 8601 in the zone it was read in."""
        return self.instant.astimezone(self.zone).isoformat()


def clean_as_of(value: Any, *, actor: Actor, time_zone: str | None = None) -> AsOf | None:
    """`value` read as an instant (None: no as-of read). Invalid `invalid_as_of` for
    anything else, a moment to come included; `invalid_time_zone` for a bad zone."""
    if value is None:
        return None
    zone = clean_time_zone(time_zone) if time_zone is not None else None
    if not isinstance(value, str) or not value.strip() or len(value) > AS_OF_MAX_CHARS:
        raise Invalid(_INVALID, code="invalid_as_of")
    text = value.strip()
    if zone is None:
        from notebooks.selectors.time_window import account_zone

        zone = account_zone(actor)
    _start, end = _period(text, zone)
    # A moment still to come reads the notes as they are: nothing later exists yet. In
    # UTC: PostgreSQL refuses offsets beyond ±15:59, which ISO 8601 allows.
    return AsOf(instant=min(end, timezone.now()).astimezone(UTC), zone=zone, asked=text)


def _period(text: str, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """When `text` begins and its last instant: a day or a month spans, a time is one."""
    try:
        month = _MONTH.match(text)
        if month:
            first = date(int(month[1]), int(month[2]), 1)
            following = (first + timedelta(days=32)).replace(day=1)
            return _midnight(first, zone), _midnight(following, zone) - timedelta(microseconds=1)
        if _DAY.match(text):
            day = date.fromisoformat(text)
            return _midnight(day, zone), _midnight(day + timedelta(days=1), zone) \
                - timedelta(microseconds=1)
        # Python reads a fraction of at most six digits, and T and Z in capitals.
        moment = datetime.fromisoformat(_FRACTION.sub(
            lambda m: m[0][:7], text.replace("t", "T").replace("z", "Z")))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=zone)
        return moment, moment + _precision(text) - timedelta(microseconds=1)
    except (ValueError, OverflowError):
        raise Invalid(_INVALID, code="invalid_as_of") from None


def _precision(text: str) -> timedelta:
    """How long the time `text` names lasts: to the minute, the second or the fraction
    it is written to — so a time copied from an answer (REST gives milliseconds) covers
    the revision made within that millisecond."""
    clock = _CLOCK.search(text)
    if clock is None:
        return timedelta(hours=1)
    if clock[1] is None:
        return timedelta(minutes=1)
    if clock[2] is None:
        return timedelta(seconds=1)
    return timedelta(microseconds=10 ** (6 - min(len(clock[2]), 6)))


def _midnight(day: date, zone: ZoneInfo) -> datetime:
    return datetime.combine(day, time(0), tzinfo=zone)


# -- the notes at an instant -------------------------------------------------------------------


def latest_at(at: AsOf) -> QuerySet[Revision]:
    """Each note's latest revision made at or before the instant (caller holds a tenant
    transaction: row-level security keeps it to the account): a revision whose version
    is its note's highest by then — for each row, one backward step on the (note,
    version) index, which the ORDER BY … LIMIT 1 asks for whatever the planner believes
    of the table's size (`DISTINCT ON` sorted every revision, and an anti-join was
    planned as a scan of them all per row)."""
    newest = (Revision.objects.filter(note_id=OuterRef("note_id"), created_at__lte=at.instant)
              .order_by("-version").values("version")[:1])
    return Revision.objects.filter(created_at__lte=at.instant, version=Subquery(newest))


def granted_then(actor: Actor, at: AsOf) -> Q:
    """A revision the caller may read as of the instant: its notebook then inside the
    grant, and that notebook not archived or deleted by then."""
    moment = at.instant
    notebook_live = Q(notebook_id__isnull=True) | (
        (Q(notebook__archived_at__isnull=True) | Q(notebook__archived_at__gt=moment))
        & (Q(notebook__deleted_at__isnull=True) | Q(notebook__deleted_at__gt=moment)))
    return grant_filter(actor) & notebook_live


def live_then(at: AsOf, status: str = Status.ACTIVE) -> Q:
    """A revision whose note had `status` at the instant (and, for active, whose expiry
    had not passed)."""
    condition = Q(status=status)
    if status == Status.ACTIVE:
        condition &= Q(expires_at__isnull=True) | Q(expires_at__gt=at.instant)
    return condition


def revisions_at(actor: Actor, at: AsOf, place: Q, *, status: str = Status.ACTIVE
                 ) -> QuerySet[Revision]:
    """The notes as they were at the instant, in `place` (a condition on the revision's
    notebook, e.g. `Scope.place_q()`), granted then and with `status` then — as
    revisions, each with its note (`note_then` makes them notes)."""
    return (latest_at(at).filter(granted_then(actor, at) & live_then(at, status) & place)
            .select_related("note").order_by())


def note_then(revision: Revision) -> Note:
    """The note as the revision left it: the revision's fields on a copy of the note
    (its version, and `updated_at` the revision's time). What a revision does not hold
    — the source path, `supersededBy` — is the note's today."""
    note = copy.copy(revision.note)
    for name in NoteFields.snapshot_field_names():
        setattr(note, name, getattr(revision, name))
    note.version = revision.version
    note.updated_at = revision.created_at
    for name in ("archived_at", "expired_at", "deleted_at"):
        setattr(note, name, None if revision.status == Status.ACTIVE else getattr(note, name))
    return note
