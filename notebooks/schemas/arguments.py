"""Arguments shared by the REST API (request bodies) and the MCP tools (tool arguments):
one pydantic model per use case, camelCase, unknown fields refused, every field
described with its range and default (the descriptions are what an agent reads in
`tools/list`). Each model knows how to become its service's keyword arguments, so REST
and MCP cannot map them differently.

Ids: wherever a note id is taken, `<uuid>`, `note:<uuid>` and `note:<uuid>@<version>`
(as recall cites it) are accepted; on a change the version works as `expectedVersion`.
A notebook is `<uuid>` or `notebook:<uuid>`, and Personal is named by the explicit value
`"personal"`. Over REST `null` keeps its documented meanings (Personal, top level,
"clear"); in tool arguments `null` is the same as leaving the field out
(`ToolArguments`), because clients and models fill optional fields with null.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonDict, SkipJsonSchema

from grove.kernel.errors import Invalid
from grove.kernel.paging import CURSOR_DOC, CursorText
from grove.kernel.schemas import AS_OF_MAX_CHARS, AsOf, In, Instant, QueryIn, Uuid
from grove.kernel.validation import (
    NONBLANK_TEXT,
    STORABLE_TEXT,
    TIME_ZONE_MAX_CHARS,
    zone_names,
)
from notebooks import rules
from notebooks.models import (
    CONTENT_MAX_CHARS,
    NAME_MAX_CHARS,
    RETENTION_MAX_DAYS,
    SOURCE_AGENT_MAX_CHARS,
    TAG_MAX_CHARS,
    TAGS_MAX,
    TASK_ID_MAX_CHARS,
)
from notebooks.rules import BATCH_MAX, NOTEBOOK_PAGE_MAX, content_max_chars
from notebooks.schemas.ids import (  # noqa: F401 - the ids, importable from here too
    CITED_NOTE_ID_PATTERN,
    NONBLANK_RULE,
    NOTE_ID,
    NOTE_ID_CHANGE,
    NOTE_ID_PATTERN,
    NOTEBOOK_ID_PATTERN,
    ONCE,
    OPERATION_ID,
    PERSONAL,
    PLACE_PATTERN,
    TEXT_RULE,
    TYPED_ID_PATTERN,
    CitedNoteId,
    Importance,
    NotebookId,
    NoteId,
    NoteRef,
    Place,
    TypedId,
    cited_note,
    expected,
    parse_place,
    place_of,
)

KindName = Literal["note", "preference", "fact", "decision", "solution", "handoff"]


class ToolArguments(In):
    """Tool arguments: a `null` is the same as leaving the field out."""

    @model_validator(mode="before")
    @classmethod
    def _null_is_omitted(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data


class Operated(In):
    """Every change may carry its operation id in the body (or `Idempotency-Key`)."""

    operation_id: Uuid | None = Field(default=None, description=OPERATION_ID)


# -- notes -----------------------------------------------------------------------------------

KIND = ("note: a document (the default); preference: how the user likes things; handoff: "
        "where a task stands (needs taskId).")

CONTENT = "Markdown (GFM), trimmed"
RETENTION = "Days to keep it (then it expires; restorable for 60 days)"
TAGS = "Labels, e.g. [\"recipes\"]"
# As given: a leading "#" and capitals are allowed (the service normalises them).
TagName = Annotated[str, Field(pattern=r"^#?[A-Za-z0-9][A-Za-z0-9_./-]*$",
                               max_length=TAG_MAX_CHARS + 1)]
Tags = Annotated[list[TagName], Field(max_length=TAGS_MAX)]
# Limits the service checks (on the trimmed text, with stable error codes) are declared in
# the schema without a second, different check in the model.
_CONTENT_SCHEMA: JsonDict = {"minLength": 1, "maxLength": content_max_chars("note"),
                             "pattern": NONBLANK_TEXT}
# Memory records' text (`remember`, `update_memory`): the memory contract's limit.
_MEMORY_SCHEMA: JsonDict = {"minLength": 1, "maxLength": CONTENT_MAX_CHARS,
                            "pattern": NONBLANK_TEXT}
LIMITS = f" (note {content_max_chars('note'):,} chars; memory kinds {CONTENT_MAX_CHARS:,})"
_RETENTION_SCHEMA: JsonDict = {"minimum": 1, "maximum": RETENTION_MAX_DAYS}


class RememberIn(Operated):
    content: str = Field(description=CONTENT + LIMITS + "; one idea per memory.",
                         json_schema_extra=_CONTENT_SCHEMA)
    kind: KindName | SkipJsonSchema[None] = Field(default=None, description=KIND)
    notebook_id: Place | None = Field(
        default=None, description="A notebook id, or \"personal\" (the default).")
    task_id: str | None = Field(
        default=None, max_length=TASK_ID_MAX_CHARS,
        description="A handoff's task (stable): its live handoff is updated.",
        json_schema_extra=NONBLANK_RULE)
    source_agent: str | None = Field(
        default=None, max_length=SOURCE_AGENT_MAX_CHARS,
        description="Who saves it, e.g. \"claude-code\".", json_schema_extra=TEXT_RULE)
    # Optional but never null (the services have no null meaning for these).
    capture: Literal["explicit", "automatic"] | SkipJsonSchema[None] = Field(
        default=None, description="automatic: on your own initiative (the owner can "
        "pause those); explicit (default): asked to.")
    pinned: bool | SkipJsonSchema[None] = Field(default=None, description="Pinned notes lead "
                                                "query-free recall.")
    tags: Tags | SkipJsonSchema[None] = Field(default=None, description=TAGS)
    importance: Importance | SkipJsonSchema[None] = Field(
        default=None, description="Orders query-free recall (default 0.5).")
    retention_days: int | None = Field(
        default=None, description=RETENTION + "; default: 30 for handoffs, else kept "
        "(REST: null = kept).", json_schema_extra=_RETENTION_SCHEMA)
    find_similar: bool = Field(
        default=False, description="true: similar also names near-duplicates (a slower "
        "save).")
    supersedes: NoteId | SkipJsonSchema[None] = Field(
        default=None, description="The note this replaces (note:<id>@<v>): archived, "
        "marked superseded by this one.")

    # What the service adds across fields, for the OpenAPI document (grove.interfaces.rest).
    openapi_rules: ClassVar[JsonDict] = {
        "if": {"properties": {"kind": {"const": "handoff"}}},
        "then": {"required": ["taskId"],
                 "properties": {"taskId": {"type": "string", "pattern": NONBLANK_TEXT}}}}

    def service_kwargs(self) -> dict[str, Any]:
        """`note_remember` keywords (without actor and operation id)."""
        optional = self.not_null("capture", "pinned", "tags", "importance")
        optional |= self.given("source_agent", "retention_days")
        place = place_of(self.notebook_id) if "notebook_id" in self.model_fields_set \
            else rules.HOME  # null over REST: Personal; left out: the caller's home
        replaced = {} if self.supersedes is None else {
            "supersedes": (self.supersedes.id, self.supersedes.version)}
        return {"content": self.content, "kind": self.kind or "note",
                "notebook_id": place, "task_id": self.task_id,
                "find_similar": self.find_similar, **optional, **replaced}



class NoteUpdateIn(Operated):
    expected_version: int | None = Field(
        default=None, ge=1, description="The version you read; omitted: no check.")
    content: str | SkipJsonSchema[None] = Field(
        default=None, description=CONTENT + " (its kind's limit); replaces the whole body.",
        json_schema_extra=_CONTENT_SCHEMA)
    kind: KindName | SkipJsonSchema[None] = Field(default=None, description=KIND)
    task_id: str | None = Field(default=None, max_length=TASK_ID_MAX_CHARS,
                                description="A handoff's task (REST: null clears it).",
                                json_schema_extra=NONBLANK_RULE)
    source_agent: str | None = Field(default=None, max_length=SOURCE_AGENT_MAX_CHARS,
                                     description="Who saved it (REST: null clears it).",
                                     json_schema_extra=TEXT_RULE)
    pinned: bool | SkipJsonSchema[None] = Field(default=None, description="Pinned notes "
                                                "lead query-free recall.")
    tags: Tags | SkipJsonSchema[None] = Field(default=None, description=TAGS + "; replaces them.")
    importance: Importance | SkipJsonSchema[None] = Field(
        default=None, description="Orders query-free recall.")
    retention_days: int | None = Field(
        default=None, description=RETENTION + ", counted from now (REST: null = kept "
        "forever).",
        json_schema_extra=_RETENTION_SCHEMA)
    relink: bool = Field(default=False, description="Fix links to its old title.")

    CHANGEABLE: ClassVar = ("content", "kind", "task_id", "source_agent", "pinned", "tags",
                            "importance", "retention_days")
    # A change needs a field; a change to a handoff that names the task names one (one
    # that leaves the note's own taskId missing is a 409: the document cannot see it).
    openapi_rules: ClassVar[JsonDict] = {
        "anyOf": [{"required": [to_camel(name)]} for name in CHANGEABLE],
        "if": {"properties": {"kind": {"const": "handoff"}}, "required": ["kind", "taskId"]},
        "then": {"properties": {"taskId": {"type": "string", "pattern": NONBLANK_TEXT}}}}

    def changes(self) -> dict[str, Any]:
        """The fields to change (omitted fields stay; null only where it means "clear")."""
        changes = self.not_null("content", "kind", "pinned", "tags", "importance")
        # With the changes, how to make them: `relink` (not a change of its own).
        return changes | self.given("task_id", "source_agent", "retention_days") | (
            {"relink": True} if self.relink else {})


class BatchItem(In):
    id: NoteId = Field(description="A note id, as above.")
    expected_version: int | None = Field(default=None, ge=1,
                                         description="The version you read.")

    # A version in the id is the expected version: a second, different one is refused.
    openapi_rules: ClassVar[JsonDict] = {
        "if": {"properties": {"id": {"type": "string", "pattern": "@"}}},
        "then": {"properties": {"expectedVersion": {"type": "null"}}}}

    def service_item(self) -> dict[str, Any]:
        return {"id": str(self.id.id),
                "expectedVersion": expected(self.id, self.expected_version)}


class BatchIn(Operated):
    items: list[NoteId | BatchItem] = Field(
        min_length=1, max_length=BATCH_MAX, json_schema_extra={"uniqueItems": True},
        description="Note ids, or {id, expectedVersion}" + ONCE + ".")

    def service_items(self) -> list[Any]:
        return [item.service_item() if isinstance(item, BatchItem)
                else str(item.id) if item.version is None
                else {"id": str(item.id), "expectedVersion": item.version}
                for item in self.items]


class MoveIn(Operated):
    note_ids: list[NoteId] = Field(min_length=1, max_length=BATCH_MAX,
                                   json_schema_extra={"uniqueItems": True},
                                   description="Note ids (versions are not checked)"
                                   + ONCE + ".")
    notebook_id: Place | None = Field(description="Where to: a notebook id or \"personal\" "
                                      "(REST: null = Personal).")
    relink: bool = Field(default=False, description="Fix links naming a path it left.")

    def service_kwargs(self) -> dict[str, Any]:
        return {"note_ids": [ref.id for ref in self.note_ids],
                "notebook_id": place_of(self.notebook_id), "relink": self.relink}


class RestoreRevisionIn(Operated):
    revision: int = Field(ge=1, description="The version to bring back (see note_history).")
    durable: bool = Field(default=False, description="true: a handoff becomes a permanent "
                          "fact.")
    expected_version: int | None = Field(default=None, ge=1, description="The version "
                                         "you read; omitted: no check.")


PLACE_FILTER = "A notebook id or \"personal\"; omitted: all granted"
AS_OF = "What the notes said then: a day (2026-05-31), month (2026-05) or ISO time."
# Optional text with a length limit: the limit on the text itself (on the optional field
# it would be checked against a null too).
AsOfText = Annotated[str, Field(min_length=1, max_length=AS_OF_MAX_CHARS)]


class SearchFilters(In):
    """Library search's arguments that REST and the `list_notes` tool share."""

    query: str | None = Field(default=None, max_length=rules.SEARCH_QUERY_MAX_CHARS,
                              description="Keywords (stemmed; all must match).",
                              json_schema_extra=TEXT_RULE)
    notebook_id: Place | None = Field(default=None, description=PLACE_FILTER +
                                      " (REST: null = Personal).")
    kind: list[KindName] | None = Field(default=None, description="Only these kinds.")
    source_agent: str | None = Field(default=None, max_length=SOURCE_AGENT_MAX_CHARS,
                                     description="Only notes saved by this agent.",
                                     json_schema_extra=TEXT_RULE)
    tag: TagName | None = Field(default=None, description="Only notes with this tag.")
    updated_after: Instant | None = Field(default=None, description="Only notes changed "
                                          "after this time (ISO 8601 with a zone).")
    lifetime: Literal["permanent", "ephemeral"] | None = Field(
        default=None, description="permanent: kept forever; ephemeral: with an expiry.")
    status: Literal["active", "archived", "expired"] = Field(default="active",
                                                             description="Which notes.")
    sort: Literal["relevance", "updated_desc", "updated_asc", "created_desc"] | None = Field(
        default=None, description="Default: relevance with a query, else updated_desc.")
    cursor: CursorText | None = Field(default=None, description=CURSOR_DOC)
    limit: int = Field(default=rules.SEARCH_DEFAULT_LIMIT, ge=1, le=rules.SEARCH_MAX_LIMIT,
                       description="Notes per page.")
    matches: bool = Field(default=False, description="true: which terms matched, with a "
                          "snippet.")
    as_of: AsOfText | SkipJsonSchema[None] = Field(default=None, description=AS_OF)

    openapi_rules: ClassVar[JsonDict] = {
        "if": {"properties": {"sort": {"const": "relevance"}}, "required": ["sort"]},
        "then": {"required": ["query"],
                 "properties": {"query": {"type": "string", "pattern": NONBLANK_TEXT}}}}

    def service_kwargs(self) -> dict[str, Any]:
        """`note_search` keywords: an omitted notebookId means everything granted."""
        place = place_of(self.notebook_id) if "notebook_id" in self.model_fields_set \
            else rules.EVERYWHERE
        return {"query": self.query, "notebook_id": place, "kinds": self.kind,
                "source_agent": self.source_agent, "tag": self.tag,
                "updated_after": self.updated_after,
                "lifetime": self.lifetime, "status": self.status, "sort": self.sort,
                "cursor": self.cursor, "limit": self.limit, "matches": self.matches,
                "as_of": self.as_of}


