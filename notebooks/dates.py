"""Dates in text, without a model (SPEC §4, time-aware recall).

Two readers share one grammar of date literals:

* `stated_dates(content)`: the calendar dates a note states — ISO days and months
  (`2023-05-03`, `2023/05/03`, `2023-05`), `May 3, 2023`, `3 May 2023`, `May 2023`,
  `Q2 2023`, and a year after a bounding word ("in 2019", "since 2021") — as day
  ranges, stored with the note at save time (`Note.stated_dates`). Only forms that
  carry their own year: a note's "last week" or "May 3" depends on when it was
  written, which the note's own timestamps already say.
* `time_expression(query, today)`: the first time expression of a recall query, resolved
  against `today` in the caller's time zone, as a window of days `[start, end)` (either
  side open) and the query with the expression taken out. Besides the literals above:
  `today`, `yesterday`, `this/last/next week|month|quarter|year`, `the last/past 3
  days|weeks|months|years`, `two weeks ago`, `earlier this month`, `last Monday`, `Q3`,
  `in May` / `since March` / `before 2024` (a month or year alone needs such a word:
  "may" is also a verb, "2023" also a number), and the bounds `since`, `after`,
  `before`, `until`, `between … and …`, `from … to …`.

An event ("before the migration") is not a date: resolving it needs the notes themselves
or a model, so it is left in the query. Years outside 1900–2099 and impossible days
(2023-02-30) are not dates either. Why a grammar of our own and not a library:
docs/architecture.md, "Time-aware recall".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Protocol

MIN_YEAR, MAX_YEAR = 1900, 2099
MAX_STATED = 64  # ranges kept per note

_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
                "september", "october", "november", "december")
MONTH_NAME = (r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
              r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?")
MONTH = rf"(?:{MONTH_NAME})\.?"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "a few": 3, "few": 3, "a couple of": 2, "couple of": 2, "several": 3}
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4,
             "4th": 4}
NUMBER = r"(?:\d{1,3}|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six" \
         r"|seven|eight|nine|ten|eleven|twelve)"
UNIT = r"(?:day|week|month|quarter|year)s?"
DAY_NUMBER = r"(?:[12]\d|3[01]|0?[1-9])"
DAY = DAY_NUMBER + r"(?:st|nd|rd|th)?"
YEAR = r"(?:19|20)\d\d"
# "may" as a verb: a month alone is a date only after a bounding word, and not before these.
_VERB_AFTER_MAY = re.compile(
    r"\s+(?:be|have|not|also|still|well|need|help|cause|lead|result|affect|reduce"
    r"|increase|improve|contribute|play|explain|depend|vary|differ|occur|use|get)\b")

Span = tuple[date | None, date | None]  # [start, end): calendar days, None = open


def _month_number(name: str) -> int:
    name = name.rstrip(".").lower()
    return next(i for i, full in enumerate(_MONTH_NAMES, 1) if full.startswith(name[:3]))


def _day(y: int, m: int, d: int) -> Span | None:
    if not MIN_YEAR <= y <= MAX_YEAR:
        return None
    try:
        start = date(y, m, d)
    except ValueError:  # 2023-02-30, month 13
        return None
    return start, start + timedelta(days=1)


def _month(y: int, m: int) -> Span | None:
    if not MIN_YEAR <= y <= MAX_YEAR or not 1 <= m <= 12:
        return None
    return date(y, m, 1), (date(y + 1, 1, 1) if m == 12 else date(y, m + 1, 1))


def _months(y: int, m: int, count: int) -> Span | None:
    first, last = _month(y, m), _month(y + (m + count - 2) // 12, (m + count - 2) % 12 + 1)
    return (first[0], last[1]) if first and last else None


def _year(y: int) -> Span | None:
    return (date(y, 1, 1), date(y + 1, 1, 1)) if MIN_YEAR <= y <= MAX_YEAR else None


def _quarter(y: int, q: int) -> Span | None:
    return _months(y, 3 * q - 2, 3)


def _num(text: str) -> int:
    text = text.strip()
    return int(text) if text.isdigit() else _NUMBERS[text]


# -- atoms -----------------------------------------------------------------------------------
# Each reads a match into a span, given today and, in a range, the year of the other end
# (so "from March to May 2024" is March 2024).

class Groups(Protocol):
    """A match's named groups (`re.Match`, or one read in lower case)."""

    def __getitem__(self, key: str) -> Any: ...


Resolver = Callable[[Groups, date, "int | None"], "Span | None"]


def _past_year(month: int, today: date, year: int | None) -> int:
    """A month named without a year: in `year` when the range gives one, else its most
    recent occurrence (this month counts)."""
    if year is not None:
        return year
    return today.year if month <= today.month else today.year - 1


