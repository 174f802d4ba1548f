"""Field rules and limits of notes and notebooks, shared by reads and writes (below both).

Every caller — REST, MCP, the web, tasks, import — cleans its input through these, so a
value is accepted or refused the same way everywhere."""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Final
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Q

from grove.kernel.errors import Invalid
from grove.kernel.validation import clean_text, storable_text
from notebooks.models import (
    CONTENT_MAX_CHARS,
    NAME_MAX_CHARS,
    RETENTION_MAX_DAYS,
    SOURCE_AGENT_MAX_CHARS,
    TAG_MAX_CHARS,
    TAGS_MAX,
    TASK_ID_MAX_CHARS,
    VISION_MAX_CHARS,
    Capture,
    Kind,
    Note,
    Status,
)


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()
"""Marks an argument the caller omitted (as opposed to an explicit null)."""


def given(**fields: tuple[Any, Callable[[Any], Any]]) -> dict[str, Any]:
    """The arguments a caller gave (anything but `UNSET`), each through its cleaner: the
    one reading of optional arguments and partial updates."""
    return {name: clean(value) for name, (value, clean) in fields.items()
            if not isinstance(value, _Unset)}


BATCH_MAX = 100
BATCH_REMEMBER_MAX = 50  # saves in one `remember` with items (a transaction each batch)
INT_MAX = 2**31 - 1  # PostgreSQL's integer: a larger version or count would fail to store


class _Everywhere:
    def __repr__(self) -> str:
        return "EVERYWHERE"


EVERYWHERE: Final = _Everywhere()
"""A scope argument meaning every granted notebook and Personal (as opposed to None,
which means Personal alone): lists, search, recall and Ask take it. A connection with a
home notebook reads its home and Personal instead (`access.resolve_scope`)."""
HOME: Final = type("_Home", (), {"__repr__": lambda self: "HOME"})()
"""A write that names no notebook: the caller's home notebook (`Actor.home`), else
Personal."""


def place_key(place: Any) -> str | None:
    """A scope argument as text, for cursors and fingerprints: "*" for `EVERYWHERE`, None
    for Personal, else the notebook's id (checked as a UUID; `invalid_notebook_id`)."""
    if isinstance(place, _Everywhere):
        return "*"
    return None if place is None else str(parse_uuid(place, what="notebook id"))

# Limits of the two reads, which their argument shapes state too.
SEARCH_SORTS = ("relevance", "updated_desc", "updated_asc", "created_desc")
SEARCH_LIFETIMES = ("permanent", "ephemeral")
SEARCH_STATUSES = ("active", "archived", "expired")
SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT = 20, 100
SEARCH_QUERY_MAX_CHARS = 500
# A query matching more of the account's notes than this is not ranked (newest first
# instead): ranking reads every match (notebooks.selectors.search._narrowed).
SEARCH_RANK_MAX = 1_000
# The library's "Saved by" picker offers at most this many agents (alphabetically first).
SOURCE_AGENT_CHOICES_MAX = 200
RECALL_DEFAULT_LIMIT, RECALL_MAX_LIMIT = 8, 50
RECALL_DEFAULT_MAX_CHARS, RECALL_MIN_MAX_CHARS, RECALL_MAX_MAX_CHARS = 6000, 500, 50_000
RECALL_QUERY_MAX_CHARS = 2000
NOTEBOOK_PAGE_MAX = 200

