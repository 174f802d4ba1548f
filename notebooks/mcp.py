"""Grove's notes and notebooks as MCP tools (SPEC §7). Each tool takes the same
arguments model as its REST route (notebooks/schemas/arguments.py) — plus the id the route
carries in its path, and with `null` meaning "left out" — calls the same service, and
answers in the compact tool shapes of `notebooks.schemas` (the full record on request).
`grove/interfaces/mcp.py` serves them at `/mcp` and `POST /v1/tools/<name>`.

Hints are honest: `idempotentHint` is true only where repeating the call without an
operation id changes nothing more (a second `remember` saves a second note).
"""

from __future__ import annotations

import uuid
from typing import Any

from grove.interfaces.mcp import Tool
from grove.kernel.actor import Actor
from grove.kernel.schemas import ListMeta
from notebooks import selectors, services
from notebooks.schemas.agent_writes import EditNoteArgs
from notebooks.schemas.arguments import NoteArgs, expected
from notebooks.schemas.notes import (
    BatchOut,
    NoteRead,
    RecallItem,
    RevisionOut,
    RevisionRead,
    SearchItem,
)
from notebooks.schemas.related import RelatedArgs, RelatedPage
from notebooks.schemas.tools import (
    ArchiveArgs,
    ForgetArgs,
    FoundNote,
    History,
    HistoryArgs,
    Match,
    MoveArgs,
    Moved,
    NotebookCreateArgs,
    NotebookListArgs,
    NotebookPage,
    NotebookUpdateArgs,
    NotesPage,
    NoteUpdateArgs,
    RecallArgs,
    RecallResult,
    RememberArgs,
    Remembered,
    RestoreArgs,
    Saved,
    SearchArgs,
    ToolNote,
    ToolNotebook,
    ToolRevision,
)
from notebooks.selectors import recall, search

# -- results ---------------------------------------------------------------------------------


def _op(args: Any) -> uuid.UUID:
    """The caller's operation id, or a fresh one (that call is then not retry-safe)."""
    return args.operation_id or uuid.uuid4()


def _remember(actor: Actor, args: RememberArgs) -> Remembered:
    if args.items is not None:
        return Remembered.of_batch(services.note_remember_batch(
            actor=actor, operation_id=_op(args), items=args.service_items()))
    saved = services.note_remember(actor=actor, operation_id=_op(args),
                                   **args.service_kwargs())
    return Remembered.of_saved(saved)


def _marked(actor: Actor, items: list[RecallItem] | list[SearchItem], *,
            full: bool = False) -> list[ToolNote]:
    """Recall's or a list's items as compact notes, each with the ground-truth marks the
    read gave it (`notebooks.selectors.truth_marks`, as REST gives them)."""
    names = selectors.notebook_names(actor=actor, notes=[item.note for item in items])
    return [ToolNote.marked(item.note, names, authority=item.authority,
                            known_false=item.known_false, full=full) for item in items]


def _recall(actor: Actor, args: RecallArgs) -> RecallResult:
    """Recall's items as compact notes; a document's item is its best passage."""
    found = recall.recall(actor=actor, **args.service_kwargs())
    names = selectors.notebook_names(actor=actor, notes=[item.note for item in found.data])
    return RecallResult(data=[FoundNote.found(item.note, names, passage=item.passage,
                                              via=item.via, authority=item.authority,
                                              known_false=item.known_false, full=args.full)
                              for item in found.data], meta=found.meta)


def _related(actor: Actor, args: RelatedArgs) -> RelatedPage:
    return selectors.related(actor=actor, note_id=args.note_id.id, depth=args.depth,
                             limit=args.limit, cursor=args.cursor)


def _list(actor: Actor, args: SearchArgs) -> NotesPage:
    page = search.note_search(actor=actor, marks=True, **args.service_kwargs())
    fields: dict[str, Any] = {}
    if args.matches:
        fields["matches"] = [Match(id=item.note.versioned_id, terms=item.matches.terms,
                                   snippet=item.matches.snippet)
                             for item in page.data if item.matches is not None]
    return NotesPage(data=_marked(actor, page.data, full=args.full), meta=page.meta,
                     **fields)


def _get(actor: Actor, args: NoteArgs) -> FoundNote:
    """The note as it is now, or exactly the revision its id names."""
    read = selectors.note_read(actor=actor, note_id=args.note_id.id,
                               version=args.note_id.version, passage=args.note_id.passage,
                               as_of=args.as_of)
    if not isinstance(read, NoteRead):
        return _revision_note(actor, read)
    names = selectors.notebook_names(actor=actor, notes=[read])
    return FoundNote.found(read, names, authority=read.authority,
                           known_false=read.known_false, full=True, passage=read.passage)


def _revision_note(actor: Actor, revision: RevisionRead) -> FoundNote:
    """An older revision as a note: every field from that revision's snapshot (its own
    notebook, pinning, provenance, retention) and the known-false marks of its text, the
    record being the revision's, as `GET /v1/get/note:<id>@<version>` returns it — with
    the id of a notebook this caller may not see left out, as list_notebooks leaves out
    such a parent."""
    names = selectors.notebook_names(actor=actor, notes=[revision])
    record = revision.to_rest_json()
    if revision.notebook_id is not None and revision.notebook_id not in names:
        record["notebookId"] = None
    return FoundNote.found(revision, names, known_false=revision.known_false, full=True,
                           record=record, passage=revision.passage)


def _history(actor: Actor, args: HistoryArgs) -> History:
    return History(revisions=[
        ToolRevision.of(RevisionOut.of(revision))
        for revision in selectors.note_revisions(actor=actor, note_id=args.note_id.id)])


