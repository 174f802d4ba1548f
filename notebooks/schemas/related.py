"""A note's neighbourhood by links (issue 38): the shapes REST
(`GET /v1/notes/{id}/related`) and the `related` tool share."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from grove.kernel.paging import CursorText
from grove.kernel.schemas import In, ListMeta, Out, QueryIn
from notebooks.schemas.arguments import ToolArguments
from notebooks.schemas.ids import NOTE_ID, NoteId

DEPTH_MAX = 2
RELATED_LIMIT_MAX = 100


class RelatedIn(In):
    depth: int = Field(default=DEPTH_MAX, ge=1, le=DEPTH_MAX, description="Links away, at most.")
    limit: int = Field(default=20, ge=1, le=RELATED_LIMIT_MAX, description="Notes per page.")
    cursor: CursorText | None = Field(default=None, description="meta.nextCursor of the last page.")


class RelatedQuery(QueryIn, RelatedIn):
    """`GET /v1/notes/{id}/related`: the same arguments from a query string."""


class RelatedArgs(ToolArguments, RelatedIn):
    note_id: NoteId = Field(description=NOTE_ID + ".")


class RelatedNote(Out):
    id: str  # note:<uuid>@<version>
    title: str
    kind: str
    # Set only for a note in a notebook.
    notebook: str | None = Field(default=None, exclude_if=lambda v: v is None)
    depth: int  # 1: linked with the note itself; 2: through `via`
    direction: Literal["to", "from", "both"]  # linked to, from, or both ways
    # Depth 2: note:<uuid> of the depth-1 note it is linked with.
    via: str | None = Field(default=None, exclude_if=lambda v: v is None)


class RelatedPage(Out):
    data: list[RelatedNote]
    meta: ListMeta

    def mcp_text(self) -> str:
        meta = self.meta
        head = f"{meta.returned} of {meta.available} linked notes"
        if meta.next_cursor:
            head += f"; next page: cursor {meta.next_cursor}"
        arrows = {"to": "links to", "from": "linked from", "both": "linked both ways"}
        lines = [f"- {n.id} {n.kind}{', ' + n.notebook if n.notebook else ''}: {n.title} "
                 f"({arrows[n.direction]} "
                 + (f"{n.via})" if n.via else "this note)") for n in self.data]
        return "\n".join([head, *lines])