# The brief (SPEC §10, `notebooks.selectors.brief`). Tokens are counted with
# `grove.embeddings.tokens`. The budget covers the whole document: after its fixed parts,
# recent changes get up to their share (what they leave unused goes to the notes), the
# index tier its own share, and the notes in full the rest.
BRIEF_DEFAULT_TOKENS, BRIEF_MIN_TOKENS, BRIEF_MAX_TOKENS = 2000, 200, 32_000
BRIEF_RECENT_SHARE, BRIEF_RECENT_MIN_TOKENS = 0.15, 60
BRIEF_INDEX_SHARE, BRIEF_INDEX_MIN_TOKENS = 0.15, 60
BRIEF_RECENT_DAYS = 7  # recent changes without `since`
BRIEF_RECENT_MAX = 15  # lines of recent changes (the rest are counted)
BRIEF_HANDOFFS_MAX = 10  # live handoffs, newest first
# Pinned notes are a delivery guarantee — in full, whatever the budget — for the
# BRIEF_PINNED_GUARANTEED most important of them: any connection that may write a
# notebook may pin there, and without a bound it could make every reader's brief as long
# as it likes. Pinned notes past that rank first among the rest (within the budget), up
# to BRIEF_PINNED_MAX; more are counted, not named.
BRIEF_PINNED_GUARANTEED = 20
# The job that gives a held change to declared ground truth its verdict: defined here,
# done by whichever app can ask a model (ask.verification registers it).
VERIFY_JOB = "truth.verify"
REFERENCE_MAX_NOTES = 40  # declared notes a check sends the model, at most
# Kinds a `restrict` declaration leaves alone: declared truth binds facts, decisions and
# solutions; preferences and handoffs answer as always (SPEC §10).
UNRESTRICTED_KINDS = ("preference", "handoff")
BRIEF_PINNED_MAX = 100
BRIEF_FACTS_PER_KIND = 100  # preferences, facts and decisions ranked, per kind
BRIEF_RELATED_MAX = 8  # recall hits for `focus`
BRIEF_FLOOR_MAX = 20  # floors: {kind: n}, n at most this
BRIEF_FOCUS_MAX_CHARS = 500
BRIEF_KINDS = (Kind.PREFERENCE, Kind.FACT, Kind.DECISION)
# Recent activity (`notebooks.selectors.activity`).
ACTIVITY_DEFAULT_LIMIT, ACTIVITY_MAX_LIMIT = 50, 200
ACTIVITY_DEFAULT_DAYS = 7

# Likely duplicates (`notebooks.selectors.duplicates`, SPEC §8 Tidy-up). Two notes are
# near-duplicates when the cosine distance of their current vectors is at most
# DUPLICATE_MAX_DISTANCE — tuned for the local model on half of a labelled SciFact set and
# checked on the other half (bench/duplicates.py, docs/benchmarks.md); another embedding
# model needs its own. Same content up to case and whitespace is a duplicate at any model.
DUPLICATE_MAX_DISTANCE = 0.20
SIMILAR_DEFAULT_LIMIT, SIMILAR_MAX_LIMIT = 5, 20
# duplicate_groups: the most recently updated DUPLICATE_SCAN_MAX live notes of the place
# are compared pairwise; at most DUPLICATE_GROUPS_MAX groups of at most
# DUPLICATE_GROUP_MAX notes each are returned, tightest first.
DUPLICATE_SCAN_MAX = 1000
DUPLICATE_GROUPS_MAX = 50
DUPLICATE_GROUP_MAX = 10

# -- a note's text and its limit -----------------------------------------------------------


def content_max_chars(kind: str) -> int:
    """The most characters a note of `kind` holds (trimmed text): the one limit every
    save checks (`clean_content`, `check_content_fits`) and the editor states and counts
    against. SPEC §3: memory records (preference, fact, decision, solution, handoff)
    hold CONTENT_MAX_CHARS (6,000); a document note (kind `note`) holds
    `GROVE_NOTE_MAX_CHARS` (200,000 unless configured, at most 1,000,000)."""
    if kind == Kind.NOTE:
        return int(settings.GROVE_NOTE_MAX_CHARS)
    return CONTENT_MAX_CHARS


def content_limits() -> dict[str, int]:
    """Each kind's limit (`content_max_chars`), for the editor to count against."""
    return {kind: content_max_chars(kind) for kind in Kind.values}


# Loose outer limits. Each exact limit (a kind's content_max_chars, …) is checked once, by
# its cleaner here, on the trimmed text, with a stable error code, and the schemas state
# the same number. Layers in front of the cleaners — a form field, the request body
# (GROVE_API_MAX_BODY, 1 MiB: far above 6,000 characters of any script) — only cap how
# much work one request can cause, so they are set looser on purpose: a value the
# service accepts is never cut or refused before it gets there, and one that is too
# long reaches its cleaner and gets its code rather than a generic one.
CONTENT_OUTER_MAX_CHARS = max(content_limits().values()) + 1000  # whitespace is trimmed


def content_too_long(length: int, kind: str | None) -> Invalid:
    """The one refusal of a note's text that is too long — what the website, REST and
    MCP all say (the field named as the API names it, capitalised as a sentence starts).
    `kind` None: longer than any kind holds (`clean_content` before the kind is known)."""
    if kind is None:
        return Invalid(f"Content is {length:,} characters; no note holds more than "
                       f"{max(content_limits().values()):,}.", code="content_too_long")
    return Invalid(f"Content is {length:,} characters; a {kind} holds at most "
                   f"{content_max_chars(kind):,}.", code="content_too_long")


