"""Ask's shapes — arguments and results of `ask`, conversations and turns — shared by
REST, MCP and the pages. JSON is camelCase (SPEC §3)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.json_schema import JsonDict

from ask.models import Conversation, Turn
from ask.rules import (
    CONTEXT_NOTEBOOKS_MAX,
    CONTEXT_NOTES_MAX,
    PREVIOUS_MAX,
    QUERY_MAX_CHARS,
    SEARCH_MAX_CHARS,
)
from grove.kernel.paging import CURSOR_DOC, CursorText
from grove.kernel.schemas import In, Out, QueryIn, Uuid
from grove.kernel.validation import NONBLANK_TEXT, STORABLE_TEXT
from notebooks.rules import EVERYWHERE
from notebooks.schemas.arguments import (
    PLACE_FILTER,
    Place,
    ToolArguments,
    place_of,
)
from notebooks.schemas.notes import AUTHORITY, KNOWN_FALSE, KnownFalse, NoteOut
from notebooks.schemas.tools import FoundNote

# The question's limit is the service's check (clean_query: 400 invalid_query, the same
# over REST, MCP and the page), declared in the schema without a second check here.
VIA = ("Reached through a link: the note whose cited passage links to this one (or is "
       "linked from it), found for the question first.")
_QUESTION: JsonDict = {"maxLength": QUERY_MAX_CHARS, "pattern": NONBLANK_TEXT}


class AskIn(In):
    query: str = Field(description="The question, in plain words.",
                       json_schema_extra=_QUESTION)
    notebook_id: Place | None = Field(default=None, description=PLACE_FILTER +
                                      " (REST: null = Personal).")
    include_personal: bool = Field(default=True, description="With everything granted: "
                                   "Personal notes too, when granted.")
    previous_questions: list[Annotated[str, Field(json_schema_extra=_QUESTION)]] = Field(
        default_factory=list, max_length=PREVIOUS_MAX,
        description="Earlier questions, oldest first, for a follow-up like \"and in "
        "May?\".")
    mode: Literal["answer", "search"] = Field(default="answer", description="search: the "
                                              "sources only, no answer.")

    def service_kwargs(self) -> dict[str, Any]:
        place = place_of(self.notebook_id) if "notebook_id" in self.model_fields_set \
            else EVERYWHERE
        return {"query": self.query, "notebook_id": place,
                "include_personal": self.include_personal,
                "previous_questions": self.previous_questions, "mode": self.mode}


class ContextIn(In):
    notes: list[Uuid] = Field(default_factory=list,
                                   max_length=CONTEXT_NOTES_MAX,
                                   json_schema_extra={"uniqueItems": True},
                                   description="Up to 12 note ids, each once")
    notebooks: list[Uuid] = Field(default_factory=list,
                                       max_length=CONTEXT_NOTEBOOKS_MAX,
                                       json_schema_extra={"uniqueItems": True},
                                       description="Up to 6 notebook ids, each once")
    only: bool = Field(default=False, description="Use nothing outside the selection")


class ConversationCreateIn(In):
    id: Uuid = Field(description="The conversation's id, chosen by the client (a UUID): "
                                      "retrying the same create is harmless")
    notebook_id: Uuid | None = Field(
        default=None, description="One notebook; null = Personal only; omit for all granted")
    include_personal: bool = True
    title: str | None = Field(default=None, json_schema_extra={"pattern": STORABLE_TEXT})

    def service_kwargs(self) -> dict[str, Any]:
        place = self.notebook_id if "notebook_id" in self.model_fields_set \
            else EVERYWHERE
        return {"conversation_id": self.id, "notebook_id": place,
                "include_personal": self.include_personal, "title": self.title}


class TidyIn(In):
    notebook_id: Uuid | None = Field(description="The notebook to tidy; null = Personal")


class TurnIn(In):
    id: Uuid = Field(description="The turn's id, chosen by the client (a UUID): a retry "
                                      "with the same id and body replays")
    query: str = Field(description=f"The question (at most {QUERY_MAX_CHARS:,} characters)",
                       json_schema_extra=_QUESTION)
    format: Literal["plain", "markdown"] = "plain"
    expected_version: int = Field(ge=0, description="The conversation version you last saw")
    context: ContextIn | None = Field(
        default=None, description="Strict source selection: notes and notebooks to answer "
                                  "from; with only=true nothing else is used")
    tidy: TidyIn | None = Field(
        default=None, description="Tidy one notebook (or Personal): its likely duplicates "
                                  "and contradictions become merge and edit proposals")

    def service_kwargs(self) -> dict[str, Any]:
        context = None
        if self.context is not None:
            context = {"notes": self.context.notes, "notebooks": self.context.notebooks,
                       "only": self.context.only}
        tidy = None if self.tidy is None else {"notebookId": self.tidy.notebook_id}
        return {"turn_id": self.id, "query": self.query, "format": self.format,
                "expected_version": self.expected_version, "context": context,
                "tidy": tidy}


class EmptyIn(In):
    """`{}`: apply and undo take no arguments (the proposal says everything)."""


class HistorySearchIn(In):
    query: str | None = Field(default=None, max_length=SEARCH_MAX_CHARS,
                              json_schema_extra={"pattern": STORABLE_TEXT},
                              description="Literal, case-insensitive text to find in titles "
                                          "and questions")
    cursor: CursorText | None = Field(default=None, description=CURSOR_DOC)


class AnswerBlock(Out):
    text: str
    citations: list[str]
    # False when the model cited something it was not shown (dropped) or nothing at all.
    supported: bool
    # Claims on the scope's negative list this block states (lexically or in meaning,
    # with the same values): shown as such, never as a supported answer (SPEC §10).
    contradicts_known_false: list[str] = Field(default_factory=list)


class Source(Out):
    cite_as: str  # note:<uuid>@<version>, or note:<uuid>@<version>#<passage>
    note: NoteOut
    score: float
    # What ground truth says of the note, as recall says it (each note by its own
    # place's truth when the question is not held to one notebook).
    authority: bool = Field(default=False, description=AUTHORITY)
    known_false: list[KnownFalse] = Field(default_factory=list, description=KNOWN_FALSE)
    # Reached through a link from this note, itself evidence of the answer (issue 38).
    via: uuid.UUID | None = Field(default=None, exclude_if=lambda v: v is None,
                                  description=VIA)


class PreviewNote(Out):
    """A note a proposal changes, at the version the proposal was made from."""

    id: uuid.UUID | None  # None: the note a create would make
    version: int | None
    label: str  # its first line
    notebook_id: uuid.UUID | None
    notebook: str  # where it is: the notebook's path, or "Personal"
    # edited | created | survives (a merge's survivor) | archived | restored | deleted | moved
    effect: str
    to_notebook: str | None = None  # moved: where to


class DiffRow(Out):
    kind: Literal["same", "del", "add", "gap", "section"]
    text: str


class PreviewDiff(Out):
    """The change of one note's content, from the version the proposal was made from."""

    note_id: uuid.UUID | None  # None: a new note (everything added)
    from_version: int | None
    kind_from: str | None
    kind_to: str
    rows: list[DiffRow]


