"""The shape of a passage in answers (docs/api.md, "Passages")."""

from __future__ import annotations

from grove.kernel.schemas import Out


class PassageRef(Out):
    # Which part of a document note an item's `content` is (absent: the whole note).
    # A comment, not a docstring: MCP's tools/list is held to a byte budget.
    id: str  # note:<uuid>@<version>#<position>, a citation
    position: int  # 1-based
    of: int  # the note's passages
    headings: list[str]  # the heading trail, outermost first


def passage_id(note_id: object, version: int, position: int) -> str:
    return f"note:{note_id}@{version}#{position}"