def clean_content(value: Any, *, kind: str | None = None) -> str:
    """A note's text, trimmed, within its kind's limit. `kind` None: the kind is known
    only once the note is read (a correction that keeps it) — the text is held to the
    outer bound here, and the caller checks it with `check_content_fits` then, so the
    refusal names the kind whichever way the text came."""
    if not isinstance(value, str):
        raise Invalid("Content must be text.", code="invalid_content")
    content = storable_text(value, what="content", code="invalid_content").strip()
    if not content:
        raise Invalid("Content is empty.", code="content_empty")
    if kind is not None:
        check_content_fits(content, kind)
    elif len(content) > CONTENT_OUTER_MAX_CHARS:
        raise content_too_long(len(content), None)
    return content


def check_content_fits(content: str, kind: str | None) -> None:
    """Refuse text longer than its kind's limit (`content_too_long`) — also when a
    change of kind makes the note one that holds less than its text. `kind` None:
    longer than any kind holds (a preview of a form that names no kind)."""
    limit = max(content_limits().values()) if kind is None else content_max_chars(kind)
    if len(content) > limit:
        raise content_too_long(len(content), kind)


def clean_vision(value: Any) -> str:
    """A vision's text: trimmed, at most VISION_MAX_CHARS; empty clears it."""
    if not isinstance(value, str):
        raise Invalid("content must be text.", code="invalid_content")
    content = storable_text(value, what="content", code="invalid_content").strip()
    if len(content) > VISION_MAX_CHARS:
        raise Invalid(
            f"The vision is {len(content)} characters; the limit is {VISION_MAX_CHARS}.",
            code="content_too_long",
        )
    return content


def clean_kind(value: Any) -> str:
    if value not in Kind.values:
        raise Invalid(
            f"kind must be one of {', '.join(Kind.values)}.", code="invalid_kind"
        )
    return str(value)


