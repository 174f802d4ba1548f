"""The library's reads: notes and notebooks as the caller may see them, pages, counts, revisions."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.db import connection
from django.utils import timezone

from grove.kernel.actor import READ, Actor
from grove.kernel.errors import Invalid
from grove.kernel.paging import caller_binding, cursor_after, cursor_read, keyset_page
from grove.kernel.tenancy import tenant
from notebooks.models import Note, Notebook, Revision, Status
from notebooks.rules import (
    EVERYWHERE,
    NOTEBOOK_PAGE_MAX,
    _Everywhere,
)
from notebooks.schemas.notes import BacklinkOut, NotebookOut, NoteLinkOut, SubtreeCounts
from notebooks.selectors.access import (
    access_note,
    access_notebook,
    notebooks_visible_to,
    notes_visible_to,
    resolve_scope,
    subtree_ids,
)
from notebooks.selectors.note_counts import notebook_live_counts
from notebooks.selectors.note_links import backlinks_of, links_of
from notebooks.selectors.related import GraphNode, graph_of
from notebooks.selectors.source_agents import source_agents_of


def notebook_names(*, actor: Actor, notes: Iterable[Any]) -> dict[uuid.UUID, str]:
    """Names of the notebooks these notes (or revisions) are in, for compact results, as
    far as the actor may see them. Personal notes have none."""
    ids = {note.notebook_id for note in notes if note.notebook_id is not None}
    if not ids:
        return {}
    with tenant(actor):
        return dict(notebooks_visible_to(actor).filter(id__in=ids).values_list("id", "name"))


def count_subtree(ids: list[uuid.UUID]) -> SubtreeCounts:
    notes = Note.objects.filter(notebook_id__in=ids).exclude(status=Status.DELETED).count()
    return SubtreeCounts(notebooks=len(ids), notes=notes)


def notebook_note_counts(*, actor: Actor) -> dict[uuid.UUID, int]:
    """How many live notes each granted notebook holds — what its list shows (the
    sidebar's counts) — in one grouped query. Notebooks with none are left out; a
    notebook's own state (archived) is the caller's to judge."""
    with tenant(actor):
        actor.require(READ)
        return _note_counts(actor)


def _note_counts(actor: Actor) -> dict[uuid.UUID, int]:
    # From the counts the writes keep (migration 0022), not by counting the notes.
    return notebook_live_counts(actor, now=timezone.now())


@dataclass(frozen=True)
class Labels:
    """The sidebar's other filters: how many live notes are pinned, and the tags with
    how many live notes carry each (most used first, at most TAG_COUNTS_MAX)."""

    pinned: int = 0
    tags: list[tuple[str, int]] = field(default_factory=list)


class Shelf(NamedTuple):
    notebooks: list[Notebook]
    note_counts: dict[uuid.UUID, int]
    labels: Labels
    agents: list[str] | None = None  # the "Saved by" agents, read for the library page


def notebook_shelf(*, actor: Actor) -> Shelf:
    """The sidebar's read, in one transaction: every notebook the caller sees, archived
    ones included (`notebook_list`), their live notes (`notebook_note_counts`) and — for
    the owner's website session — the pinned and tag counts (`tag_counts`)."""
    with tenant(actor):
        actor.require(READ)
        return Shelf(_notebooks(actor, include_archived=True), _note_counts(actor),
                     _labels(TAG_COUNTS_MAX) if actor.is_session else Labels())


def library_shelf(*, actor: Actor) -> Shelf:
    """The library page's sidebar and filter form, in one transaction: `notebook_shelf`
    and the "Saved by" agents (`source_agent_list`). The website owner's only."""
    actor.require_session()
    with tenant(actor):
        actor.require(READ)
        return Shelf(_notebooks(actor, include_archived=True), _note_counts(actor),
                     _labels(TAG_COUNTS_MAX), source_agents_of(actor))


def note_get(*, actor: Actor, note_id: uuid.UUID | str) -> Note:
    with tenant(actor):
        return access_note(actor, note_id)


def notebook_get(*, actor: Actor, notebook_id: uuid.UUID | str) -> Notebook:
    with tenant(actor):
        return access_notebook(actor, notebook_id)


def notebooks_as_seen(actor: Actor, notebooks: list[Notebook]) -> list[NotebookOut]:
    """Notebooks as an interface shows them: a parent the caller cannot see is hidden
    (`parentId: null`). Caller holds a tenant transaction."""
    parents = {nb.parent_id for nb in notebooks if nb.parent_id}
    seen = set(notebooks_visible_to(actor).filter(id__in=parents).values_list("id", flat=True))
    return [NotebookOut.of(nb).model_copy(
        update={"parent_id": nb.parent_id if nb.parent_id in seen else None})
        for nb in notebooks]


def notebook_out(*, actor: Actor, notebook_id: uuid.UUID | str) -> NotebookOut:
    with tenant(actor):
        return notebooks_as_seen(actor, [access_notebook(actor, notebook_id)])[0]


def note_list(
    *, actor: Actor, notebook_id: uuid.UUID | str | None | _Everywhere = EVERYWHERE,
    limit: int = 100,
) -> list[Note]:
    """Live notes, newest first; `notebook_id=None` means Personal."""
    with tenant(actor):
        actor.require(READ)
        notes = resolve_scope(actor, notebook_id).notes()
        return list(notes.order_by("-updated_at", "-id")[: max(1, min(limit, 500))])


NOTEBOOK_CURSOR_SALT = "grove.notebooks.list"


def notebook_page(
    *, actor: Actor, include_archived: bool = False, cursor: str | None = None,
    limit: int = 100,
) -> tuple[list[NotebookOut], int, str | None]:
    """One page of the granted notebooks, oldest first, with the real count and the next
    signed cursor. A notebook whose parent the caller cannot see shows `parentId: null`
    (the hidden parent stays hidden)."""
    if isinstance(limit, bool) or not isinstance(limit, int) \
            or not 1 <= limit <= NOTEBOOK_PAGE_MAX:
        raise Invalid(f"limit must be a whole number from 1 to {NOTEBOOK_PAGE_MAX}.",
                      code="invalid_limit")
    fingerprint = "archived" if include_archived else "live"
    opened = cursor_read(cursor, salt=NOTEBOOK_CURSOR_SALT, binding=caller_binding(actor),
                         fingerprint=fingerprint)
    with tenant(actor):
        actor.require(READ)
        ceiling = opened.ceiling or timezone.now()
        notebooks = notebooks_visible_to(actor).filter(created_at__lte=ceiling)
        if not include_archived:
            notebooks = notebooks.filter(archived_at__isnull=True)
        available = notebooks.count()
        page = keyset_page(notebooks, order=("created_at", "id"), after=opened.key,
                           limit=limit)
        out = notebooks_as_seen(actor, page.rows)
    next_cursor = cursor_after(opened, page, ceiling=ceiling, salt=NOTEBOOK_CURSOR_SALT)
    return out, available, next_cursor


def notebook_list(*, actor: Actor, include_archived: bool = False) -> list[Notebook]:
    with tenant(actor):
        actor.require(READ)
        return _notebooks(actor, include_archived=include_archived)


def _notebooks(actor: Actor, *, include_archived: bool) -> list[Notebook]:
    notebooks = notebooks_visible_to(actor)
    if not include_archived:
        notebooks = notebooks.filter(archived_at__isnull=True)
    return list(notebooks.order_by("name", "id"))


def note_revisions(*, actor: Actor, note_id: uuid.UUID | str) -> list[Revision]:
    with tenant(actor):
        return _revisions(access_note(actor, note_id))


def _revisions(note: Note) -> list[Revision]:
    return list(Revision.objects.filter(note=note).order_by("-version"))


def notebook_subtree_counts(*, actor: Actor, notebook_id: uuid.UUID | str) -> SubtreeCounts:
    """What archiving, restoring or deleting this notebook would act on (for confirmation),
    as far as the caller may see: a connection granted a notebook but not its children
    learns nothing about them (grants never inherit down the tree)."""
    with tenant(actor):
        return _visible_subtree_counts(actor, access_notebook(actor, notebook_id))


def _visible_subtree_counts(actor: Actor, notebook: Notebook) -> SubtreeCounts:
    return count_subtree([i for i in subtree_ids(notebook.id) if actor.grant.allows(i)])


# What other apps add to the note and notebook pages, read in the page's own transaction
# (sharing: the page's live link — `sharing.apps`). Registered at start-up, so notebooks
# never imports the apps that build on it.
PageExtra = Callable[[Actor, "Note | Notebook"], dict[str, Any]]
PAGE_EXTRAS: list[PageExtra] = []


def register_page_extra(extra: PageExtra) -> None:
    if extra not in PAGE_EXTRAS:
        PAGE_EXTRAS.append(extra)


def _extras(actor: Actor, target: Note | Notebook) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for extra in PAGE_EXTRAS:
        found.update(extra(actor, target))
    return found


@dataclass(frozen=True)
class NotePage:
    note: Note
    revisions: list[Revision]  # newest first
    extras: dict[str, Any]  # from other apps (PAGE_EXTRAS)
    links: list[NoteLinkOut]  # what the note links to (`note_links.links_of`)
    backlinks: list[BacklinkOut]  # what links here
    graph: list[GraphNode]  # its neighbourhood by links, nearest first (`related.graph_of`)
    # The note that superseded this one (`supersedes`), when the reader may see it.
    replaced_by: Note | None = None


@dataclass(frozen=True)
class NotebookPage:
    notebook: Notebook
    counts: SubtreeCounts  # what its subtree actions would act on
    extras: dict[str, Any]


def note_page(*, actor: Actor, note_id: uuid.UUID | str) -> NotePage:
    """The note page's read, in one transaction: the note, its revisions and what other
    apps add (`PAGE_EXTRAS`). Missing, deleted and foreign notes are the same NotFound."""
    with tenant(actor):
        note = access_note(actor, note_id)
        return NotePage(note=note, revisions=_revisions(note), extras=_extras(actor, note),
                        links=links_of(actor, note), backlinks=backlinks_of(actor, note),
                        graph=graph_of(actor, note),
                        replaced_by=notes_visible_to(actor).filter(
                            id=note.superseded_by_id).first() if note.superseded_by_id
                        else None)


def notebook_page_of(*, actor: Actor, notebook_id: uuid.UUID | str) -> NotebookPage:
    """The notebook page's read, in one transaction: the notebook, what its subtree
    actions would act on (`notebook_subtree_counts`) and what other apps add."""
    with tenant(actor):
        notebook = access_notebook(actor, notebook_id)
        return NotebookPage(notebook=notebook, counts=_visible_subtree_counts(actor, notebook),
                            extras=_extras(actor, notebook))


TAG_COUNTS_MAX = 50


def tag_counts(*, actor: Actor, limit: int = TAG_COUNTS_MAX) -> list[tuple[str, int]]:
    """The account's tags with how many live notes carry each, most used first — the
    library sidebar's tag filters (the owner's website session: counts span the whole
    account). The counting runs in a security-definer function that reads only the
    account's tagged notes (migration 0018)."""
    actor.require_session()
    with tenant(actor):
        return _labels(limit).tags


# The live pinned notes (under RLS: the account's; `note_pinned` is the partial index
# that finds them) and the tag counts, in one statement. The conditions are
# `access.live_filter`'s, spelled in SQL as grove_tag_counts spells them.
_LABELS = """
SELECT NULL::text, count(*) FROM notebooks_note n
LEFT JOIN notebooks_notebook b ON b.id = n.notebook_id
WHERE n.pinned AND n.status = 'active' AND (n.expires_at IS NULL OR n.expires_at > now())
  AND (b.id IS NULL OR (b.archived_at IS NULL AND b.deleted_at IS NULL))
UNION ALL
SELECT tag, notes FROM grove_tag_counts(%s)
"""


def _labels(limit: int) -> Labels:
    with connection.cursor() as cursor:
        cursor.execute(_LABELS, [limit])
        rows = cursor.fetchall()
    return Labels(pinned=next((int(n) for tag, n in rows if tag is None), 0),
                  tags=[(tag, int(n)) for tag, n in rows if tag is not None])