class PreviewNotebook(Out):
    """A notebook a proposal changes or writes into, with its full subtree counts."""

    id: uuid.UUID | None  # None: the notebook a create_notebook would make
    path: str  # "Work / Staging", or "Personal", or "(top level)"
    effect: str  # destination | moved | created | parent
    notebooks: int  # in its subtree, itself included
    notes: int  # in its subtree (not deleted)


class Preview(Out):
    notes: list[PreviewNote]
    diffs: list[PreviewDiff]
    notebooks: list[PreviewNotebook]
    # What undo will do once applied; None: this change has no undo (delete).
    undo: str | None


class ProposedChange(Out):
    """A change an answer proposes, as checked against what the model was shown."""

    kind: Literal["edit", "create", "merge", "organise", "archive", "restore", "delete"]
    action: Literal["move_notes", "create_notebook", "move_notebook"] | None
    summary: str
    preview: Preview


class Changed(Out):
    """What differs from a proposal's fingerprint: a note (its version then and now;
    now None: deleted or out of reach) or a notebook (its state or subtree changed)."""

    what: Literal["note", "notebook"]
    id: uuid.UUID
    was: int | None = None
    now: int | None = None


class ProposalOut(ProposedChange):
    """A stored proposal of a conversation turn, with what can be done with it now."""

    id: uuid.UUID
    position: int
    # proposed (can be applied) | applied | undone | stale (the library changed since
    # the preview: it cannot be applied; ask again)
    state: Literal["proposed", "applied", "undone", "stale"]
    can_apply: bool
    can_undo: bool  # applied, with an undo, and nothing it touched changed since
    changed: list[Changed]  # why it is stale, or why undo is fenced out
    applied_at: datetime | None
    undone_at: datetime | None


