"""The note page's picture of its neighbourhood (issue 38 item 8): the note in the
middle, the notes linked to and from it on a ring around it, theirs on an outer ring
beside the note they are linked with — an SVG drawn on the server, in the page (no
script, no build step, nothing fetched: the site's CSP holds), each note a link to its
page. Colours and sizes come from the stylesheet's classes, never style attributes."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.urls import reverse

from grove.interfaces.rendering import shorten
from notebooks.selectors.related import GraphNode

SIZE = 360
CENTRE = SIZE / 2
RINGS = {1: 95.0, 2: 160.0}
LABEL_CHARS = 22
MARGIN_X, MARGIN_Y = 60.0, 16.0  # room for a label beside and above the outermost notes


@dataclass(frozen=True)
class Placed:
    x: float
    y: float
    label: str
    title: str
    href: str | None  # None: the note itself
    kind: str  # centre | near | far

    @property
    def radius(self) -> int:
        return {"centre": 10, "near": 7}.get(self.kind, 5)

    @property
    def label_y(self) -> float:
        return round(self.y + self.radius + 11, 1)


@dataclass(frozen=True)
class Edge:
    x1: float
    y1: float
    x2: float
    y2: float
    kind: str  # to | from | both


@dataclass(frozen=True)
class Graph:
    nodes: list[Placed]
    edges: list[Edge]

    @property
    def box(self) -> tuple[float, float, float, float]:
        """The drawing's extent, labels included (x, y, width, height): a ring of near
        notes alone takes less room than two rings."""
        left = min(n.x for n in self.nodes) - MARGIN_X
        top = min(n.y for n in self.nodes) - MARGIN_Y
        right = max(n.x for n in self.nodes) + MARGIN_X
        bottom = max(n.label_y for n in self.nodes) + MARGIN_Y / 2
        return round(left, 1), round(top, 1), round(right - left, 1), round(bottom - top, 1)

    @property
    def view_box(self) -> str:
        return " ".join(f"{v:g}" for v in self.box)


def _at(angle: float, radius: float) -> tuple[float, float]:
    return (round(CENTRE + radius * math.cos(angle), 1),
            round(CENTRE + radius * math.sin(angle), 1))


def layout(title: str, nodes: Sequence[GraphNode]) -> Graph | None:
    """Where each note of the neighbourhood is drawn; None when nothing links here or
    from here."""
    if not nodes:
        return None
    near = [n for n in nodes if n.depth == 1]
    far = [n for n in nodes if n.depth == 2]
    angles: dict[uuid.UUID, float] = {}
    placed = [Placed(CENTRE, CENTRE, shorten(title, LABEL_CHARS), title, None, "centre")]
    edges: list[Edge] = []
    for index, node in enumerate(near):
        angle = -math.pi / 2 + 2 * math.pi * index / len(near)
        angles[node.note_id] = angle
        x, y = _at(angle, RINGS[1])
        edges.append(Edge(CENTRE, CENTRE, x, y, node.direction))
        placed.append(Placed(x, y, shorten(node.title, LABEL_CHARS), node.title,
                             reverse("note", args=[node.note_id]), "near"))
    by_parent: dict[uuid.UUID | None, list[GraphNode]] = {}
    for node in far:
        by_parent.setdefault(node.via, []).append(node)
    spread = 2 * math.pi / max(len(near), 1) * 0.8
    for parent, children in by_parent.items():
        base = angles.get(parent, 0.0) if parent is not None else 0.0
        px, py = _at(base, RINGS[1])
        for index, node in enumerate(children):
            offset = (index - (len(children) - 1) / 2) * spread / max(len(children), 1)
            x, y = _at(base + offset, RINGS[2])
            edges.append(Edge(px, py, x, y, node.direction))
            placed.append(Placed(x, y, shorten(node.title, LABEL_CHARS), node.title,
                                 reverse("note", args=[node.note_id]), "far"))
    return Graph(placed, edges)