def _update(actor: Actor, args: NoteUpdateArgs) -> Saved:
    return Saved.of(services.note_update(
        actor=actor, operation_id=_op(args), note_id=args.note_id.id,
        expected_version=expected(args.note_id, args.expected_version), **args.changes()))


def _edit(actor: Actor, args: EditNoteArgs) -> Saved:
    return Saved.of(services.note_edit(actor=actor, operation_id=_op(args),
                                       **args.service_kwargs()))


def _forget(actor: Actor, args: ForgetArgs) -> BatchOut:
    return services.note_forget(actor=actor, operation_id=_op(args),
                                items=args.service_items())


def _restore(actor: Actor, args: RestoreArgs) -> Saved:
    return Saved.of(services.note_restore_revision(
        actor=actor, operation_id=_op(args), note_id=args.note_id.id,
        revision=args.revision, durable=args.durable,
        expected_version=expected(args.note_id, args.expected_version)))


def _archive(actor: Actor, args: ArchiveArgs) -> BatchOut:
    action = services.note_restore if args.restore else services.note_archive
    return action(actor=actor, operation_id=_op(args), items=args.service_items())


def _move(actor: Actor, args: MoveArgs) -> Moved:
    moved = services.note_move(actor=actor, operation_id=_op(args), **args.service_kwargs())
    return Moved(ids=[note.versioned_id for note in moved])


def _notebooks(actor: Actor, args: NotebookListArgs) -> NotebookPage:
    page, available, next_cursor = selectors.notebook_page(
        actor=actor, include_archived=args.include_archived, cursor=args.cursor,
        limit=args.limit)
    return NotebookPage(data=[ToolNotebook.of(nb) for nb in page], meta=ListMeta.of(
        returned=len(page), available=available, limit=args.limit, next_cursor=next_cursor))


def _create_notebook(actor: Actor, args: NotebookCreateArgs) -> ToolNotebook:
    return ToolNotebook.of(services.notebook_create(
        actor=actor, operation_id=_op(args), name=args.name, parent_id=args.parent_id))


def _update_notebook(actor: Actor, args: NotebookUpdateArgs) -> ToolNotebook:
    return ToolNotebook.of(services.notebook_update(
        actor=actor, operation_id=_op(args), notebook_id=args.notebook_id, **args.changes()))


TOOLS = [
    Tool("remember", "Remember a note",
         "Save a note to the user's long-term memory (capture=\"automatic\" when on your "
         "own initiative), or up to 50 as items. Each call without an operationId saves "
         "anew; similar names likely duplicates.",
         RememberArgs, Remembered, _remember, read_only=False, idempotent=False),
    Tool("recall", "Recall relevant notes",
         "Notes relevant to a question (keyword + semantic, best first, within a budget), "
         "each naming its notebook (none: Personal). Without a query: the profile — pinned "
         "notes, preferences, facts, decisions (a handoff with its taskId). Cite by id.",
         RecallArgs, RecallResult, _recall, read_only=True),
    Tool("update_memory", "Correct a note",
         "Change a note's fields (omitted ones stay) as a new revision; the version you "
         "read gives version_conflict instead of overwriting a newer change. A change to "
         "declared ground truth is held for the owner.",
         NoteUpdateArgs, Saved, _update, read_only=False, idempotent=False),
    Tool("edit_note", "Edit part of a note",
         "Append, prepend, replace a section (by heading) or an exact text, as a new "
         "revision, without resending the note. A find or heading that is absent or not "
         "unique is refused, saying which.",
         EditNoteArgs, Saved, _edit, read_only=False, idempotent=False),
    Tool("forget", "Forget notes",
         "Delete notes (per item deleted, not_found or version_conflict); tools cannot "
         "bring them back — archive_notes can.",
         ForgetArgs, BatchOut, _forget, read_only=False, destructive=True),
    Tool("get_note", "Get a note",
         "One note with its full record; `note:<id>@<version>` gives that older revision.",
         NoteArgs, FoundNote, _get, read_only=True),
    Tool("related", "Linked notes",
         "Notes linked to or from a note (depth 1) and to or from those (depth 2).",
         RelatedArgs, RelatedPage, _related, read_only=True),
    Tool("list_notes", "List or search notes",
         "The user's notes by filters and keywords, sorted, a page at a time; "
         "meta.available is the total.",
         SearchArgs, NotesPage, _list, read_only=True),
    Tool("note_history", "A note's history",
         "Every revision of a note, newest first: what it said and why it changed.",
         HistoryArgs, History, _history, read_only=True),
    Tool("restore_note", "Restore an older revision",
         "Make an older revision the current one, as a new revision (nothing is lost).",
         RestoreArgs, Saved, _restore, read_only=False, idempotent=False),
    Tool("archive_notes", "Archive or restore notes",
         "Archive notes (hidden from recall and lists), or with restore bring archived or "
         "expired notes back.",
         ArchiveArgs, BatchOut, _archive, read_only=False),
    Tool("move_notes", "Move notes",
         "Move notes to a notebook or \"personal\", all or nothing.",
         MoveArgs, Moved, _move, read_only=False),
    Tool("list_notebooks", "List notebooks",
         "The notebooks this connection may use, as a tree (no parentId: at the top, or "
         "a parent you may not see).",
         NotebookListArgs, NotebookPage, _notebooks, read_only=True),
    Tool("create_notebook", "Create a notebook",
         "Create a notebook at the top level or inside parentId.",
         # A repeat is refused (notebook_name_taken): it changes nothing.
         NotebookCreateArgs, ToolNotebook, _create_notebook, read_only=False),
    Tool("update_notebook", "Rename or move a notebook",
         "Rename a notebook and/or move it; it cannot move inside itself.",
         NotebookUpdateArgs, ToolNotebook, _update_notebook, read_only=False),
]
