"""The text a partial edit makes of a note (`notebooks.edits`), read before the
change's transaction as every correction's checks are (secret hygiene, the check of
agents' writes need the new text first)."""

from __future__ import annotations

import uuid

from grove.kernel import operations
from grove.kernel.actor import WRITE, Actor
from grove.kernel.tenancy import tenant
from notebooks.edits import Edit, apply_edit
from notebooks.selectors.access import access_note
from notebooks.services.frame import expect_version


def edited_content(actor: Actor, operation_id: uuid.UUID, note_id: uuid.UUID,
                   expected_version: int | None, edit: Edit) -> tuple[str, int] | None:
    """The note's text with `edit` made, and the version it was made on (the change's
    fence: a note changed meanwhile is a `version_conflict`). None when the operation id
    was used already — the change's frame replays it, or refuses a different request.
    Raises what the note's access and `expected_version` refuse, and the edit's own
    refusals (its target absent or ambiguous)."""
    with tenant(actor):
        if operations.seen(actor, operation_id):
            return None
        note = access_note(actor, note_id, need=WRITE)
        expect_version(note, expected_version)
        return apply_edit(note.content, edit), note.version