class SearchIn(SearchFilters):
    """`POST /v1/notes/search`: the shared filters and a REST-only one (the tool's
    schema stays as it is: tools/list has a size budget)."""

    include_subnotebooks: bool = Field(default=False, description="true, with a notebookId: "
                                       "its sub-notebooks' notes too, those granted.")
    pinned: bool | None = Field(default=None, description="true: only pinned notes; false: "
                                "only notes not pinned. Omitted: both.")
    as_of: AsOf | None = Field(default=None, description=AS_OF)
    openapi_rules: ClassVar[JsonDict] = SearchFilters.openapi_rules

    def service_kwargs(self) -> dict[str, Any]:
        return {**super().service_kwargs(), "include_subnotebooks": self.include_subnotebooks,
                "pinned": self.pinned}


# -- notebooks -------------------------------------------------------------------------------


class NotebookCreateIn(Operated):
    name: str = Field(max_length=NAME_MAX_CHARS, description="Unique among its siblings.",
                      json_schema_extra={"minLength": 1, **NONBLANK_RULE})
    parent_id: NotebookId | None = Field(default=None, description="Inside this notebook; "
                                         "omitted: the top level.")


class NotebookUpdateIn(Operated):
    # The length limit on the text itself: on the optional field it would be checked
    # against a null too (a TypeError, once a 500).
    name: Annotated[str, Field(max_length=NAME_MAX_CHARS)] | SkipJsonSchema[None] = Field(
        default=None, description="A new name.",
        json_schema_extra={"minLength": 1, **NONBLANK_RULE})
    parent_id: NotebookId | Literal["root"] | None = Field(
        default=None, description="Move it inside this notebook, or \"root\" to the top "
        "level (REST: null = top level).")

    openapi_rules: ClassVar[JsonDict] = {"anyOf": [{"required": ["name"]},
                                                   {"required": ["parentId"]}]}

    def changes(self) -> dict[str, Any]:
        changes = self.not_null("name") | self.given("parent_id")
        if changes.get("parent_id") == "root":
            changes["parent_id"] = None
        return changes