def _unit_span(unit: str, day: date) -> Span:
    """The calendar unit (week from Monday) containing `day`."""
    if unit == "day":
        return day, day + timedelta(days=1)
    if unit == "week":
        start = day - timedelta(days=day.weekday())
        return start, start + timedelta(days=7)
    if unit == "month":
        return _month(day.year, day.month) or (day, day)
    if unit == "quarter":
        return _quarter(day.year, (day.month - 1) // 3 + 1) or (day, day)
    return _year(day.year) or (day, day)


def _shift(day: date, unit: str, count: int) -> date:
    """`day` moved back `count` units (forward when negative), clamped to the month's end."""
    if unit == "day":
        return day - timedelta(days=count)
    if unit == "week":
        return day - timedelta(weeks=count)
    months = {"month": 1, "quarter": 3, "year": 12}[unit] * count
    index = day.year * 12 + day.month - 1 - months
    y, m = divmod(index, 12)
    m += 1
    while True:
        try:
            return date(y, m, day.day if day.day <= 28 else min(day.day, 31))
        except ValueError:
            day = day.replace(day=day.day - 1)


def _bounded(span: Span) -> Span | None:
    start, end = span
    for side in (start, end):
        if side is not None and not MIN_YEAR <= side.year <= MAX_YEAR + 1:
            return None
    return span


def _relative(m: Groups, today: date, _: int | None) -> Span | None:
    which, unit = m["which"], m["unit"].rstrip("s")
    if which == "past":  # "the past week": the last 7 days, today included
        return _bounded((_shift(today, unit, 1) + timedelta(days=1), today + timedelta(days=1)))
    step = {"this": 0, "current": 0, "last": 1, "previous": 1, "next": -1}[which]
    return _bounded(_unit_span(unit, _shift(today, unit, step)))


def _rolling(m: Groups, today: date, _: int | None) -> Span | None:
    count, unit = _num(m["n"]), m["unit"].rstrip("s")
    if not 1 <= count <= 999:
        return None
    return _bounded((_shift(today, unit, count) + timedelta(days=1), today + timedelta(days=1)))


def _ago(m: Groups, today: date, _: int | None) -> Span | None:
    count, unit = _num(m["n"]), m["unit"].rstrip("s")
    if not 1 <= count <= 999:
        return None
    return _bounded(_unit_span(unit, _shift(today, unit, count)))


def _weekday(m: Groups, today: date, _: int | None) -> Span | None:
    back = (today.weekday() - _WEEKDAYS.index(m["wd"])) % 7
    if m["which"] == "last" and back == 0:
        back = 7
    day = today - timedelta(days=back)
    return day, day + timedelta(days=1)


def _month_alone(m: Groups, today: date, year: int | None) -> Span | None:
    month = _month_number(m["mon"])
    which = m["which"]
    if which == "last":
        y = today.year if month < today.month else today.year - 1
    elif which == "this":
        y = today.year
    else:
        y = _past_year(month, today, year)
    return _month(y, month)


def _month_day(m: Groups, today: date, year: int | None) -> Span | None:
    month, d = _month_number(m["mon"]), int(re.sub(r"\D", "", m["d"]))
    if m["y"]:
        return _day(int(m["y"]), month, d)
    y = year if year is not None else (
        today.year if (month, d) <= (today.month, today.day) else today.year - 1)
    return _day(y, month, d)


def _quarter_alone(m: Groups, today: date, year: int | None) -> Span | None:
    q = int(m["q"])
    if year is None:
        year = today.year if q <= (today.month - 1) // 3 + 1 else today.year - 1
    return _quarter(year, q)


@dataclass(frozen=True)
class Atom:
    name: str
    pattern: re.Pattern[str]
    resolve: Resolver
    stated: bool = False  # also read in notes (carries its own year)
    needs_bound: bool = False  # a date only after a bounding word ("in", "since", …)


# Not inside a word, a version (v2.2023) or a longer number; a day may be followed by a
# time ("2023-05-03T10:00").
START = r"(?<![\w/.-])"
END = r"(?![0-9]|[/.-][0-9]|(?<![0-9])[A-Za-z]|(?<=[0-9])[A-SU-Za-su-z])"


def _atom(name: str, pattern: str, resolve: Resolver, **flags: bool) -> Atom:
    return Atom(name, re.compile(START + pattern + END, re.IGNORECASE), resolve, **flags)


ATOMS = (
    _atom("iso_day", rf"(?P<y>{YEAR})([-/.])(?P<m>0?[1-9]|1[0-2])\2(?P<d>{DAY_NUMBER})",
          lambda m, t, y: _day(int(m["y"]), int(m["m"]), int(m["d"])), stated=True),
    _atom("month_day_year", rf"(?P<mon>{MONTH})\s+(?P<d>{DAY}),?\s+(?P<y>{YEAR})",
          _month_day, stated=True),
    _atom("day_month_year", rf"(?P<d>{DAY})\s+(?:of\s+)?(?P<mon>{MONTH}),?\s+(?P<y>{YEAR})",
          _month_day, stated=True),
    _atom("month_year", rf"(?P<mon>{MONTH}),?\s+(?P<y>{YEAR})",
          lambda m, t, y: _month(int(m["y"]), _month_number(m["mon"])), stated=True),
    _atom("iso_month", rf"(?P<y>{YEAR})-(?P<m>0[1-9]|1[0-2])",
          lambda m, t, y: _month(int(m["y"]), int(m["m"])), stated=True),
    _atom("quarter_year", rf"(?:q(?P<q>[1-4])\s*(?P<y>{YEAR})|(?P<y2>{YEAR})\s*q(?P<q2>[1-4])"
          rf"|(?P<ord>first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter\s+(?:of\s+)?"
          rf"(?P<y3>{YEAR}))",
          lambda m, t, y: _quarter(int(m["y"] or m["y2"] or m["y3"]),
                                   int(m["q"] or m["q2"] or _ORDINALS[m["ord"].lower()])),
          stated=True),
    _atom("month_day", rf"(?:(?P<mon>{MONTH})\s+(?P<d>{DAY})(?P<y>)(?!\s*,?\s*\d)"
          rf"|(?P<d2>{DAY})\s+of\s+(?P<mon2>{MONTH}))",
          lambda m, t, y: _month_day(_Alias(m), t, y), needs_bound=True),
    _atom("today", r"(?P<w>today|yesterday|the day before yesterday)",
          lambda m, t, y: _unit_span("day", t - timedelta(
              days={"today": 0, "yesterday": 1}.get(m["w"].lower(), 2)))),
    _atom("earlier_this", rf"earlier\s+this\s+(?P<unit>{UNIT})",
          lambda m, t, y: (_unit_span(m["unit"].lower().rstrip("s"), t)[0],
                           t + timedelta(days=1))),
    _atom("relative", rf"(?:the\s+)?(?P<which>this|current|last|previous|next|past)\s+"
          rf"(?P<unit>{UNIT})", lambda m, t, y: _relative(_Lower(m), t, y)),
    _atom("rolling", rf"(?:the\s+)?(?:last|past|previous)\s+(?P<n>{NUMBER})\s+(?P<unit>{UNIT})",
          lambda m, t, y: _rolling(_Lower(m), t, y)),
    _atom("ago", rf"(?P<n>{NUMBER})\s+(?P<unit>{UNIT})\s+ago",
          lambda m, t, y: _ago(_Lower(m), t, y)),
    _atom("weekday", r"(?P<which>last|this\s+past|on)\s+(?P<wd>monday|tuesday|wednesday"
          r"|thursday|friday|saturday|sunday)", lambda m, t, y: _weekday(_Lower(m), t, y)),
    _atom("month_which", rf"(?P<which>last|this)\s+(?P<mon>{MONTH})",
          lambda m, t, y: _month_alone(_Lower(m), t, y)),
    _atom("quarter", r"q(?P<q>[1-4])", _quarter_alone, needs_bound=True),
    _atom("month", rf"(?P<which>)(?P<mon>{MONTH})", _month_alone, needs_bound=True),
    _atom("year", rf"(?P<y>{YEAR})", lambda m, t, y: _year(int(m["y"])), needs_bound=True),
)


class _Lower:
    """A match whose groups read lower-cased (the patterns ignore case)."""

    def __init__(self, match: Groups) -> None:
        self._match = match

    def __getitem__(self, key: str) -> str:
        value = self._match[key]
        return value.lower() if value else value


class _Alias(_Lower):
    """`month_day`'s second spelling ("3rd of May") read as the first."""

    def __getitem__(self, key: str) -> str:
        if key in ("mon", "d") and not self._match[key]:
            key += "2"
        return super().__getitem__(key)


# -- notes: stated dates ---------------------------------------------------------------------

def stated_dates(text: str) -> list[tuple[date, date]]:
    """The days, months and quarters `text` states with their year, as merged `[start,
    end)` ranges in order (at most `MAX_STATED`); a note that states none: []."""
    found: list[tuple[int, int, tuple[date, date]]] = []
    for atom in ATOMS:
        if not atom.stated and atom.name != "year":
            continue
        for m in atom.pattern.finditer(text):
            if atom.needs_bound and not _needs_bound_ok(text, m, atom):
                continue
            span = atom.resolve(m, date.min, None)
            if span is not None and span[0] is not None and span[1] is not None:
                found.append((m.start(), m.end(), (span[0], span[1])))
    # A longer form wins over what it contains ("May 3, 2023" over "May 2023"? never
    # both: each literal is read once, the longest at its place).
    found.sort(key=lambda f: (f[0], -f[1]))
    spans: list[tuple[date, date]] = []
    reach = -1
    for start, end, span in found:
        if start >= reach:
            spans.append(span)
            reach = end
    merged: list[tuple[date, date]] = []
    for start_day, end_day in sorted(spans):
        if merged and start_day <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end_day))
        else:
            merged.append((start_day, end_day))
    return merged[:MAX_STATED]


