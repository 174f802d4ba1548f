"""The shapes of an agent's first read (SPEC §10): visions, the brief, recent activity and
who-am-I — arguments and results shared by REST, MCP and the website — and the brief's
markdown, written here once so every interface hands out the same document.

Dates in a brief are dates only, in the time zone the caller asked for (named in the
header); stored instants stay UTC, and recent activity gives them as such.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue, StrictInt
from pydantic.json_schema import SkipJsonSchema

from grove.kernel.paging import CURSOR_DOC, CursorText
from grove.kernel.schemas import AsOf, Day, In, ListMeta, Moment, Out, QueryIn, Uuid
from grove.kernel.validation import (
    STORABLE_TEXT,
    TIME_ZONE_MAX_CHARS,
    trimmed_at_most,
    zone_names,
)
from notebooks import rules
from notebooks.models import VISION_MAX_CHARS
from notebooks.schemas.agent_writes import ProjectArg
from notebooks.schemas.arguments import (
    AS_OF,
    PLACE_FILTER,
    AsOfText,
    KindName,
    NotebookId,
    Operated,
    Place,
    ToolArguments,
    place_of,
)
from notebooks.schemas.notes import KnownFalse

# -- vision ------------------------------------------------------------------------------------


class VisionOut(Out):
    """A vision (the account's when `notebookId` is null). Version 0: never written."""

    notebook_id: uuid.UUID | None
    content: str
    version: int
    updated_at: datetime | None
    updated_by: str | None  # the connection's name, or "website"


class VisionRevisionOut(Out):
    version: int
    content: str
    created_at: datetime
    by: str  # the connection's name, or "website"
    operation_id: uuid.UUID | None


class VisionIn(Operated):
    content: str = Field(
        max_length=VISION_MAX_CHARS + 1000,  # outer cap: the service trims, then checks
        description=f"Markdown (trimmed, at most {VISION_MAX_CHARS} characters): the "
        "whole vision; empty clears it.",
        json_schema_extra={"pattern": trimmed_at_most(VISION_MAX_CHARS)})
    # `true` is not version 1 (a lax reading would write over a newer vision).
    expected_version: int | None = Field(
        default=None, ge=0, description="The version you read (0: none yet); omitted: no "
        "check.")


class UpdateVisionArgs(ToolArguments, VisionIn):
    notebook_id: NotebookId | None = Field(
        default=None, description="The notebook whose vision to replace; omitted: the "
        "account's (needs a grant of everything).")


class VisionSaved(Out):
    """update_vision's answer: where, and the new version (send it back as
    expectedVersion next time)."""

    notebook_id: str | None = None  # notebook:<uuid>; left out for the account's
    version: int


# -- the brief ---------------------------------------------------------------------------------

Section = Literal["handoffs", "facts", "related"]
FloorCount = Annotated[StrictInt, Field(ge=0, le=rules.BRIEF_FLOOR_MAX)]
# One floor in a query string: a kind and a count from 0 to 20 (BRIEF_FLOOR_MAX).
_FLOOR = r"(preference|fact|decision|solution|handoff):([0-9]|1[0-9]|20)"
FLOORS = "Per kind, at least this many first among the facts, e.g. {\"decision\": 3}."


class _BriefArguments(In):
    """The brief's arguments (`GET /v1/brief` query, the `brief` tool)."""

    notebook_id: Place | None = Field(
        default=None, description=PLACE_FILTER + ".")
    include_personal: bool = Field(default=True, description="With a notebook: also "
                                   "Personal notes, when granted.")
    focus: str | None = Field(default=None, max_length=rules.BRIEF_FOCUS_MAX_CHARS,
                              description="What you are about to work on: adds related "
                              "notes (recall).", json_schema_extra={"pattern": STORABLE_TEXT})
    since: Moment | Day | None = Field(
        default=None, description="Recent changes since this ISO 8601 date or time "
        "(without a zone: in timeZone); default 7 days ago.")
    time_zone: str = Field(default="UTC", max_length=TIME_ZONE_MAX_CHARS,
                           description="IANA zone for the dates shown, e.g. "
                           "America/Los_Angeles.")
    format: Literal["markdown", "json"] = Field(default="markdown", description="markdown: "
                                                "one document; json: its parts.")
    budget_tokens: int = Field(default=rules.BRIEF_DEFAULT_TOKENS, ge=rules.BRIEF_MIN_TOKENS,
                               le=rules.BRIEF_MAX_TOKENS, description="Tokens for the whole "
                               "brief; pinned notes, and live handoffs' index lines, come "
                               "whatever it is.")
    truth: Literal["manifest", "full"] = Field(
        default="manifest", description="Declared ground truth as first lines and "
        "headings, or in full.")
    as_of: AsOfText | SkipJsonSchema[None] = Field(default=None, description=AS_OF)

    def floor_counts(self) -> dict[str, int]:
        raise NotImplementedError

    def service_kwargs(self) -> dict[str, Any]:
        """`brief_get` keywords: an omitted notebookId means everything granted."""
        scope: Any = rules.EVERYWHERE
        if "notebook_id" in self.model_fields_set and self.notebook_id is not None:
            scope = place_of(self.notebook_id)
        return {"notebook_id": scope, "include_personal": self.include_personal,
                "focus": self.focus, "since": self.since, "time_zone": self.time_zone,
                "budget_tokens": self.budget_tokens, "floors": self.floor_counts(),
                "format": self.format, "truth": self.truth, "as_of": self.as_of}


class BriefIn(_BriefArguments):
    floors: dict[KindName, FloorCount] | None = Field(default=None, description=FLOORS)

    def floor_counts(self) -> dict[str, int]:
        return {str(kind): count for kind, count in (self.floors or {}).items()}


class BriefArgs(ToolArguments, BriefIn, ProjectArg):
    pass


class BriefQuery(QueryIn, _BriefArguments):
    """`GET /v1/brief`: the same arguments from a query string, floors written
    `floors=decision:3,fact:2`."""

    # The OpenAPI document names every zone the service accepts (a few kilobytes there;
    # the tool's schema, which a model reads, describes the field in words instead).
    time_zone: str = Field(default="UTC", max_length=TIME_ZONE_MAX_CHARS,
                           description="IANA zone for the dates shown.",
                           json_schema_extra={"enum": list[JsonValue](sorted(zone_names()))})
    floors: str | None = Field(default=None, max_length=200, description=FLOORS
                               + " Here: decision:3,fact:2 (a kind named twice: the last "
                               "count).", pattern=rf"^{_FLOOR}(,{_FLOOR})*$")
    as_of: AsOf | None = Field(default=None, description=AS_OF)

    def floor_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for pair in (self.floors or "").split(","):
            if pair:
                kind, _, count = pair.partition(":")
                counts[kind] = int(count)
        return counts


class BriefNote(Out):
    """A note delivered in full."""

    id: str  # note:<uuid>@<version>
    kind: str
    section: Section
    content: str
    updated: date  # in the brief's zone
    notebook: str | None = None  # left out for a Personal note
    task_id: str | None = None
    pinned: bool | None = None  # set (true) only for a pinned note
    # What declared ground truth says of it (`truth_marks`): set only when true / found.
    authority: bool | None = None
    known_false: list[KnownFalse] | None = None


class BriefIndexEntry(Out):
    """A note past the full-text budget, as one line: `first line — detail (id)`."""

    id: str
    section: Section
    line: str


class BriefChange(Out):
    """One recent change: the note as it is now, what happened last and who did it."""

    id: str  # note:<uuid>@<version>
    date: date
    change: str  # the last revision's reason: create, update, move, restore, …
    kind: str
    title: str
    by: str
    # Claims known to be false that the note matches (`truth_marks`): set only when found.
    known_false: list[KnownFalse] | None = None


class BriefVision(Out):
    scope: Literal["account", "notebook"]
    notebook: str | None = None  # the notebook's name
    version: int
    updated: date
    by: str
    content: str


class BriefTruthNote(Out):
    id: str  # note:<uuid>@<current accepted version>
    declared_version: int
    kind: str
    notebook: str | None = None  # left out for a Personal note
    line: str  # first line, then its section headings
    content: str | None = None  # with truth=full


class BriefTruth(Out):
    """The scope's declared ground truth, unranked (SPEC §10), and its negatives."""

    state: Literal["own", "inherited", "none"]
    policy: Literal["prioritize", "restrict"] | None = None
    notes: list[BriefTruthNote]
    withheld: int  # declared notes not given: archived, deleted or outside the grant
    negatives: list[str]  # claims known to be false here


class ToolTruth(BriefTruth):
    """The `truth` tool's answer: the truth as the brief gives it, and whether agents'
    writes here are checked against it before they land (set only when they are)."""

    checked: bool | None = None


class BriefRecentMeta(Out):
    returned: int  # lines of recent changes shown
    available: int  # notes changed since `since`
    tokens: int  # what the lines took


class BriefMeta(Out):
    returned: int  # notes in full (every pinned one included)
    indexed: int  # notes as index lines (never counted in `returned`)
    dropped: int  # notes that fit neither
    available: int  # returned + indexed + dropped
    truncated: bool
    returned_items: list[str]
    indexed_items: list[str]
    dropped_items: list[str]
    dropped_unlisted: int  # dropped notes beyond the ranked window, counted but not named
    pinned: int
    budget_tokens: int
    tokens: int  # the markdown document, counted
    full_text_tokens: int  # what the notes in full took
    index_tokens: int  # what the index lines took (of index_budget)
    index_budget: int
    tokenizer: str
    time_zone: str
    today: date
    since: date
    recent: BriefRecentMeta
    focus_mode: str | None = None  # recall's mode for `focus`: hybrid | lexical
    truth_state: Literal["own", "inherited", "none"] = "none"
    truth_policy: Literal["prioritize", "restrict"] | None = None
    declared: int = 0  # declared notes given (in the truth section, never ranked)
    # The instant the brief was made as of (`asOf`); left out otherwise.
    as_of: str | SkipJsonSchema[None] = Field(default=None, exclude_if=lambda v: v is None)


class BriefOut(Out):
    """The brief: `markdown` (format markdown), or its parts (format json); `meta` with
    both."""

    format: Literal["markdown", "json"]
    markdown: str | None = None
    startup: str | None = None
    visions: list[BriefVision] | None = None
    truth: BriefTruth | None = None
    handoffs: list[BriefNote] | None = None
    recent: list[BriefChange] | None = None
    facts: list[BriefNote] | None = None
    related: list[BriefNote] | None = None
    index: list[BriefIndexEntry] | None = None
    meta: BriefMeta

    def mcp_text(self) -> str | None:
        return self.markdown  # json: the structured result's JSON


class ToolBriefMeta(Out):
    """The brief's counts as the `brief` tool gives them: what was delivered in full, as
    index lines and dropped (with their ids), and the tokens against the budget. The
    rest of the accounting — each tier's tokens, the zone, the tokenizer — is said in
    the document itself and in `GET /v1/brief`'s meta."""

    returned: int
    indexed: int
    dropped: int
    available: int
    truncated: bool
    returned_items: list[str]
    indexed_items: list[str]
    dropped_items: list[str]
    dropped_unlisted: int
    tokens: int
    budget_tokens: int


class ToolBrief(BriefOut):
    meta: ToolBriefMeta  # type: ignore[assignment]  # the tool's compact counts

    @classmethod
    def of(cls, brief: BriefOut) -> ToolBrief:
        meta = ToolBriefMeta(**{name: getattr(brief.meta, name)
                                for name in ToolBriefMeta.model_fields})
        return cls(**{**dict(brief), "meta": meta})


# -- who am I ----------------------------------------------------------------------------------


class GrantedNotebook(Out):
    id: str  # notebook:<uuid>
    name: str  # its path, "Parent / Child"


class WhoamiOut(Out):
    account: str  # the owner's user name
    via: Literal["connection", "session"]
    connection_id: uuid.UUID | None = None
    connection_name: str | None = None
    connection_kind: str | None = None  # api_key | oauth
    capabilities: list[str]
    personal: bool  # Personal notes granted
    all_notebooks: bool  # every notebook, current and future
    notebooks: list[GrantedNotebook]  # the live notebooks granted now
    capture_paused: bool
    # Its home notebook (the connection's, or the one its project named for this
    # request): where writes go and what reads cover with Personal by default.
    home: GrantedNotebook | None = None
    startup: str  # the same line the brief opens with

    def mcp_text(self) -> str:
        return self.startup


class WhoamiArgs(ToolArguments):
    pass


# -- recent activity ---------------------------------------------------------------------------


class ActivityIn(In):
    since: Moment | Day | None = Field(
        default=None, description="Changes since this ISO 8601 date (midnight UTC) or "
        "time; default 7 days ago.")
    notebook_id: Place | None = Field(
        default=None, description=PLACE_FILTER + ".")
    connection_id: Uuid | Literal["website"] | None = Field(
        default=None, description="Only changes by this connection id, or \"website\" "
        "(the owner's).")
    cursor: CursorText | None = Field(default=None, description=CURSOR_DOC)
    limit: int = Field(default=rules.ACTIVITY_DEFAULT_LIMIT, ge=1,
                       le=rules.ACTIVITY_MAX_LIMIT, description="Changes per page.")

    def service_kwargs(self) -> dict[str, Any]:
        scope: Any = rules.EVERYWHERE
        if "notebook_id" in self.model_fields_set and self.notebook_id is not None:
            scope = place_of(self.notebook_id)
        return {"since": self.since, "notebook_id": scope,
                "connection_id": self.connection_id, "cursor": self.cursor,
                "limit": self.limit}


class ActivityArgs(ToolArguments, ActivityIn):
    pass


class ActivityQuery(QueryIn, ActivityIn):
    pass


class ActivityItem(Out):
    """One revision: which note and version, what changed, who changed it, when."""

    id: str  # note:<uuid>@<version>
    change: str  # create, update, restore_revision, archive, restore, move, expire, delete
    kind: str
    title: str  # the revision's first line ("" for a deleted note)
    at: datetime
    by: str  # the connection's name, "website" or "Grove" (retention)
    notebook: str | None = None  # left out for Personal
    connection_id: uuid.UUID | None = None


class ActivityPage(Out):
    data: list[ActivityItem]
    meta: ListMeta

    def mcp_text(self) -> str:
        meta = self.meta
        head = f"{meta.returned} of {meta.available} changes, newest first"
        if meta.next_cursor:
            head += f"; next page: cursor {meta.next_cursor}"
        lines = [f"{item.at:%Y-%m-%d %H:%M} UTC {item.id} {item.change} ({item.kind}"
                 + (f", {item.notebook}" if item.notebook else "") + f") by {item.by}"
                 + (f": {item.title}" if item.title else "") for item in self.data]
        return "\n".join([head, *lines])


# Who made a change, as bylines name it: the owner on the website, and Grove itself.
BYLINE_WEBSITE = "website"
BYLINE_SYSTEM = "Grove"