def clean_task_id(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise Invalid("taskId must be non-empty text.", code="invalid_task_id")
    storable_text(value, what="taskId", code="invalid_task_id")
    if len(value.strip()) > TASK_ID_MAX_CHARS:
        raise Invalid(f"taskId is longer than {TASK_ID_MAX_CHARS} characters.",
                      code="invalid_task_id")
    return value.strip()


def clean_source_agent(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value.strip()) > SOURCE_AGENT_MAX_CHARS:
        raise Invalid(f"sourceAgent must be text of at most {SOURCE_AGENT_MAX_CHARS} "
                      "characters.", code="invalid_source_agent")
    storable_text(value, what="sourceAgent", code="invalid_source_agent")
    return value.strip() or None


# A tag: ASCII letters and digits, and `-`, `_`, `/`, `.` after the first (spaces given
# become `-`). ASCII, so that lower-casing never changes a tag's length or validity.
TAG_PATTERN = r"^[a-z0-9][a-z0-9_./-]*$"
_TAG = re.compile(TAG_PATTERN)


def clean_tag(value: Any) -> str:
    """One tag, normalised: trimmed, a leading `#` dropped, lower case, runs of spaces
    made one `-` — `" Big Idea"` and `"#big-idea"` are the same tag."""
    if not isinstance(value, str):
        raise Invalid("A tag must be text.", code="invalid_tags")
    tag = "-".join(value.strip().removeprefix("#").lower().split())
    if not tag or len(tag) > TAG_MAX_CHARS or not _TAG.match(tag):
        raise Invalid(f"A tag is 1–{TAG_MAX_CHARS} letters (a–z), digits, “-”, “_”, “/” or "
                      f"“.”, starting with a letter or digit (not {value[:40]!r}).",
                      code="invalid_tags")
    return tag


def clean_tags(value: Any) -> list[str]:
    """A note's tags: each normalised (`clean_tag`), duplicates dropped, sorted; at most
    TAGS_MAX."""
    if not isinstance(value, list | tuple):
        raise Invalid("tags must be a list of labels.", code="invalid_tags")
    tags = sorted({clean_tag(tag) for tag in value})
    if len(tags) > TAGS_MAX:
        raise Invalid(f"A note has at most {TAGS_MAX} tags.", code="invalid_tags")
    return tags


def clean_capture(value: Any) -> str:
    if value not in Capture.values:
        raise Invalid("capture must be explicit or automatic.", code="invalid_capture")
    return str(value)


def clean_importance(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise Invalid("importance must be a number from 0 to 1.", code="invalid_importance")
    if not 0 <= value <= 1:
        raise Invalid("importance must be a number from 0 to 1.", code="invalid_importance")
    return float(value)


def clean_bool(value: Any, *, what: str) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"{what} must be true or false.", code=f"invalid_{what}")
    return value


def clean_retention(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(
            f"retentionDays must be null or a whole number of days (1–{RETENTION_MAX_DAYS}).",
            code="invalid_retention",
        )
    if not 1 <= value <= RETENTION_MAX_DAYS:
        raise Invalid(f"retentionDays must be between 1 and {RETENTION_MAX_DAYS}.",
                      code="invalid_retention")
    return value


def clean_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid("A notebook needs a name.", code="invalid_name")
    name = storable_text(value, what="name", code="invalid_name").strip()
    if len(name) > NAME_MAX_CHARS:
        raise Invalid(f"Notebook names are at most {NAME_MAX_CHARS} characters.",
                      code="invalid_name")
    return name


def clean_version(value: Any, *, what: str = "expectedVersion") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Invalid(f"{what} must be a positive whole number.", code="invalid_version")
    return value


def clean_batch(values: Iterable[Any], *, what: str = "ids") -> list[uuid.UUID]:
    ids = [parse_uuid(v, what="note id") for v in values]
    if not ids:
        raise Invalid(f"{what} is empty.", code="empty_batch")
    if len(ids) > BATCH_MAX:
        raise Invalid(f"At most {BATCH_MAX} {what} per request.", code="batch_too_large")
    if len(set(ids)) != len(ids):
        raise Invalid(f"{what} contains duplicates.", code="duplicate_ids")
    return ids


def clean_items(items: Iterable[Any]) -> list[tuple[uuid.UUID, int | None]]:
    """Batch items: a note id, or `{"id": ..., "expectedVersion": n}`."""
    parsed: list[tuple[uuid.UUID, int | None]] = []
    for item in items:
        if isinstance(item, dict):
            unknown = set(item) - {"id", "expectedVersion", "expected_version"}
            if unknown or "id" not in item:
                raise Invalid("Each item is {id, expectedVersion?}.", code="invalid_item")
            expected = item.get("expectedVersion", item.get("expected_version"))
            parsed.append((parse_uuid(item["id"], what="note id"),
                           None if expected is None else clean_version(expected)))
        else:
            parsed.append((parse_uuid(item, what="note id"), None))
    clean_batch([note_id for note_id, _ in parsed], what="items")
    return parsed


def parse_uuid(value: uuid.UUID | str, *, what: str = "id") -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (ValueError, AttributeError, TypeError):
        raise Invalid(f"{what} must be a UUID.", code="invalid_id") from None


# -- a note is live (lists, recall, search, shares, the note's own status) ---------------


def unexpired_filter(*, now: datetime, prefix: str = "") -> Q:
    """A note's own liveness as SQL: active and not past its expiry (the expire job may
    not have run yet). `note_is_live` says the same of a loaded note."""
    return Q(**{f"{prefix}status": Status.ACTIVE}) & (
        Q(**{f"{prefix}expires_at__isnull": True}) | Q(**{f"{prefix}expires_at__gt": now}))


def past_expiry_filter(*, now: datetime, prefix: str = "") -> Q:
    """Expired notes: marked so by the expire job, or active but past their expiry."""
    return Q(**{f"{prefix}status": Status.EXPIRED}) | (
        Q(**{f"{prefix}status": Status.ACTIVE}) & Q(**{f"{prefix}expires_at__lte": now}))


def note_is_live(note: Note, now: datetime) -> bool:
    """`unexpired_filter` for one loaded note: active and not past its expiry."""
    return note.status == Status.ACTIVE and (note.expires_at is None or note.expires_at > now)


# The term-statistics row (`TermStat`/`TermDelta`) holding the active notes' distinct
# lexemes in all — BM25's note length (migration 0025) — instead of a lexeme's count. A
# space: no text search parser makes one, and the search-variant lookup reads words only.
LENGTH_LEXEME = " length"


# -- Recently deleted (SPEC §3): what the owner may still bring back --------------------

TRASH_DAYS = 30  # deleted notes and notebooks stay restorable this long
TRASH_PAGE_SIZE = 50  # notes per page of Recently deleted
TRASH_NOTEBOOKS_MAX = 100  # notebooks listed (newest first; the rest are counted)


def trash_cutoff(now: datetime) -> datetime:
    """What was deleted at or before this instant is gone for good."""
    return now - timedelta(days=TRASH_DAYS)


def note_in_trash_filter(*, now: datetime) -> Q:
    """Deleted notes the owner may still restore: deleted within the last `TRASH_DAYS`
    days and not past their retention (a note whose time ran out stays gone — restoring
    it would bring back what retention was set to remove). The Recently deleted page and
    the restore service both read this one rule."""
    return Q(status=Status.DELETED, deleted_at__gt=trash_cutoff(now)) & (
        Q(expires_at__isnull=True) | Q(expires_at__gt=now))


def trash_until(deleted_at: datetime, expires_at: datetime | None) -> datetime:
    """Until when a deleted note stays restorable: `note_in_trash_filter`'s end, for
    saying it (a notebook's is `trash_until(deleted_at, None)`)."""
    until = deleted_at + timedelta(days=TRASH_DAYS)
    return until if expires_at is None else min(until, expires_at)


def notebook_in_trash_filter(*, now: datetime) -> Q:
    """Deleted notebooks the owner may still restore (with what was deleted with them)."""
    return Q(deleted_at__isnull=False, deleted_at__gt=trash_cutoff(now))


def notebook_paths(notebooks: Iterable[Any]) -> dict[uuid.UUID, str]:
    """Each notebook's path from the top, "Parent / Child", through the parents among
    `notebooks` (a parent not among them — archived, outside the grant — ends the path)."""
    by_id = {nb.id: nb for nb in notebooks}
    paths: dict[uuid.UUID, str] = {}
    for nb in by_id.values():
        names, parent, seen = [nb.name], nb.parent_id, {nb.id}
        while parent in by_id and parent not in seen:  # (a cycle cannot be stored)
            seen.add(parent)
            names.insert(0, by_id[parent].name)
            parent = by_id[parent].parent_id
        paths[nb.id] = " / ".join(names)
    return paths


# -- the brief's and recent activity's arguments ---------------------------------------


def clean_budget_tokens(value: Any) -> int:
    value = BRIEF_DEFAULT_TOKENS if value is None else value
    if isinstance(value, bool) or not isinstance(value, int) \
            or not BRIEF_MIN_TOKENS <= value <= BRIEF_MAX_TOKENS:
        raise Invalid(f"budgetTokens must be a whole number from {BRIEF_MIN_TOKENS} "
                      f"to {BRIEF_MAX_TOKENS}.", code="invalid_budget")
    return value


def clean_floors(value: Any) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise Invalid("floors maps kinds to counts, e.g. {\"decision\": 3}.",
                      code="invalid_floors")
    floors: dict[str, int] = {}
    for kind, count in value.items():
        if kind not in Kind.values or isinstance(count, bool) or not isinstance(count, int) \
                or not 0 <= count <= BRIEF_FLOOR_MAX:
            raise Invalid(f"floors: each kind ({', '.join(Kind.values)}) takes a count from 0 "
                          f"to {BRIEF_FLOOR_MAX}.", code="invalid_floors")
        if count:
            floors[kind] = count
    return floors


def clean_focus(value: Any) -> str | None:
    if value is None:
        return None
    return clean_text(value, what="focus", max_chars=BRIEF_FOCUS_MAX_CHARS,
                      code="invalid_focus") or None


def since_instant(since: datetime | date | None, zone: ZoneInfo, now: datetime,
                  default_days: int) -> datetime:
    """`since` as an instant in UTC: a date is its midnight in `zone`, a time without a
    zone is read in `zone`; None is `default_days` before now. In UTC because PostgreSQL
    refuses zone offsets beyond ±15:59 that ISO 8601 allows; a time before the first
    UTC instant Python has (year 1 at +16:00) means "since always", one after the last
    "since never"."""
    if since is None:
        return now - timedelta(days=default_days)
    if isinstance(since, datetime):
        instant = since if since.tzinfo is not None else since.replace(tzinfo=zone)
    elif isinstance(since, date):
        instant = datetime.combine(since, time(0), tzinfo=zone)
    else:
        raise Invalid("since must be an ISO 8601 date or time.", code="invalid_since")
    try:
        return instant.astimezone(UTC)
    except (OverflowError, ValueError):
        first, last = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)
        return first if instant.year == first.year else last