# -- queries: the time expression ------------------------------------------------------------

# A quick test that lets the many queries without a time word skip the grammar.
HINT = re.compile(
    rf"\d{{4}}|\b(?:{MONTH_NAME}|today|yesterday|day|week|month|quarter|year|q[1-4]|ago"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b", re.IGNORECASE)
_LEFT_BOUND = re.compile(
    r"(?:^|(?<=\s))(?P<word>since|after|before|until|till|up\s+to|through|prior\s+to|between"
    r"|from|in|during|on|for|around|within|throughout)\s+(?:the\s+)?$", re.IGNORECASE)
_COUNTED = re.compile(r"\s+[a-z]{3,}s\b")
_RIGHT_PAIR = re.compile(r"\s*(?:and|to|until|till|through|-|–)\s+", re.IGNORECASE)
FILTER_WORDS = frozenset({"since", "after", "before", "until", "till", "up to", "through",
                          "prior to", "between", "from-to"})


@dataclass(frozen=True)
class TimeExpression:
    """A query's time expression: the days it means (`[start, end)`, None = open), the
    words as written, the bounding word it had, and the query without it."""

    start: date | None
    end: date | None
    text: str
    bound: str | None
    rest: str


def _first(query: str, at: int, today: date, *,
           paired: bool = False) -> tuple[re.Match[str], Atom, Span] | None:
    """The earliest (then longest) date atom from `at` on that resolves (`paired`: the
    second end of a range, which needs no bounding word of its own)."""
    best: tuple[re.Match[str], Atom, Span] | None = None
    for atom in ATOMS:
        for m in atom.pattern.finditer(query, at):
            if best is not None and (m.start(), -m.end()) >= (best[0].start(), -best[0].end()):
                break
            if atom.needs_bound and not paired and not _needs_bound_ok(query, m, atom):
                continue
            span = atom.resolve(m, today, None)
            if span is not None:
                best = (m, atom, span)
                break
    return best


def _needs_bound_ok(query: str, m: re.Match[str], atom: Atom) -> bool:
    """A month or year alone is a date after a bounding word — but not "may" before a
    verb, nor a number of things ("in 2000 patients")."""
    if not _LEFT_BOUND.search(query[max(0, m.start() - 40):m.start()]):
        return False
    if atom.name == "year" and _COUNTED.match(query, m.end()):
        return False
    return not (atom.name == "month" and m["mon"].lower() == "may"
                and _VERB_AFTER_MAY.match(query, m.end()))


def time_expression(query: str, today: date) -> TimeExpression | None:
    """The first time expression of `query`, resolved against `today` (the caller's
    date), or None. Never raises on odd input: what is not a date stays in the query."""
    if not HINT.search(query):
        return None
    first = _first(query, 0, today)
    if first is None:
        return None
    m, _atom_, span = first
    start_at, end_at = m.start(), m.end()
    left = _LEFT_BOUND.search(query[:start_at])
    word = re.sub(r"\s+", " ", left["word"].lower()) if left else None
    if left:
        start_at = left.start()
    start, end = span
    pair = _RIGHT_PAIR.match(query, end_at) if word in ("between", "from") else None
    if pair:
        second = _first(query, pair.end(), today, paired=True)
        if second is not None and second[0].start() == pair.end():
            other = second[2]
            if _atom_.name in ("month", "month_day", "quarter"):
                # "from March to May 2024": the first end takes the second's year.
                year = other[0].year if other[0] else None
                again = _atom_.resolve(m, today, year)
                if again and again[0] and other[0] and year and again[0] > other[0]:
                    again = _atom_.resolve(m, today, year - 1)  # "from Nov to Feb 2024"
                span = again or span
            start, end = span[0], other[1]
            if start and end and end < start:  # "between 2025 and 2020"
                start, end = other[0], span[1]
            end_at, word = second[0].end(), "from-to" if word == "from" else word
    if word in ("since",):
        end = None
    elif word == "after":
        start, end = end, None
    elif word in ("before", "prior to"):
        start, end = None, start
    elif word in ("until", "till", "up to", "through"):
        start = None
    text = query[start_at:end_at].strip()
    rest = re.sub(r"\s{2,}", " ", (query[:start_at] + " " + query[end_at:])).strip(" ,.;:?!")
    return TimeExpression(start=start, end=end, text=text, bound=word, rest=rest)
