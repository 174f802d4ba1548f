"""The reads behind the MCP resources and prompts (`notebooks/mcp_context.py`): a note
(or one revision of it) with its ground-truth marks, a notebook's live notes, the page
of resources a caller may read, a task's live handoff, and the place a prompt names.
Each is one tenant transaction, scoped by the caller's grant as the tools' reads are, so
a resource is exactly as reachable as the tool that reads the same thing."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from grove.kernel.actor import READ, Actor
from grove.kernel.paging import Cursor, caller_binding, cursor_read, cursor_write, seek_after
from grove.kernel.tenancy import tenant
from notebooks import rules
from notebooks.models import Kind, Note, Notebook
from notebooks.schemas.arguments import parse_place
from notebooks.schemas.notes import NoteRead, RevisionRead
from notebooks.selectors.access import (
    access_note,
    live_notebooks,
    notes_live,
    resolve_scope,
)
from notebooks.selectors.note_reads import marked_revision, passage_of, past_revision, read_of

NOTEBOOK_RESOURCE_NOTES = 200  # notes a notebook:// resource lists (the rest are counted)
RESOURCE_PAGE = 100
RESOURCE_CURSOR_SALT = "grove.mcp.resources"
NOTE_ORDER = ("-created_at", "-id")


@dataclass(frozen=True)
class NoteResource:
    """A note as it is now (`read`, with its marks), or one past revision of it (with
    the marks of its text)."""

    read: NoteRead | None
    revision: RevisionRead | None
    paths: dict[uuid.UUID, str]  # the live notebooks' paths the caller may see


def note_resource(*, actor: Actor, note_id: str, version: int | None,
                  passage: int | None = None) -> NoteResource:
    """`note://{id}` (the note now), `note://{id}@{version}` (exactly that revision) or
    `note://{id}@{version}#{passage}` (one passage of it: `passage_of`)."""
    with tenant(actor):
        actor.require(READ)
        note = access_note(actor, note_id)
        paths = rules.notebook_paths(live_notebooks(actor))
        if version is None or version == note.version:
            read = read_of(actor, note)
            return NoteResource(read=read if passage is None else passage_of(read, passage),
                                revision=None, paths=paths)
        revision, claims = past_revision(actor, note, version)
    marked = marked_revision(revision, claims)
    return NoteResource(read=None, paths=paths,
                        revision=marked if passage is None else passage_of(marked, passage))


@dataclass(frozen=True)
class NotebookResource:
    notebook: Notebook
    notes: list[Note]  # the newest live ones, at most NOTEBOOK_RESOURCE_NOTES
    total: int  # every live note of the notebook


def notebook_resource(*, actor: Actor, notebook_id: str) -> NotebookResource:
    """`notebook://{id}`: a notebook's live notes, newest first."""
    with tenant(actor):
        scope = resolve_scope(actor, notebook_id)
        assert scope.notebook is not None
        notebook = scope.notebook
        notes = scope.notes().order_by("-updated_at", "id")
        shown = list(notes[:NOTEBOOK_RESOURCE_NOTES])
        total = len(shown) if len(shown) < NOTEBOOK_RESOURCE_NOTES else notes.count()
    return NotebookResource(notebook=notebook, notes=shown, total=total)


@dataclass(frozen=True)
class ResourcePage:
    places: list[tuple[uuid.UUID, str]] | None  # the first page: the live notebooks' paths
    personal: bool  # the first page: Personal is granted
    notes: list[Note]  # live notes, newest first
    next_cursor: str | None


def resource_page(*, actor: Actor, cursor: str | None) -> ResourcePage:
    """One page of what the caller may read: first its places (everything, Personal when
    granted, each live notebook by path), then every live note, newest first. The cursor
    is signed and bound to the caller (`grove.kernel.paging`)."""
    actor.require(READ)
    opened = cursor_read(cursor, salt=RESOURCE_CURSOR_SALT, binding=caller_binding(actor),
                         fingerprint="resources")
    places = None
    after = None if opened.key is None else opened.key[1:]
    with tenant(actor):
        actor.require(READ)
        if opened.key is None:
            paths = rules.notebook_paths(live_notebooks(actor))
            places = sorted(paths.items(), key=lambda item: (item[1].lower(), str(item[0])))
        notes = notes_live(actor)
        if after:
            notes = notes.filter(seek_after(NOTE_ORDER, after))
        rows = list(notes.order_by(*NOTE_ORDER)[:RESOURCE_PAGE + 1])
    more, rows = len(rows) > RESOURCE_PAGE, rows[:RESOURCE_PAGE]
    next_cursor = None
    if more and rows:
        last = rows[-1]
        next_cursor = cursor_write(Cursor(binding=opened.binding, fingerprint="resources",
                                          key=("notes", last.created_at, last.id)),
                                   salt=RESOURCE_CURSOR_SALT)
    return ResourcePage(places=places, personal=actor.grant.personal, notes=rows,
                        next_cursor=next_cursor)


def prompt_place(*, actor: Actor, value: str) -> Any:
    """The place a prompt's `notebookId` names, checked as the tools check it: a notebook
    the caller may read (NotFound otherwise), Personal when granted (None), or — empty —
    everything (`rules.EVERYWHERE`)."""
    value = value.strip()
    if not value:
        return rules.EVERYWHERE
    with tenant(actor):
        scope = resolve_scope(actor, parse_place(value))
    return None if scope.notebook is None else scope.notebook.id


def live_handoff(*, actor: Actor, task_id: str, scope: Any) -> Note | None:
    """The task's live handoff in the place (`prompt_place`), the newest if several."""
    with tenant(actor):
        handoffs = resolve_scope(actor, scope).notes().filter(kind=Kind.HANDOFF,
                                                              task_id=task_id)
        return handoffs.order_by("-updated_at").first()
