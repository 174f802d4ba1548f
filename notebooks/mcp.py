"""Grove's notes and notebooks as MCP tools (SPEC §7). Each tool takes the same
arguments model as its REST route (notebooks/arguments.py) — plus the id the route
carries in its path — and calls the same service. `grove/mcp.py` serves them at `/mcp`
and `POST /v1/tools/<name>`."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field

from grove.actor import Actor
from grove.mcp import Tool
from grove.schemas import In, Out
from notebooks import recall, search, selectors, services
from notebooks.arguments import (
    BatchIn,
    MoveIn,
    NotebookCreateIn,
    NotebookUpdateIn,
    NoteUpdateIn,
    RecallIn,
    RememberIn,
    RestoreRevisionIn,
    SearchIn,
)
from notebooks.schemas import BatchOut, NotebookOut, NoteOut, RememberOut, RevisionOut

SCOPE = ("You only see, and can only change, notes in the notebooks the owner granted to "
         "this connection (and Personal notes if granted).")
OPERATION = ("`operationId` (a UUID you choose) makes the call safe to retry: the same id "
             "with the same arguments returns the first result instead of acting twice.")


class NoteRef(In):
    note_id: uuid.UUID = Field(description="The note's id (the part after `note:`).")


class NoteUpdateArgs(NoteUpdateIn):
    note_id: uuid.UUID = Field(description="The note to change.")


class RestoreArgs(RestoreRevisionIn):
    note_id: uuid.UUID = Field(description="The note whose older revision to restore.")


class ArchiveArgs(BatchIn):
    restore: bool = Field(default=False, description="True: restore archived or expired "
                                                     "notes instead of archiving.")


class NotebookListArgs(In):
    include_archived: bool = False
    cursor: str | None = Field(default=None, max_length=2000)
    limit: int = Field(default=100, ge=1, le=selectors.NOTEBOOK_PAGE_MAX)


class NotebookUpdateArgs(NotebookUpdateIn):
    notebook_id: uuid.UUID = Field(description="The notebook to rename or move.")


class History(Out):
    revisions: list[RevisionOut]


class Moved(Out):
    notes: list[NoteOut]


class NotebookPage(Out):
    notebooks: list[NotebookOut]
    available: int
    next_cursor: str | None = None


def _op(args: Any) -> uuid.UUID:
    """The caller's operation id, or a fresh one (that call is then not retry-safe)."""
    return args.operation_id or uuid.uuid4()


def _remember(actor: Actor, args: RememberIn) -> RememberOut:
    return services.note_remember(actor=actor, operation_id=_op(args),
                                  **args.service_kwargs())


def _recall(actor: Actor, args: RecallIn) -> recall.RecallOut:
    return recall.recall(actor=actor, **args.service_kwargs())


def _update(actor: Actor, args: NoteUpdateArgs) -> NoteOut:
    return services.note_update(actor=actor, operation_id=_op(args),
                                note_id=args.note_id, expected_version=args.expected_version,
                                **args.changes())


def _forget(actor: Actor, args: BatchIn) -> BatchOut:
    return services.note_forget(actor=actor, operation_id=_op(args),
                                items=args.service_items())


def _get(actor: Actor, args: NoteRef) -> NoteOut:
    return NoteOut.of(selectors.note_get(actor=actor, note_id=args.note_id))


def _list(actor: Actor, args: SearchIn) -> search.SearchPage:
    return search.note_search(actor=actor, **args.service_kwargs())


def _history(actor: Actor, args: NoteRef) -> History:
    return History(revisions=[RevisionOut.of(r) for r in
                              selectors.note_revisions(actor=actor, note_id=args.note_id)])


def _restore(actor: Actor, args: RestoreArgs) -> NoteOut:
    return services.note_restore_revision(
        actor=actor, operation_id=_op(args), note_id=args.note_id,
        revision=args.revision, durable=args.durable, expected_version=args.expected_version)


def _archive(actor: Actor, args: ArchiveArgs) -> BatchOut:
    action = services.note_restore if args.restore else services.note_archive
    return action(actor=actor, operation_id=_op(args), items=args.service_items())


def _move(actor: Actor, args: MoveIn) -> Moved:
    return Moved(notes=services.note_move(actor=actor, operation_id=_op(args),
                                          note_ids=args.note_ids, notebook_id=args.notebook_id))


def _notebooks(actor: Actor, args: NotebookListArgs) -> NotebookPage:
    page, available, next_cursor = selectors.notebook_page(
        actor=actor, include_archived=args.include_archived, cursor=args.cursor,
        limit=args.limit)
    return NotebookPage(notebooks=page, available=available, next_cursor=next_cursor)


