"""Time-aware recall (SPEC §4): the window a query's time expression means, as the
conditions recall's arms apply.

`time_window(actor=..., query=..., time_zone=...)` reads the query's first time
expression (`notebooks.dates.time_expression`) against today in the caller's time zone
— `timeZone` when given, else the account's setting — and returns a `TimeWindow`, or
None when the query has none (most queries: a cheap pattern test, a few microseconds,
decides that before any grammar runs, and no time zone is looked up).

A note is **in the window** when one of its dates falls in it: a day the note states
(`Note.stated_dates`, GiST-indexed), or the instant it was created or last updated,
compared in the caller's time zone. The window then either

* **filters** — only notes in it are recalled — when the expression is a bound
  ("since March", "before 2024", "between … and …", "from … to …") or the query asks
  for nothing but the time ("notes from May 2023": then the window's notes are listed,
  most recently updated first); or
* **boosts** — notes in it come first, the others still follow — when the time is one
  part of a question ("what did we decide last week about billing").

Either way the arms read the query without its time words, and `meta.timeWindow` says
what was understood.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet
from django.utils import timezone
from psycopg.types.range import Range

from grove.kernel.actor import Actor
from grove.kernel.validation import clean_time_zone
from notebooks.dates import FILTER_WORDS, HINT, time_expression
from notebooks.models import Note
from notebooks.schemas.notes import RecallMeta, RecallOut, TimeWindowOut
from notebooks.selectors.recall_budget import within_budget
from notebooks.selectors.truth import Truth

# Words that ask for notes without saying what about: a query of only these (after its
# time words are taken out) lists the window.
_EMPTY_WORDS = frozenset("""
a about all an and any anything are at did do does done everything for from give happen
happened have i in is it list me my note notes of on our recall remember saved show stuff
that the there thing things this to us was we were what which write wrote written you
""".split())


@dataclass(frozen=True)
class TimeWindow:
    start: date | None  # first day; None = open
    end: date | None  # the day after the last; None = open
    zone: ZoneInfo
    expression: str
    mode: Literal["filter", "boost"]
    rest: str  # the query without its time words; "" when it asked only for the time
    # The arms' hits found in the window (filled by them, read by the fusion).
    inside: set[uuid.UUID] = field(default_factory=set, compare=False)

    @property
    def filters(self) -> bool:
        return self.mode == "filter"

    def instants(self) -> tuple[datetime | None, datetime | None]:
        """The window as instants: midnight in the caller's zone at either end."""
        return tuple(  # type: ignore[return-value]
            None if day is None else datetime.combine(day, time(0), tzinfo=self.zone)
            for day in (self.start, self.end))

    def q(self, prefix: str = "") -> Q:
        """The notes in the window (`prefix`: the path to the note, e.g. `note__`)."""
        since, until = self.instants()
        condition = Q(**{f"{prefix}stated_dates__overlaps": (self.start, self.end)})
        for name in ("created_at", "updated_at"):
            bounds = {}
            if since is not None:
                bounds[f"{prefix}{name}__gte"] = since
            if until is not None:
                bounds[f"{prefix}{name}__lt"] = until
            condition |= Q(**bounds)
        return condition

    def out(self) -> TimeWindowOut:
        last = None if self.end is None else self.end - timedelta(days=1)
        return TimeWindowOut.model_validate({
            "from": self.start and self.start.isoformat(), "to": last and last.isoformat(),
            "expression": self.expression, "mode": self.mode})


def lexical_arguments(window: TimeWindow | None) -> list[Any]:
    """`grove_lexical_matches`'s last three arguments: the days, the same span as
    instants, and whether to keep only the notes in it (migration notebooks 0024)."""
    if window is None:
        return [None, None, False]
    since, until = window.instants()
    return [Range(window.start, window.end, "[)"), Range(since, until, "[)"), window.filters]


def time_window(*, actor: Actor, query: str | None, time_zone: str | None
                ) -> tuple[TimeWindow | None, str | None]:
    """The window of `query`'s time expression (or None), and the query the arms read:
    without its time words ("" when it had nothing else). A `time_zone` that is not an
    IANA name is `invalid_time_zone` whether or not the query speaks of time."""
    zone = clean_time_zone(time_zone) if time_zone is not None else None
    if not query or not HINT.search(query):
        return None, query
    if zone is None:
        zone = account_zone(actor)
    found = time_expression(query, timezone.now().astimezone(zone).date())
    if found is None:
        return None, query
    words = set(re.findall(r"[a-z0-9']+", found.rest.lower())) - _EMPTY_WORDS
    rest = found.rest if words else ""
    mode: Literal["filter", "boost"] = "filter" if (
        found.bound in FILTER_WORDS or not rest) else "boost"
    return TimeWindow(start=found.start, end=found.end, zone=zone, expression=found.text,
                      mode=mode, rest=rest), rest


def account_zone(actor: Actor) -> ZoneInfo:
    """The time zone the account's owner chose in Settings (UTC until they do)."""
    from grove.models import Account

    name = Account.objects.filter(id=actor.account_id).values_list(
        "time_zone", flat=True).first()
    try:
        return ZoneInfo(name or "UTC")
    except (ValueError, OSError):  # a zone the machine's database no longer has
        return ZoneInfo("UTC")


def filtering(window: TimeWindow | None, prefix: str = "") -> Q:
    """The window's condition when it filters (none otherwise), for `recall.Searched`."""
    return window.q(prefix) if window is not None and window.filters else Q()


def outside(window: TimeWindow | None, note_id: uuid.UUID) -> bool:
    """Ranks a hit after the window's (fusion's first sort key; False without a window)."""
    return window is not None and note_id not in window.inside


def out(window: TimeWindow | None) -> TimeWindowOut | None:
    return None if window is None else window.out()


def flag(window: TimeWindow | None, prefix: str = "") -> dict[str, ExpressionWrapper]:
    """An `in_window` annotation for the arms' queries, or none without a window."""
    if window is None:
        return {}
    return {"in_window": ExpressionWrapper(window.q(prefix), output_field=BooleanField())}


def note_inside(window: TimeWindow | None, rows: Iterable[Sequence[Any]], column: int) -> None:
    """Record which of an arm's hits (rows whose first column is the note id) are in the
    window, by their `in_window` column."""
    if window is not None:
        window.inside.update(row[0] for row in rows if row[column])


def window_list(notes: QuerySet[Note], window: TimeWindow, limit: int, max_chars: int,
                pending: int, truth: Truth, profile: str | None) -> RecallOut:
    """A query of nothing but time words ("notes from May 2023"): the window's notes in
    scope (`notes`), most recently updated first, within recall's budget."""
    inside = notes.filter(window.q())
    ranked = inside.order_by("-updated_at", "id")[:limit]
    items = within_budget([(note, 1.0 / (rank + 1), ["window"], None)
                           for rank, note in enumerate(ranked)], limit, max_chars,
                          truth=truth, profile=profile)
    return RecallOut(data=items, meta=RecallMeta.of(
        returned=len(items), available=inside.count(), limit=limit, max_chars=max_chars,
        mode="window", pending=pending, policy=truth.policy, time_window=window.out()))