class AskOut(Out):
    # not_covered: the notebook's `restrict` ground truth does not answer this, and
    # nothing else may (SPEC §10); the model was not asked.
    status: Literal["answered", "insufficient_evidence", "no_evidence", "not_covered",
                    "disabled", "search"]
    blocks: list[AnswerBlock]
    sources: list[Source]
    # Proposed changes as data: a stateless answer's cannot be applied (ask in a
    # conversation, where the owner applies them).
    proposals: list[ProposedChange] = Field(default_factory=list)
    proposals_dropped: int = 0


class ContextOut(Out):
    notes: list[uuid.UUID]
    notebooks: list[uuid.UUID]
    only: bool


class SourceOut(Out):
    """A note revision an answer was made from (stored with the turn)."""

    cite_as: str  # note:<uuid>@<version>, or note:<uuid>@<version>#<passage>
    note_id: uuid.UUID
    version: int
    kind: str
    notebook_id: uuid.UUID | None
    label: str  # the note's first line, shortened
    via: uuid.UUID | None = Field(default=None, exclude_if=lambda v: v is None,
                                  description=VIA)
    via_label: str | None = Field(default=None, exclude_if=lambda v: v is None,
                                  description="The first line of the note `via` names.")


class NotebookCoverage(Out):
    id: uuid.UUID
    name: str
    notes: int  # live notes in the notebook
    supplied: int  # of them, shown to the model
    searched: bool  # too many to show all: the best matches for the question were picked


class DocumentCoverage(Out):
    """A picked long note, sent as its passages that match the question (issue 37)."""

    id: uuid.UUID
    title: str
    passages: int  # the note's passages
    supplied: int  # of them, shown to the model
    matched: bool  # they matched the question (else: the note's first passages)


class Coverage(Out):
    """How much of a source selection the answer saw."""

    notes_selected: int
    notes_supplied: int
    notebooks: list[NotebookCoverage]
    supplied: int
    truncated: int  # supplied notes cut to the per-note limit
    complete: bool
    documents: list[DocumentCoverage] = Field(default_factory=list)


class TidyCoverage(Out):
    """What a tidy-up looked at: the place's live notes compared by their stored vectors
    and content, the groups of likely duplicates found, and how many went to the model."""

    notebook_id: uuid.UUID | None
    scanned: int  # live notes compared
    truncated: bool  # the place holds more live notes than were compared
    unindexed: int  # compared by content only (no current vector yet)
    groups: int  # groups of likely duplicates found
    groups_shown: int  # of them, sent to the model (whole groups, up to the note limit)
    notes_shown: int


class TurnResult(Out):
    status: Literal["answered", "insufficient_evidence", "no_evidence", "not_covered",
                    "disabled"]
    blocks: list[AnswerBlock]
    sources: list[SourceOut]
    context_coverage: Coverage | None = None
    # A follow-up resolved against the earlier turns, as used for retrieval.
    resolved_question: str | None = None
    # Proposals the model made that were dropped (malformed, naming a note it was not
    # shown or one outside the grant …): counted, never shown.
    proposals_dropped: int = 0
    tidy_coverage: TidyCoverage | None = None


class SourceChange(Out):
    """A source whose cited text the note no longer has (`ask.selectors.citations`: an
    edit of its words since — not a pin, a tag or a move); read live."""

    note_id: uuid.UUID
    cited_version: int  # the version the answer cited
    version: int | None  # the note's version now; None: deleted or out of reach


class TurnError(Out):
    code: str
    message: str


class TidyOut(Out):
    notebook_id: uuid.UUID | None  # None: Personal


class TurnOut(Out):
    id: uuid.UUID
    conversation_id: uuid.UUID
    position: int
    query: str
    format: Literal["plain", "markdown"]
    context: ContextOut | None
    tidy: TidyOut | None
    status: Literal["pending", "completed", "failed"]
    result: TurnResult | None
    error: TurnError | None
    proposals: list[ProposalOut]
    created_at: datetime
    completed_at: datetime | None
    # The sources whose cited text changed since the answer (read live; empty until
    # there is a result).
    sources_changed: list[SourceChange] = Field(default_factory=list)

    @classmethod
    def of(cls, turn: Turn, proposals: list[ProposalOut] | None = None) -> TurnOut:
        return cls(
            id=turn.client_id, conversation_id=turn.conversation.client_id,
            position=turn.position,
            query=turn.query, format=turn.format,  # type: ignore[arg-type]
            context=ContextOut.model_validate(turn.context) if turn.context else None,
            tidy=TidyOut.model_validate(turn.tidy) if turn.tidy else None,
            status=turn.status,  # type: ignore[arg-type]
            result=TurnResult.model_validate(turn.result) if turn.result else None,
            error=TurnError(code=turn.error_code, message=turn.error_message)
            if turn.status == Turn.Status.FAILED else None,
            proposals=proposals or [], created_at=turn.created_at,
            completed_at=turn.completed_at)