def _create_notebook(actor: Actor, args: NotebookCreateIn) -> NotebookOut:
    return services.notebook_create(actor=actor, operation_id=_op(args),
                                    name=args.name, parent_id=args.parent_id)


def _update_notebook(actor: Actor, args: NotebookUpdateArgs) -> NotebookOut:
    return services.notebook_update(actor=actor, operation_id=_op(args),
                                    notebook_id=args.notebook_id, **args.changes())


def _tool(name: str, title: str, description: str, arguments: type[In], output: type[Out],
          run: Any, *, read_only: bool, destructive: bool = False,
          idempotent: bool = True) -> Tool:
    return Tool(name=name, title=title, description=description, arguments=arguments,
                output=output, run=run, read_only=read_only, destructive=destructive,
                idempotent=idempotent)


TOOLS = [
    _tool("remember", "Remember a note",
          "Save a note to the user's memory: a preference, fact, decision, solution or "
          "handoff (handoffs need a taskId; saving a handoff for a task that already has a "
          "live one updates it). Put it in a notebook with notebookId, or omit it for "
          "Personal. Use capture=automatic for things you decided to keep on your own "
          "(the owner can pause those) and explicit when the user asked. " + SCOPE + " "
          + OPERATION, RememberIn, RememberOut, _remember, read_only=False),
    _tool("recall", "Recall relevant notes",
          "Find the notes relevant to a question or topic (keyword and semantic search "
          "combined, best first, within a size budget). Without a query: the user's "
          "profile — pinned notes, preferences and live handoffs. Each hit names the note's "
          "version; cite `note:<id>@<version>`. " + SCOPE,
          RecallIn, recall.RecallOut, _recall, read_only=True),
    _tool("update_memory", "Correct a note",
          "Change a note's content, kind or other fields; omitted fields stay. Send the "
          "version you read as expectedVersion: if the note changed since, nothing is "
          "changed and you get version_conflict with the current version. Every change is "
          "a new revision; the old text stays in the history. " + OPERATION,
          NoteUpdateArgs, NoteOut, _update, read_only=False),
    _tool("forget", "Forget notes",
          "Delete notes (up to 100) from memory; per-item results deleted, not_found or "
          "version_conflict (when an item's expectedVersion no longer matches). Use only "
          "when the user wants something gone. " + OPERATION,
          BatchIn, BatchOut, _forget, read_only=False, destructive=True),
    _tool("get_note", "Get a note", "One note by id, with its current version. " + SCOPE,
          NoteRef, NoteOut, _get, read_only=True),
    _tool("list_notes", "List or search notes",
          "The user's notes with filters (notebook, kinds, saved by, lifetime, status) and "
          "an optional keyword query, sorted by relevance or time, one page at a time: "
          "pass meta.nextCursor back as cursor. meta.available is the total. " + SCOPE,
          SearchIn, search.SearchPage, _list, read_only=True),
    _tool("note_history", "A note's history",
          "Every revision of a note, newest first, each a full snapshot with the reason "
          "it was made.", NoteRef, History, _history, read_only=True),
    _tool("restore_note", "Restore an older revision",
          "Make an older revision's text the note's current version (a new revision; "
          "nothing is lost). durable=true also turns a handoff into a fact. " + OPERATION,
          RestoreArgs, NoteOut, _restore, read_only=False),
    _tool("archive_notes", "Archive or restore notes",
          "Archive notes (hidden from recall and lists, kept, reversible) or, with "
          "restore=true, bring archived or expired notes back. Per-item results. "
          + OPERATION, ArchiveArgs, BatchOut, _archive, read_only=False),
    _tool("move_notes", "Move notes",
          "Move notes to a notebook (notebookId null = Personal); all or nothing. Needs "
          "access to where each note is and to the destination. " + OPERATION,
          MoveIn, Moved, _move, read_only=False),
    _tool("list_notebooks", "List notebooks",
          "The notebooks this connection may use, as a tree (parentId; a parent you may "
          "not see shows as null). Page with nextCursor.", NotebookListArgs, NotebookPage,
          _notebooks, read_only=True),
    _tool("create_notebook", "Create a notebook",
          "Create a notebook at the top level or inside parentId. " + OPERATION,
          NotebookCreateIn, NotebookOut, _create_notebook, read_only=False),
    _tool("update_notebook", "Rename or move a notebook",
          "Rename a notebook and/or move it (parentId null = top level); a notebook cannot "
          "move inside itself. " + OPERATION, NotebookUpdateArgs, NotebookOut,
          _update_notebook, read_only=False),
]
