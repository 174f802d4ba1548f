"""Results of the library's batch changes (move, tag, and the Undo of a batch): one
result per note, as `BatchOut` is for forget, archive and restore — with the statuses
those changes have and, for a note left as it was, the reason's stable code."""

from __future__ import annotations

import uuid
from typing import Literal

from grove.kernel.schemas import Out

BulkStatus = Literal[
    "moved",  # note_move_many: now in the destination (a new revision)
    "tagged",  # note_tag: its tags changed (a new revision)
    "undone",  # note_batch_undo: the batch's change reversed (a new revision)
    "unchanged",  # nothing to do: already there, already tagged so (no revision)
    "not_found",  # not a note the caller may change (missing, foreign, deleted)
    "version_conflict",  # changed since the version the caller named: left as it is
    "refused",  # a rule said no for this note (`code` says which); left as it is
    # note_move_many: could move, but another note of the batch could not, and a batch
    # move is all or nothing (SPEC §3): left where it was
    "not_moved",
]

# The statuses that wrote a new revision of the note.
CHANGED: frozenset[str] = frozenset({"moved", "tagged", "undone"})


class BulkItem(Out):
    id: uuid.UUID
    status: BulkStatus
    version: int | None = None  # the note's version after this (None: not found)
    code: str | None = None  # why "refused": the error code the single change would give


class BulkOut(Out):
    items: list[BulkItem]

    def count(self, *statuses: str) -> int:
        return sum(1 for item in self.items if item.status in statuses)

    def codes(self) -> dict[str, int]:
        """How many notes were refused for each reason."""
        found: dict[str, int] = {}
        for item in self.items:
            if item.status == "refused" and item.code:
                found[item.code] = found.get(item.code, 0) + 1
        return found