# -- recall ----------------------------------------------------------------------------------


class RecallFields(In):
    """Recall's arguments shared by `POST /v1/recall` and the MCP tool."""

    query: str | None = Field(default=None, max_length=rules.RECALL_QUERY_MAX_CHARS,
                              description="Plain words; omit it for the profile.",
                              json_schema_extra=TEXT_RULE)
    notebook_id: Place | None = Field(default=None, description=PLACE_FILTER +
                                      " (REST: null = Personal).")
    notebook_ids: list[NotebookId] | None = Field(
        default=None, max_length=100, description="Several notebooks; not with notebookId.")
    include_personal: bool = Field(default=True, description="Also Personal notes, when "
                                   "granted.")
    task_id: str | None = Field(default=None, max_length=TASK_ID_MAX_CHARS,
                                description="Without a query: also this task's live handoff.",
                                json_schema_extra=NONBLANK_RULE)
    tag: TagName | None = Field(default=None, description="Only notes with this tag.")
    limit: int = Field(default=rules.RECALL_DEFAULT_LIMIT, ge=1, le=rules.RECALL_MAX_LIMIT,
                       description="Most notes to return.")
    max_chars: int = Field(default=rules.RECALL_DEFAULT_MAX_CHARS, ge=rules.RECALL_MIN_MAX_CHARS,
                           le=rules.RECALL_MAX_MAX_CHARS,
                           description="Character budget for content and metadata.")
    expand: Literal["links"] | None = Field(
        default=None, description="links: also notes linked to or from what matched.")
    as_of: AsOfText | SkipJsonSchema[None] = Field(default=None, description=AS_OF)

    openapi_rules: ClassVar[JsonDict] = {"not": {"required": ["notebookId", "notebookIds"]}}

    def service_kwargs(self) -> dict[str, Any]:
        """`recall` keywords: notebookId (one, or Personal only) or notebookIds."""
        place: Any = rules.EVERYWHERE if self.notebook_ids is None else self.notebook_ids
        if "notebook_id" in self.model_fields_set:
            if "notebook_ids" in self.model_fields_set:  # even null: the schema says so
                raise Invalid("Send notebookId or notebookIds, not both.", code="invalid_scope")
            place = place_of(self.notebook_id)  # None: Personal only
        if {"expand", "as_of"} <= self.model_fields_set:  # even null, as the schema says
            raise Invalid("expand reads links as they are now; it does not go with asOf.",
                          code="invalid_expand")
        return {"query": self.query, "place": place,
                "include_personal": self.include_personal, "task_id": self.task_id,
                "tag": self.tag, "limit": self.limit, "max_chars": self.max_chars,
                "expand": self.expand, "as_of": self.as_of}


