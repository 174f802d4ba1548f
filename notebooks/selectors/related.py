"""A note's neighbourhood by links (issue 38 item 4): the notes it links to and that
link to it, and theirs (depth 2) — live notes inside the caller's grant only, reached
only through notes inside it (a hop through a note the caller may not read is no hop).
REST `GET /v1/notes/{id}/related` and the `related` tool read it here, with the list
meta every list has."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Q
from django.db.models.functions import Substr

from grove.interfaces.rendering import note_title
from grove.kernel.actor import READ, Actor
from grove.kernel.errors import Invalid
from grove.kernel.paging import caller_binding, cursor_after, cursor_read, keyset_page
from grove.kernel.schemas import ListMeta
from grove.kernel.tenancy import tenant
from links.models import Link
from notebooks.models import Note
from notebooks.schemas.related import DEPTH_MAX, RelatedNote, RelatedPage
from notebooks.selectors.access import access_note, notebooks_visible_to, notes_live
from notebooks.selectors.note_links import TITLE_SOURCE_CHARS, titles

NEIGHBOURHOOD_MAX = 500  # notes a neighbourhood holds at most (more: `available` a floor)
CURSOR_SALT = "grove.related"
_ORDER = ("depth", "rank", "key")


@dataclass(frozen=True)
class _Reached:
    note_id: uuid.UUID
    depth: int
    direction: str  # to | from | both
    via: uuid.UUID | None

    @property
    def rank(self) -> int:
        return {"to": 0, "both": 1, "from": 2}[self.direction]

    @property
    def key(self) -> str:
        return str(self.note_id)


def _edges(frontier: Iterable[uuid.UUID]) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """(from, to) for every resolved link leaving or reaching the frontier."""
    ids = list(frontier)
    return list(set(Link.objects.filter(Q(note_id__in=ids, target_note__isnull=False)
                                        | Q(target_note_id__in=ids))
                    .values_list("note_id", "target_note_id")))


def neighbourhood(actor: Actor, start: uuid.UUID, depth: int) -> tuple[list[_Reached], bool]:
    """The live notes the caller may read within `depth` links of `start` (not `start`),
    nearest first; True when NEIGHBOURHOOD_MAX cut it short."""
    reached: dict[uuid.UUID, _Reached] = {}
    frontier, seen = {start}, {start}
    for level in range(1, depth + 1):
        found: dict[uuid.UUID, tuple[set[str], uuid.UUID | None]] = {}
        for source, target in _edges(frontier):
            for here, there, way in ((source, target, "to"), (target, source, "from")):
                if here in frontier and there not in seen:
                    ways, via = found.setdefault(there, (set(), None if level == 1 else here))
                    ways.add(way)
        readable = set(notes_live(actor).filter(id__in=list(found)).values_list("id", flat=True))
        frontier = set()
        for note_id in sorted(readable, key=str):
            ways, via = found[note_id]
            direction = "both" if len(ways) == 2 else next(iter(ways))
            reached[note_id] = _Reached(note_id, level, direction, via)
            frontier.add(note_id)
            if len(reached) >= NEIGHBOURHOOD_MAX:
                return sorted(reached.values(), key=_sort), True
        seen |= set(found)
        if not frontier:
            break
    return sorted(reached.values(), key=_sort), False


def _sort(item: _Reached) -> tuple[int, int, str]:
    return item.depth, item.rank, item.key


def related(*, actor: Actor, note_id: uuid.UUID | str, depth: int = DEPTH_MAX,
            limit: int = 20, cursor: str | None = None) -> RelatedPage:
    """A page of the note's neighbourhood: nearest first (depth, then the notes it links
    to, both ways, from), a signed cursor for the next page."""
    if not 1 <= depth <= DEPTH_MAX:
        raise Invalid(f"depth is 1 or {DEPTH_MAX}.", code="invalid_depth")
    with tenant(actor):
        actor.require(READ)
        note = access_note(actor, note_id)
        opened = cursor_read(cursor, salt=CURSOR_SALT, binding=caller_binding(actor),
                             fingerprint=f"{note.id}:{depth}")
        items, capped = neighbourhood(actor, note.id, depth)

        def fetch(after: tuple | None, count: int) -> list[_Reached]:
            rest = items if after is None else [i for i in items if _sort(i) > tuple(after)]
            return rest[:count]

        page = keyset_page(fetch, order=_ORDER, after=opened.key, limit=limit)
        notes = {n.id: n for n in Note.objects.filter(id__in=[i.note_id for i in page.rows])
                 .annotate(head=Substr("content", 1, TITLE_SOURCE_CHARS))
                 .only("id", "version", "kind", "notebook_id", "source_path")}
        names = dict(notebooks_visible_to(actor).filter(
            id__in={n.notebook_id for n in notes.values() if n.notebook_id})
            .values_list("id", "name"))
    data = []
    for item in page.rows:
        found = notes[item.note_id]
        data.append(RelatedNote(
            id=f"note:{found.id}@{found.version}", kind=found.kind,
            title=note_title(found.head, path=found.source_path) or "(empty)",
            notebook=names.get(found.notebook_id) if found.notebook_id else None,
            depth=item.depth, direction=item.direction,  # type: ignore[arg-type]
            via=f"note:{item.via}" if item.via else None))
    meta = ListMeta.of(returned=len(data), available=len(items), limit=limit,
                       next_cursor=cursor_after(opened, page, ceiling=None, salt=CURSOR_SALT),
                       lower_bound=capped)
    return RelatedPage(data=data, meta=meta)


GRAPH_NODES = 24  # notes the note page's graph draws at most (the nearest)


@dataclass(frozen=True)
class GraphNode:
    note_id: uuid.UUID
    title: str
    depth: int
    direction: str
    via: uuid.UUID | None


def graph_of(actor: Actor, note: Note) -> list[GraphNode]:
    """The nearest GRAPH_NODES notes of the note's neighbourhood (depth 2), titled —
    what the note page draws. Caller holds the tenant transaction and has checked the
    caller may read `note`."""
    items, _ = neighbourhood(actor, note.id, DEPTH_MAX)
    items = items[:GRAPH_NODES]
    named = titles(actor, (item.note_id for item in items))
    return [GraphNode(item.note_id, named.get(item.note_id, "(empty)"), item.depth,
                      item.direction, item.via) for item in items]
