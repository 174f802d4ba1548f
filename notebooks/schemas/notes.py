"""Shapes of notebook and note results, shared by services, REST and MCP.

JSON is camelCase (SPEC §3); Python code uses the snake_case attribute names.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal, Self

from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema

from grove.kernel.errors import GroveError
from grove.kernel.schemas import ListMeta, Out
from notebooks.models import (
    Note,
    Notebook,
    Revision,
)
from notebooks.rules import INT_MAX, note_is_live
from notebooks.schemas.truth import PendingRef
from passages.schemas import PassageRef


def _now() -> datetime:

    return timezone.now()


class NoteOut(Out):
    id: uuid.UUID
    typed_id: str
    versioned_id: str
    notebook_id: uuid.UUID | None
    content: str
    kind: str
    task_id: str | None
    source_agent: str | None
    capture: str
    pinned: bool
    tags: list[str]
    importance: float
    retention_days: int | None
    expires_at: datetime | None
    version: int
    status: str
    indexing: str
    created_at: datetime
    updated_at: datetime
    # Only on a correction of declared ground truth by a connection: the change is held
    # for the owner and this is the accepted version, unchanged (SPEC §10).
    pending_revision: PendingRef | None = Field(default=None, exclude_if=lambda v: v is None)
    # Only on a save whose text held credentials: how many of each kind were replaced by
    # `[redacted: kind]` before anything stored them (grove.identity.hygiene).
    redacted: dict[str, int] = Field(default_factory=dict, exclude_if=lambda v: not v)
    # Only on a note ingested from a file: its path relative to the ingested folder,
    # where the Markdown export writes it back (issue 37).
    source_path: str = Field(default="", exclude_if=lambda v: not v)
    # Only on a rename that updated the links to the note (`relink`): in how many notes.
    relinked: int = Field(default=0, exclude_if=lambda v: not v)
    # Only on a note a newer memory replaced (`supersedes`): that note (this one was
    # archived when it was saved).
    superseded_by: uuid.UUID | None = Field(default=None, exclude_if=lambda v: v is None)

    @classmethod
    def of(cls, note: object) -> Self:

        assert isinstance(note, Note)
        status = note.status
        if status == "active" and not note_is_live(note, _now()):
            status = "expired"  # past expiry: expired at once, whether or not the job ran
        return cls(
            id=note.id, typed_id=note.typed_id, versioned_id=note.versioned_id,
            notebook_id=note.notebook_id, content=note.content, kind=note.kind,
            task_id=note.task_id, source_agent=note.source_agent, capture=note.capture,
            pinned=note.pinned, tags=note.tags, importance=note.importance,
            retention_days=note.retention_days, expires_at=note.expires_at,
            version=note.version, status=status,
            indexing=note.indexing, created_at=note.created_at, updated_at=note.updated_at,
            source_path=note.source_path,
            # As loaded: a read that deferred it (recall's lean rows) costs no query.
            superseded_by=vars(note).get("superseded_by_id"),
        )


class RememberOut(Out):
    # None when a connection's new note failed its notebook's check against declared
    # truth and is held for the owner instead (`pending_revision`).
    note: NoteOut | None
    # False when a handoff with the same task id was updated instead of created.
    created: bool
    # Likely duplicates of what was saved, in its notebook, as the save saw them
    # (`notebooks.selectors.duplicates.similar_to_text`); part of the stored result, so a
    # replay answers the same list (less any note the caller can no longer see).
    similar: list[uuid.UUID] = Field(default_factory=list)
    pending_revision: PendingRef | None = Field(default=None, exclude_if=lambda v: v is None)
    # Credentials replaced by markers before the save (as on `NoteOut`).
    redacted: dict[str, int] = Field(default_factory=dict, exclude_if=lambda v: not v)
    # Of `similar`, the notes this one likely replaces: the same kind, other words (found
    # by meaning: `findSimilar`) — worth `supersedes` on the next save, or an update.
    replaces: list[uuid.UUID] = Field(default_factory=list, exclude_if=lambda v: not v)
    # The note this save superseded (`supersedes`): archived, and marked as replaced.
    superseded: uuid.UUID | None = Field(default=None, exclude_if=lambda v: v is None)


class ItemError(Out):
    """Why one item of a batch was refused: the code and message a single save gives."""

    code: str
    message: str
    details: dict[str, Any] = Field(default_factory=dict, exclude_if=lambda v: not v)


class BatchSaved(RememberOut):
    """One item of a batch save, at its `index` in the request: saved (`created` — a new
    note —, `updated` — its task's live handoff —, `held` for the owner), or `refused`
    with the `error` a single save would give."""

    index: int
    status: Literal["created", "updated", "held", "refused"]
    note: NoteOut | None = None
    created: bool = False
    error: ItemError | None = Field(default=None, exclude_if=lambda v: v is None)

    @classmethod
    def of(cls, index: int, saved: RememberOut) -> BatchSaved:
        if saved.note is None:
            return cls(index=index, status="held", **dict(saved))
        return cls(index=index, status="created" if saved.created else "updated",
                   **dict(saved))

    @classmethod
    def refused(cls, index: int, exc: GroveError) -> BatchSaved:
        return cls(index=index, status="refused", error=ItemError(
            code=exc.code, message=exc.message, details=exc.wire_details()))


class BatchSavedOut(Out):
    items: list[BatchSaved]


class DuplicateMember(Out):
    id: uuid.UUID
    version: int


class DuplicateLink(Out):
    """Two notes of a group and what linked them: the cosine distance of their current
    vectors (None when either has none yet), and whether their content is the same up to
    case and whitespace."""

    a: uuid.UUID
    b: uuid.UUID
    distance: float | None
    exact: bool


class DuplicateGroup(Out):
    notes: list[DuplicateMember]  # most recently updated first
    links: list[DuplicateLink]  # the links that joined the group, closest first


class DuplicateGroupsOut(Out):
    groups: list[DuplicateGroup]  # tightest first
    scanned: int  # live notes compared (the most recently updated ones)
    truncated: bool  # the place holds more live notes than were scanned
    unindexed: int  # scanned notes without a current vector: compared by content only
    max_distance: float


class NotebookOut(Out):
    id: uuid.UUID
    typed_id: str
    name: str
    parent_id: uuid.UUID | None
    archived_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, notebook: object) -> NotebookOut:

        assert isinstance(notebook, Notebook)
        return cls(
            id=notebook.id, typed_id=notebook.typed_id, name=notebook.name,
            parent_id=notebook.parent_id, archived_at=notebook.archived_at,
            created_at=notebook.created_at, updated_at=notebook.updated_at,
        )


ItemStatus = Literal[
    "deleted", "archived", "restored", "not_found", "version_conflict", "not_restorable"
]


class ItemResult(Out):
    id: uuid.UUID
    status: ItemStatus
    version: int | None = None


class BatchOut(Out):
    items: list[ItemResult]


class SubtreeCounts(Out):
    notebooks: int
    notes: int


class ExpireOut(Out):
    expired: int
    deleted: int


class RevisionOut(Out):
    note_id: uuid.UUID
    versioned_id: str
    version: int
    reason: str
    restored_from: int | None
    connection_id: uuid.UUID | None
    operation_id: uuid.UUID | None
    created_at: datetime
    content: str
    kind: str
    notebook_id: uuid.UUID | None
    task_id: str | None
    source_agent: str | None
    capture: str
    pinned: bool
    tags: list[str]
    importance: float
    retention_days: int | None
    expires_at: datetime | None
    status: str

    @classmethod
    def of(cls, revision: object) -> RevisionOut:

        assert isinstance(revision, Revision)
        return cls(
            note_id=revision.note_id, versioned_id=revision.versioned_id,
            version=revision.version, reason=revision.reason,
            restored_from=revision.restored_from, connection_id=revision.connection_id,
            operation_id=revision.operation_id, created_at=revision.created_at,
            content=revision.content, kind=revision.kind, notebook_id=revision.notebook_id,
            task_id=revision.task_id, source_agent=revision.source_agent,
            capture=revision.capture, pinned=revision.pinned, tags=revision.tags,
            importance=revision.importance,
            retention_days=revision.retention_days, expires_at=revision.expires_at,
            status=revision.status,
        )


# -- what tools return: compact items, the full record on request -----------------------------


class KnownFalse(Out):
    """A claim on the place's negative list that a recalled note matches (SPEC §10)."""

    claim_id: uuid.UUID
    claim: str


def known_false_words(known_false: list[KnownFalse]) -> str:
    """What a note matching claims known to be false says under it, in words (the
    brief, the tools' text, the `note://` resource)."""
    claims = "; ".join(f"“{' '.join(k.claim.split())}”" for k in known_false)
    return f"Known to be false (the owner says): {claims} — do not present it as true."


# What declared ground truth says of a note (SPEC §10), worked out once for every read
# (`notebooks.selectors.truth_marks`) and carried by each of them under these names:
# `authority` — declared ground truth where the read is held; `knownFalse` — claims known
# to be false that the note matches (read it with care). REST always says both; the
# tools' compact notes say them only when set.
AUTHORITY = "Declared ground truth where this read is held (SPEC §10)."
KNOWN_FALSE = "Claims known to be false that this note matches: read it with care."


class RecallItem(Out):
    note: NoteOut
    score: float
    matched: list[str]  # "lexical", "semantic", "profile", "declared", "window"
    distance: float | None = None
    authority: bool = Field(default=False, description=AUTHORITY)
    known_false: list[KnownFalse] = Field(default_factory=list, description=KNOWN_FALSE)
    # A document of several passages: `note.content` is this passage of it.
    passage: PassageRef | None = Field(default=None, exclude_if=lambda v: v is None)
    # Reached through a link (`expand: "links"`, matched ["link"]): the note it is
    # linked with.
    via: uuid.UUID | None = Field(default=None, exclude_if=lambda v: v is None)


class NoteLinkOut(Out):
    """A link the note writes (issue 38): `target` as written, with its `heading` and
    `label`; `noteId` and `title` of the note it reaches — left out when unresolved, or
    when that note is outside what the caller may read (the two look the same)."""

    target: str
    heading: str = Field(default="", exclude_if=lambda v: not v)
    label: str = Field(default="", exclude_if=lambda v: not v)
    form: Literal["wiki", "markdown"]
    note_id: uuid.UUID | None = Field(default=None, exclude_if=lambda v: v is None)
    title: str | None = Field(default=None, exclude_if=lambda v: v is None)


class BacklinkOut(Out):
    """A note that links here (one the caller may read), and the passage around its
    first link here."""

    note_id: uuid.UUID
    title: str
    context: str


class NoteRead(NoteOut):
    """A note by id, with what declared ground truth says of it — or one passage of it
    (`passage` set, `content` that passage's text) — and its links both ways."""

    authority: bool = Field(default=False, description=AUTHORITY)
    known_false: list[KnownFalse] = Field(default_factory=list, description=KNOWN_FALSE)
    passage: PassageRef | None = Field(default=None, exclude_if=lambda v: v is None)
    links: list[NoteLinkOut] = Field(default_factory=list)
    backlinks: list[BacklinkOut] = Field(default_factory=list)


class RevisionRead(RevisionOut):
    """One past revision of a note by its versioned id, with what ground truth says of
    its text: `knownFalse` as for a note; `authority` is always false — declared ground
    truth is the note as it stands (read the note, or its current version)."""

    authority: bool = Field(default=False, description=AUTHORITY)
    known_false: list[KnownFalse] = Field(default_factory=list, description=KNOWN_FALSE)
    passage: PassageRef | None = Field(default=None, exclude_if=lambda v: v is None)
    as_of: str | SkipJsonSchema[None] = Field(default=None, exclude_if=lambda v: v is None)


class TimeWindowOut(Out):
    # The window a query's time words meant (SPEC §4): ISO days, both ends included
    # (left out: open), in the zone asked for or the account's; the words; `filter`
    # (only notes with a date in it — stated, created or updated) or `boost` (those
    # first). A comment, not a docstring: MCP's tools/list is held to a byte budget.
    from_: str | None = Field(default=None, alias="from")
    to: str | None = None
    expression: str
    mode: str


class RecallMeta(ListMeta):
    max_chars: int
    mode: str  # hybrid | lexical | profile | window (a query of only time words)
    pending: int
    # With declared ground truth in scope (one notebook's): its policy, and whether the
    # declared notes answer the query — under `restrict`, `not_covered` means they do not
    # and nothing else was reached for.
    policy: Literal["prioritize", "restrict"] | None = None
    coverage: Literal["covered", "not_covered"] | None = None
    # True when `available` is a lower bound: a query word so common that the lexical arm
    # read only some of its matches (`recall.MATCH_BUDGET`); left out otherwise.
    available_at_least: bool | SkipJsonSchema[None] = Field(
        default=None, exclude_if=lambda v: v is None)
    # The `taskId` of a query-free recall when no live handoff in scope has it (the
    # profile came without one); left out otherwise.
    no_handoff: str | SkipJsonSchema[None] = Field(default=None,
                                                   exclude_if=lambda v: v is None)
    # Left out when the query had no time words (REST and MCP alike).
    time_window: TimeWindowOut | SkipJsonSchema[None] = Field(
        default=None, exclude_if=lambda v: v is None)
    # Milliseconds per stage of this recall, only when asked (`timings`: REST only, so in
    # no schema MCP clients read; `notebooks.api` documents it for REST).
    timings: SkipJsonSchema[dict[str, float] | None] = Field(
        default=None, exclude_if=lambda v: v is None)


class RecallOut(Out):
    data: list[RecallItem]
    meta: RecallMeta

    def with_timings(self, timings: dict[str, float]) -> RecallOut:
        return self.model_copy(update={"meta": self.meta.model_copy(
            update={"timings": timings})})


class Matches(Out):
    """Why a note matched: bound to the query and to the note version it describes."""

    query: str
    note_version: int
    terms: list[str]
    snippet: str


class SearchItem(Out):
    note: NoteOut
    matches: Matches | None = None
    # Named by a ground-truth declaration (the owner's library only).
    declared: bool = Field(default=False, exclude_if=lambda v: not v)
    authority: bool = Field(default=False, description=AUTHORITY)
    known_false: list[KnownFalse] = Field(default_factory=list, description=KNOWN_FALSE)


class SearchPage(Out):
    data: list[SearchItem]
    meta: ListMeta
    # The order of the page: the sort asked for, or `updated_desc` when a query matches
    # too many notes to rank (more than 1,000).
    sort: str
    # `meta.available` is at least right (the website's count of a very common query;
    # `note_search(count_up_to=...)`). Never set for the API, which counts every match.
    lower_bound: bool = Field(default=False, exclude=True)


class ExportRecord(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid",
                              serialize_by_alias=True)


class Header(ExportRecord):
    type: Literal["grove-export"]
    format: int
    exported_at: datetime


class NotebookRecord(ExportRecord):
    type: Literal["notebook"]
    id: uuid.UUID
    name: str
    parent_id: uuid.UUID | None
    archived_at: datetime | None
    created_at: datetime
    updated_at: datetime


class ExportedNoteFields(ExportRecord):
    notebook_id: uuid.UUID | None
    content: str
    kind: str
    task_id: str | None
    source_agent: str | None
    capture: Literal["explicit", "automatic"]
    pinned: bool
    # Archives from before tags have none.
    tags: list[str] = Field(default_factory=list, max_length=100)
    importance: float = Field(ge=0, le=1)
    retention_days: int | None = Field(le=INT_MAX)
    expires_at: datetime | None
    status: Literal["active", "archived", "expired", "deleted"]


class NoteRecord(ExportedNoteFields):
    type: Literal["note"]
    id: uuid.UUID
    version: int = Field(ge=1, le=INT_MAX)
    archived_at: datetime | None
    expired_at: datetime | None
    created_at: datetime
    updated_at: datetime
    # The exported note that replaced this one (issue 39); archives before it have none.
    superseded_by: uuid.UUID | None = Field(default=None, exclude_if=lambda v: v is None)


class RevisionRecord(ExportedNoteFields):
    type: Literal["revision"]
    note_id: uuid.UUID
    version: int = Field(ge=1, le=INT_MAX)
    reason: str
    restored_from: int | None = Field(ge=1, le=INT_MAX)
    operation_id: uuid.UUID | None
    created_at: datetime


class VisionRevisionRecord(ExportRecord):
    version: int = Field(ge=1, le=INT_MAX)
    content: str
    created_at: datetime


class VisionRecord(ExportRecord):
    """A vision (format 2): the account's when `notebookId` is null, with its history."""

    type: Literal["vision"]
    notebook_id: uuid.UUID | None
    version: int = Field(ge=1, le=INT_MAX)
    content: str
    created_at: datetime
    updated_at: datetime
    revisions: list[VisionRevisionRecord]


class ImportOut(Out):
    notebooks: int
    notes: int
    revisions: int
    visions: int = 0