class ConversationOut(Out):
    id: uuid.UUID
    title: str
    notebook_id: uuid.UUID | None
    # everywhere = every granted notebook (+ Personal when includePersonal); personal;
    # notebook = the one named by notebookId.
    scope: Literal["everywhere", "personal", "notebook"]
    include_personal: bool
    version: int
    turn_count: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, conversation: Conversation) -> ConversationOut:
        return cls(id=conversation.client_id, title=conversation.title,
                   notebook_id=conversation.notebook_id,
                   scope=conversation.scope,  # type: ignore[arg-type]
                   include_personal=conversation.include_personal,
                   version=conversation.version, turn_count=conversation.version,
                   created_at=conversation.created_at, updated_at=conversation.updated_at)


class ConversationDetail(ConversationOut):
    turns: list[TurnOut]


@dataclass(frozen=True)
class ConversationPage:
    """What a conversation's web page shows (`selectors.conversation_page`)."""

    detail: ConversationDetail  # its turns' `sources_changed` read with it
    picked: list[NoteOut]  # the last turn's picked notes, for the follow-up's form


class ConversationFound(Out):
    """A history search hit: no assistant payloads, only what the user wrote."""

    id: uuid.UUID
    title: str
    turn_count: int
    created_at: datetime
    updated_at: datetime
    matched_question: str | None  # the first question that matched, if any


class AskArgs(ToolArguments, AskIn):
    pass


# What the `ask` tool returns of a proposal: data an agent can relay, never applied by
# the tool (the owner applies proposals in Grove). Optional fields are left out rather
# than null, like CompactNote's. (A comment, not a docstring: a docstring would travel in
# every tools/list as the schema's description.)
class CompactProposal(Out):

    kind: str
    summary: str
    notes: list[str]  # the notes it changes, as note:<uuid>@<version>
    changes: list[str]  # one line per affected note or notebook
    action: str | None = None  # organise only
    undo: str | None = None  # what undo would do; left out: no undo (a delete)

    @classmethod
    def of(cls, change: ProposedChange) -> CompactProposal:
        preview = change.preview
        lines = [f"{'note:' + str(n.id) + '@' + str(n.version) if n.id else 'new note'} "
                 f"({n.label}): {n.effect}" + (f" to {n.to_notebook}" if n.to_notebook else "")
                 for n in preview.notes]
        lines += [f"notebook {nb.path}: {nb.effect} ({nb.notebooks} notebooks, {nb.notes} "
                  "notes)" for nb in preview.notebooks]
        fields: dict[str, Any] = {
            "kind": change.kind, "summary": change.summary, "changes": lines,
            "notes": [f"note:{n.id}@{n.version}" for n in preview.notes if n.id]}
        if change.action:
            fields["action"] = change.action
        if preview.undo:
            fields["undo"] = preview.undo
        return cls(**fields)


class AskToolOut(Out):
    status: str  # answered | insufficient_evidence | no_evidence | not_covered | disabled | search
    blocks: list[AnswerBlock]
    sources: list[FoundNote]
    # Proposed changes as data only: the owner applies them in the website.
    proposals: list[CompactProposal] = Field(default_factory=list)

    def mcp_text(self) -> str:
        lines = [f"status: {self.status}"]
        for block in self.blocks:
            cited = f" [{', '.join(block.citations)}]" if block.citations else ""
            lines.append(("" if block.supported else "(unsupported) ") + block.text + cited)
            if block.contradicts_known_false:
                lines.append("  This block states what the owner marked false: "
                             + "; ".join(f"“{c}”" for c in block.contradicts_known_false)
                             + " — do not present it as true.")
        if self.sources:
            lines.append("Sources:\n\n" + "\n\n".join(s.mcp_line() for s in self.sources))
        if self.proposals:
            lines.append("Proposed changes (not applied, not stored: to apply them the "
                         "owner asks in a Grove conversation, on the website):\n" + "\n".join(
                             f"- {p.kind}{'/' + p.action if p.action else ''}: {p.summary}"
                             + "".join(f"\n  - {line}" for line in p.changes)
                             for p in self.proposals))
        return "\n\n".join(lines)


class ListFilters(QueryIn):
    after: Uuid | None = Field(default=None, description="The last conversation id of the "
                               "previous page (its meta.nextCursor); one that is not yours: "
                               "404.")
