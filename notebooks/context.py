"""The website shell's notebook tree: one read per request, shared by the sidebar
(context processor) and any view that needs the same notebooks (names, pickers)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from notebooks import selectors
from notebooks.models import Notebook
from notebooks.rules import notebook_paths
from notebooks.selectors.library import Labels


@dataclass
class Branch:
    """A notebook of the sidebar's tree: its live notes, and its children."""

    notebook: Notebook
    depth: int
    notes: int
    children: list[Branch] = field(default_factory=list)


@dataclass
class Notebooks:
    """Every notebook the owner sees, archived ones included (for names), and the live
    ones as a depth-first tree. `note_counts` gives the live notes of each notebook for
    the sidebar's `branches`: read with the notebooks for a page, or — should a partial
    show them — when first asked for."""

    all: list[Notebook]
    note_counts: Callable[[], dict[Any, int]] = dict
    tree: list[tuple[Notebook, int]] = field(default_factory=list)
    labels: Labels = field(default_factory=Labels)  # Pinned and the tags, with counts
    # The library's "Saved by" agents, when read with them (`notebooks_for(agents=True)`).
    agents: list[str] | None = None

    def __post_init__(self) -> None:
        self.tree = tree([nb for nb in self.all if nb.archived_at is None])

    @cached_property
    def parent_ids(self) -> set[Any]:
        """The live notebooks with live notebooks inside."""
        return {nb.parent_id for nb, depth in self.tree if depth > 0}

    @cached_property
    def branches(self) -> list[Branch]:
        """The live tree nested, each notebook with its count (one grouped query)."""
        counts = self.note_counts()
        roots: list[Branch] = []
        path: list[Branch] = []  # the branch at each depth down to the one just placed
        for nb, depth in self.tree:
            branch = Branch(nb, depth, counts.get(nb.id, 0))
            del path[depth:]
            (path[-1].children if path else roots).append(branch)
            path.append(branch)
        return roots

    @property
    def archived(self) -> list[Notebook]:
        return sorted((nb for nb in self.all if nb.archived_at is not None),
                      key=lambda nb: nb.name.casefold())

    @property
    def names(self) -> dict[Any, str]:
        return {nb.id: nb.name for nb in self.all}

    def paths(self, *, live_only: bool = True) -> list[tuple[Notebook, str]]:
        """(notebook, "Parent / Child") in tree order, for pickers."""
        rows = self.tree if live_only else tree(self.all)
        named = notebook_paths(self.all)
        return [(nb, named[nb.id]) for nb, _depth in rows]


def tree(notebooks: list[Notebook]) -> list[tuple[Notebook, int]]:
    """Notebooks depth-first (by name) with their depth; a notebook whose parent is not
    listed (archived or outside the grant) is shown at the top level."""
    listed = {nb.id for nb in notebooks}
    children: dict[object, list[Notebook]] = {}
    for nb in sorted(notebooks, key=lambda n: (n.name.casefold(), str(n.id))):
        parent = nb.parent_id if nb.parent_id in listed else None
        children.setdefault(parent, []).append(nb)
    ordered: list[tuple[Notebook, int]] = []

    def walk(parent: object, depth: int) -> None:
        for nb in children.get(parent, []):
            ordered.append((nb, depth))
            walk(nb.id, depth + 1)

    walk(None, 0)
    return ordered


def notebooks_for(request: HttpRequest, *, agents: bool = False) -> Notebooks:
    """The signed-in owner's notebooks, read at most once per request. `agents`: a
    library page's filter form wants the "Saved by" agents too — read in the same
    transaction when this is the first read, else on their own."""
    cached = getattr(request, "_grove_notebooks", None)
    if cached is None:
        actor = request.actor  # type: ignore[attr-defined]
        htmx = getattr(request, "htmx", None)
        if htmx and not htmx.history_restore_request:  # a partial: the sidebar is not shown
            cached = Notebooks(selectors.notebook_list(actor=actor, include_archived=True),
                               note_counts=lambda: selectors.notebook_note_counts(actor=actor))
        elif agents:  # the library page: sidebar, counts and agents in one read
            shelf = selectors.library_shelf(actor=actor)
            cached = Notebooks(shelf.notebooks, note_counts=lambda: shelf.note_counts,
                               labels=shelf.labels, agents=shelf.agents)
        else:  # a page: its sidebar's counts come in the same read
            shelf = selectors.notebook_shelf(actor=actor)
            cached = Notebooks(shelf.notebooks, note_counts=lambda: shelf.note_counts,
                               labels=shelf.labels)
        request._grove_notebooks = cached  # type: ignore[attr-defined]
    if agents and cached.agents is None:
        from notebooks.selectors.source_agents import source_agent_list

        cached.agents = source_agent_list(actor=request.actor)  # type: ignore[attr-defined]
    return cached


def sidebar(request: HttpRequest) -> dict[str, Any]:
    if getattr(request, "actor", None) is None:
        return {}
    return {"sidebar": SimpleLazyObject(lambda: notebooks_for(request))}
