"""The MCP tools' shapes: their arguments (the shared `*In` shapes, where `null` means
omitted) and their compact results — what an agent reads, in as few tokens as will do."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Self

from pydantic import Field, WithJsonSchema, model_validator
from pydantic.json_schema import SkipJsonSchema

from grove.kernel.errors import Invalid
from grove.kernel.schemas import In, ListMeta, Out
from notebooks.rules import BATCH_MAX, BATCH_REMEMBER_MAX
from notebooks.schemas.agent_writes import (
    BATCH_ITEMS_DOC,
    BatchItems,
    ProjectArg,
    remember_items,
)
from notebooks.schemas.arguments import (
    KIND,
    NOTE_ID,
    NOTE_ID_CHANGE,
    BatchIn,
    BatchItem,
    KindName,
    MoveIn,
    NotebookCreateIn,
    NotebookId,
    NotebookListIn,
    NotebookUpdateIn,
    NoteId,
    NoteUpdateIn,
    RecallFields,
    RememberIn,
    RestoreRevisionIn,
    SearchFilters,
    ToolArguments,
)
from notebooks.schemas.notes import (
    BatchSaved,
    BatchSavedOut,
    ItemError,
    KnownFalse,
    NotebookOut,
    NoteOut,
    RecallMeta,
    RememberOut,
    RevisionOut,
    known_false_words,
)
from notebooks.schemas.truth import PendingRef
from passages.schemas import PassageRef


def _minute(value: datetime) -> datetime:
    return value.replace(second=0, microsecond=0)


class CompactNote(Out):
    """A note as the MCP tools return it — what a model needs to read and cite it: the
    versioned id, kind, notebook name (none: Personal), content, last change (to the
    minute), a handoff's task id, whether it is pinned, the note that superseded it.
    Optional fields are left out rather than null (the Inspector's --strict lint)."""

    id: str  # note:<uuid>@<version>
    kind: str
    content: str
    updated: datetime
    notebook: str | None = None  # set only for a note in a notebook
    task_id: str | None = None  # set only for a note that has one
    pinned: bool | None = None  # set (true) only for a pinned note
    superseded_by: str | None = None  # note:<uuid> that replaced it (`supersedes`)

    @classmethod
    def of(cls, note: NoteOut | RevisionOut, names: dict[uuid.UUID, str], *,
           full: bool = False, record: dict[str, Any] | None = None) -> Self:
        """The compact note of a note or of one of its revisions (`updated`: when that
        revision was made); `names` holds the notebook names the caller may see."""
        changed = note.updated_at if isinstance(note, NoteOut) else note.created_at
        fields: dict[str, object] = {
            "id": note.versioned_id, "kind": note.kind, "content": note.content,
            "updated": _minute(changed)}
        if note.notebook_id is not None:
            fields["notebook"] = names.get(note.notebook_id, "(a notebook you cannot see)")
        if note.task_id:
            fields["task_id"] = note.task_id
        if note.pinned:
            fields["pinned"] = True
        if (replaced := getattr(note, "superseded_by", None)) is not None:
            fields["superseded_by"] = f"note:{replaced}"
        if full:
            fields["record"] = note.to_rest_json() if record is None else record
        return cls(**fields)  # type: ignore[arg-type]

    def mcp_line(self) -> str:
        """`note:<id>@<v> kind[, pinned][, notebook], date` over the content: what a model
        reads. A Personal note names no notebook (the tools' descriptions say so)."""
        head = self.kind + (f" ({self.task_id})" if self.task_id else "")
        if self.pinned:
            head += ", pinned"
        if self.notebook is not None:
            head += f", {self.notebook}"
        replaced = f" (superseded by {self.superseded_by})" if self.superseded_by else ""
        return f"{self.id} {head}, {self.updated:%Y-%m-%d}{replaced}\n{self.content}"


class ToolNote(CompactNote):
    """A compact note with what declared ground truth says of it (`authority`, set only
    when true; `knownFalse`, only when it matches a claim known to be false — the same
    marks REST gives, `notebooks.selectors.truth_marks`), and its full record on request
    (`full: true`, get_note), as `GET /v1/notes/{id}` returns it."""

    authority: bool | None = None
    known_false: list[KnownFalse] | None = None
    record: dict[str, Any] | None = None

    @classmethod
    def marked(cls, note: NoteOut | RevisionOut, names: dict[uuid.UUID, str], *,
               authority: bool = False, known_false: Sequence[KnownFalse] = (),
               full: bool = False, record: dict[str, Any] | None = None) -> Self:
        fields: dict[str, Any] = {}
        if authority:
            fields["authority"] = True
        if known_false:
            fields["known_false"] = list(known_false)
        return cls.of(note, names, full=full, record=record).model_copy(update=fields)

    def mcp_text(self) -> str | None:
        """get_note's text: the note as JSON (None: the structured result's), after
        what ground truth says of it in words, when it says anything."""
        said = [*(["This note is declared ground truth where this read is held."]
                  if self.authority
                  else []),
                *([known_false_words(self.known_false)] if self.known_false else [])]
        if not said:
            return None
        return "\n".join([*said, json.dumps(
            self.model_dump(mode="json", by_alias=True, exclude_none=True),
            ensure_ascii=False, separators=(",", ":"))])

    def mcp_line(self) -> str:
        """The compact line, saying in words what ground truth says of the note."""
        line = super().mcp_line()
        head, _, body = line.partition("\n")
        if self.authority:
            head += " — declared ground truth"
        warning = f"\n{known_false_words(self.known_false)}" if self.known_false else ""
        return f"{head}\n{body}{warning}"


class ToolPassage(Out):
    id: str  # note:<uuid>@<version>#<n>: cite this
    of: int
    headings: list[str]

    @classmethod
    def of_ref(cls, passage: PassageRef | None) -> ToolPassage | None:
        return None if passage is None else cls(id=passage.id, of=passage.of,
                                                 headings=passage.headings)


class FoundNote(ToolNote):
    """A note recall found or get_note read — for a document, one passage of it:
    `passage` names it and `content` is its text (set only then)."""

    passage: ToolPassage | None = None
    via: str | None = None  # note:<uuid>: reached through a link from it (expand)

    @classmethod
    def found(cls, note: NoteOut | RevisionOut, names: dict[uuid.UUID, str], *,
              passage: PassageRef | None, via: uuid.UUID | None = None, **marks: Any) -> Self:
        out = cls.marked(note, names, **marks)
        if via is not None:
            out = out.model_copy(update={"via": f"note:{via}"})
        return out if passage is None else out.model_copy(
            update={"passage": ToolPassage.of_ref(passage)})

    def mcp_line(self) -> str:
        """ToolNote's line, with which passage of a document the content is."""
        line = super().mcp_line()
        if self.via is not None:
            head, _, body = line.partition("\n")
            line = f"{head} — reached through a link from {self.via}\n{body}"
        if self.passage is None:
            return line
        head, _, body = line.partition("\n")
        trail = " › ".join(self.passage.headings)
        head += (f" — passage {self.passage.id.rpartition('#')[2]} of {self.passage.of}"
                 + (f" ({trail})" if trail else "") + f", cite {self.passage.id}")
        return f"{head}\n{body}"


class ToolNotebook(Out):
    id: str  # notebook:<uuid>
    name: str
    # notebook:<uuid>; left out at the top level (or for a parent you may not see)
    parent_id: str | None = None
    archived: bool | None = None  # set (true) only for an archived notebook

    @classmethod
    def of(cls, notebook: NotebookOut) -> ToolNotebook:
        fields: dict[str, object] = {"id": notebook.typed_id, "name": notebook.name}
        if notebook.parent_id:
            fields["parent_id"] = f"notebook:{notebook.parent_id}"
        if notebook.archived_at is not None:
            fields["archived"] = True
        return cls(**fields)  # type: ignore[arg-type]


class ToolRevision(Out):
    id: str  # note:<uuid>@<version>
    reason: str
    created: datetime
    kind: str
    content: str
    status: str
    restored_from: int | None = None

    @classmethod
    def of(cls, revision: RevisionOut) -> ToolRevision:
        fields: dict[str, object] = {
            "id": revision.versioned_id, "reason": revision.reason,
            "created": _minute(revision.created_at), "kind": revision.kind,
            "content": revision.content, "status": revision.status}
        if revision.restored_from is not None:
            fields["restored_from"] = revision.restored_from
        return cls(**fields)  # type: ignore[arg-type]


TOOL_KIND = KIND.replace(" (the default)", "")
FULL = Field(default=False, description="true: add each note's full record.")


class RememberArgs(ToolArguments, RememberIn, ProjectArg):
    # A memory kind, or `note` for a document — or `items`, each with these fields.
    content: str | SkipJsonSchema[None] = Field(  # type: ignore[assignment]
        default=None, description=RememberIn.model_fields["content"].description,
        json_schema_extra=RememberIn.model_fields["content"].json_schema_extra)
    kind: KindName | SkipJsonSchema[None] = Field(default=None, description=TOOL_KIND)
    items: BatchItems | SkipJsonSchema[None] = Field(
        default=None, min_length=1, max_length=BATCH_REMEMBER_MAX, description=BATCH_ITEMS_DOC)

    @model_validator(mode="after")
    def _one_or_many(self) -> Self:
        if self.items is None and (self.content is None or self.kind is None):
            raise ValueError("Give content and kind, or items.")
        if self.items is not None and self.model_fields_set - {"items", "operation_id",
                                                                 "project"}:
            raise ValueError("Give items alone (or with operationId, project).")
        return self

    def service_kwargs(self) -> dict[str, Any]:
        assert self.content is not None
        return {**super().service_kwargs(), "kind": self.kind}

    def service_items(self) -> list[dict[str, Any] | Invalid]:
        assert self.items is not None
        return remember_items(self.items)


class RecallArgs(ToolArguments, RecallFields, ProjectArg):
    full: bool = FULL


class SearchArgs(ToolArguments, SearchFilters, ProjectArg):
    full: bool = FULL


class HistoryArgs(ToolArguments):
    note_id: NoteId = Field(description=NOTE_ID + ".")


class _ChangedNote(In):
    # Listed last among a class's bases, so noteId comes first in the schema.
    note_id: NoteId = Field(description=NOTE_ID_CHANGE)


class NoteUpdateArgs(ToolArguments, NoteUpdateIn, _ChangedNote):
    pass


class RestoreArgs(ToolArguments, RestoreRevisionIn, _ChangedNote):
    pass


# A batch's items as tool arguments: note ids, each fenced by the version it names
# (`note:<id>@<version>`, as recall cites it). The `{id, expectedVersion}` objects REST
# documents say the same thing and are still accepted; the tool's schema names one form.
ToolItems = Annotated[list[NoteId | BatchItem], WithJsonSchema({
    "type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": BATCH_MAX,
    "uniqueItems": True})]
ITEMS = Field(min_length=1, max_length=BATCH_MAX, description="Note ids; one with an "
              "@version that moved on: version_conflict.")


class ForgetArgs(ToolArguments, BatchIn):
    items: ToolItems = ITEMS


class ArchiveArgs(ToolArguments, BatchIn):
    items: ToolItems = ITEMS
    restore: bool = Field(default=False, description="true: bring archived or expired notes "
                          "back instead of archiving.")


class MoveArgs(ToolArguments, MoveIn):
    pass


class NotebookListArgs(ToolArguments, NotebookListIn):
    pass


class NotebookCreateArgs(ToolArguments, NotebookCreateIn):
    pass


class _ChangedNotebook(In):
    notebook_id: NotebookId = Field(description="The notebook to rename or move.")


class NotebookUpdateArgs(ToolArguments, NotebookUpdateIn, _ChangedNotebook):
    pass


def _notes_text(head: str, notes: Sequence[ToolNote], after: str = "") -> str | None:
    """A list of notes as a model reads it: one line of counts, then each note's id,
    kind, notebook and date over its content. None with full records: they were asked
    for, so the text is the structured result's JSON (`grove.interfaces.mcp.tool_result`)."""
    if any(note.record is not None for note in notes):
        return None
    body = "\n\n".join(note.mcp_line() for note in notes) + after
    return head + ("\n\n" + body if body else "")


class RecallResult(Out):
    data: list[FoundNote]
    meta: RecallMeta

    def mcp_text(self) -> str | None:
        meta = self.meta
        head = f"{meta.returned} of {meta.available} notes ({meta.mode})"
        if meta.no_handoff is not None:
            head = (f"No live handoff has task id “{meta.no_handoff}” here; the profile "
                    f"without one. {head}")
        if meta.pending:
            head += f"; {meta.pending} not indexed for meaning yet"
        if meta.truncated:
            head += "; more with a larger limit or maxChars"
        return _notes_text(head, self.data)


class Match(Out):
    id: str  # the note it describes
    terms: list[str]
    snippet: str


class NotesPage(Out):
    data: list[ToolNote]
    meta: ListMeta
    matches: list[Match] | None = None

    def mcp_text(self) -> str | None:
        meta = self.meta
        head = f"{meta.returned} of {meta.available} notes"
        if meta.next_cursor:
            head += f"; next page: cursor {meta.next_cursor}"
        matched = "".join(f"\n\nMatched in {m.id}: {', '.join(m.terms)} — “{m.snippet}”"
                          for m in self.matches or [])
        return _notes_text(head, self.data, matched)


# What a held write's verdict means, in the words a model reads (`Saved.mcp_text`).
VERDICT_WORDS = {
    "contradicts": "It contradicts the notebook's declared ground truth.",
    "needs_review": "It could not be checked against the notebook's declared ground "
                    "truth (no usable answer from the model, the declared set too large "
                    "for one check, or changed meanwhile), so the owner reviews it.",
}


class Saved(Out):
    """A write's answer: the note's new versioned id (what to cite or send back as the
    expected version) and whether its meaning is indexed yet — not the text just sent."""

    id: str | None = None  # note:<uuid>@<version>; left out: a new note held for the owner
    indexing: str  # pending | ready | failed; held: a new note held for the owner
    created: bool | None = None  # remember: false when a live handoff was updated
    # Held for the owner (a change to declared truth, or a write that failed its
    # notebook's check against it): `id` is unchanged.
    pending_revision: PendingRef | None = None
    # Credentials replaced by `[redacted: kind]` before the save, by kind.
    redacted: dict[str, int] | None = None

    @classmethod
    def of(cls, note: NoteOut, created: bool | None = None) -> Saved:
        return cls(id=note.versioned_id, indexing=note.indexing, created=created,
                   pending_revision=note.pending_revision, redacted=note.redacted or None)

    def mcp_text(self) -> str | None:
        """A held write says in words that nothing was saved yet and who decides, over
        the structured result's JSON; any other write is that JSON alone."""
        held = self.pending_revision
        if held is None:
            return None
        if self.id is None:
            what = ("Not saved yet: this new note is held for the owner's review — it is "
                    "not in Grove until the owner accepts it (recall and lists do not "
                    "find it).")
        else:
            what = (f"Not saved yet: this change is held for the owner's review — "
                    f"{self.id} stays as it was, and everyone (you included) reads that "
                    "version until the owner accepts the change.")
        if held.verdict is not None:
            what += " " + VERDICT_WORDS.get(held.verdict, f"The check said: {held.verdict}.")
            if held.contradicts:
                what = what.rstrip(".") + f" ({', '.join(held.contradicts)})."
        else:  # a change to a declared note: every connection's waits for the owner
            what += (" Every change to declared ground truth waits for the owner; a check "
                     "of it against the declared notes runs meanwhile.")
        decides = ("The owner decides, on the website: the notebook's page, Ground truth → "
                   f"“Changes waiting for you” (held change {held.id}). Do not send it "
                   "again; tell the user it waits for their review.")
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return f"{what} {decides}\n\n{json.dumps(data, ensure_ascii=False, separators=(',', ':'))}"


class Remembered(Saved):
    """`remember`'s answer: `Saved`, and the likely duplicates already in the notebook
    (`note:<uuid>`, left out when none) — worth an update_memory of one of them instead
    of keeping both. With `items`: one such answer per item (`items`), each with its
    `index` and `status`, a refused one with its `error`."""

    indexing: str | None = None  # type: ignore[assignment]  # a batch has none of its own
    similar: list[str] | None = None
    replaces: list[str] | None = None  # of similar: what this likely replaces
    superseded: str | None = None  # archived by `supersedes`, marked replaced by this
    items: list[RememberedItem] | None = None

    @classmethod
    def of_batch(cls, saved: BatchSavedOut) -> Remembered:
        return cls(items=[RememberedItem.of_item(item) for item in saved.items])

    @classmethod
    def of_saved(cls, saved: RememberOut) -> Remembered:
        if saved.note is None:
            return cls(id=None, indexing="held", created=None,
                       pending_revision=saved.pending_revision,
                       redacted=saved.redacted or None)
        fields: dict[str, Any] = {"id": saved.note.versioned_id,
                                  "indexing": saved.note.indexing, "created": saved.created,
                                  "redacted": saved.redacted or None}
        if saved.similar:
            fields["similar"] = [f"note:{note_id}" for note_id in saved.similar]
        if saved.replaces:
            fields["replaces"] = [f"note:{note_id}" for note_id in saved.replaces]
        if saved.superseded:
            fields["superseded"] = f"note:{saved.superseded}"
        return cls(**fields)


class RememberedItem(Out):
    index: int
    status: str  # created | updated | held | refused
    id: str | None = None
    similar: list[str] | None = None
    replaces: list[str] | None = None
    superseded: str | None = None
    pending_revision: PendingRef | None = None
    redacted: dict[str, int] | None = None
    error: ItemError | None = None

    @classmethod
    def of_item(cls, item: BatchSaved) -> RememberedItem:
        if item.error is not None:
            return cls(index=item.index, status=item.status, error=item.error)
        one = Remembered.of_saved(item)
        return cls(index=item.index, status=item.status, **one.model_dump(include={
            "id", "similar", "replaces", "superseded", "pending_revision", "redacted"}))


class History(Out):
    revisions: list[ToolRevision]


class Moved(Out):
    ids: list[str]  # note:<uuid>@<version>, in the order given


class NotebookPage(Out):
    data: list[ToolNotebook]
    meta: ListMeta