class RecallIn(RecallFields):
    """`POST /v1/recall`: also the zone the query's time words are read in, and
    `timings`. The MCP tool reads time words in the account's zone (Settings), and
    spends no bytes of every client's context on either argument."""

    # The OpenAPI document names every zone the service accepts, as the brief's does.
    time_zone: str | None = Field(default=None, max_length=TIME_ZONE_MAX_CHARS,
                                  description="IANA zone of the query's time words "
                                  "(\"last week\"); default: the account's (Settings).",
                                  json_schema_extra={"enum": [
                                      *sorted(zone_names()), None]})
    # An operator's diagnostic, so REST only as well.
    timings: bool = Field(default=False, description="true: `meta.timings`, the "
                          "milliseconds each stage of this recall took.")
    as_of: AsOf | None = Field(default=None, description=AS_OF)

    # Read from the class itself by the REST document (grove.interfaces.rest).
    openapi_rules: ClassVar[JsonDict] = {"not": {"anyOf": [
        {"required": ["notebookId", "notebookIds"]}, {"required": ["expand", "asOf"]}]}}

    def service_kwargs(self) -> dict[str, Any]:
        return {**super().service_kwargs(), "time_zone": self.time_zone,
                "timings": self.timings}


class NoteFilters(QueryIn):
    notebook_id: Place | None = Field(
        default=None, description="A notebook id, `personal` for Personal; omit for all")
    kind: list[KindName] | None = None
    source_agent: str | None = Field(default=None, max_length=SOURCE_AGENT_MAX_CHARS,
                                     json_schema_extra={"pattern": STORABLE_TEXT})
    tag: TagName | None = None
    updated_after: Instant | None = None
    lifetime: Literal["permanent", "ephemeral"] | None = None
    status: Literal["active", "archived", "expired"] = "active"
    sort: Literal["updated_desc", "updated_asc", "created_desc"] | None = None
    cursor: CursorText | None = Field(default=None, description=CURSOR_DOC)
    limit: int = Field(default=rules.SEARCH_DEFAULT_LIMIT, ge=1, le=rules.SEARCH_MAX_LIMIT)
    as_of: AsOf | None = Field(default=None, description=AS_OF)


class NoteArgs(ToolArguments):
    """The `get_note` tool's arguments."""

    note_id: CitedNoteId = Field(description=NOTE_ID + " (@v: that version; #n: passage n).")
    as_of: AsOfText | SkipJsonSchema[None] = Field(default=None, description=AS_OF)


class AsOfQuery(QueryIn):
    """`GET /v1/notes/{id}` and `GET /v1/get/{typedId}`: the note as it was then."""

    as_of: AsOf | None = Field(default=None, description=AS_OF)


class NotebookListIn(In):
    include_archived: bool = Field(default=False, description="Archived notebooks too.")
    cursor: CursorText | None = Field(default=None, description=CURSOR_DOC)
    limit: int = Field(default=100, ge=1, le=NOTEBOOK_PAGE_MAX,
                       description="Notebooks per page.")


class NotebookListQuery(QueryIn, NotebookListIn):
    """`GET /v1/notebooks`: the same arguments from a query string."""
