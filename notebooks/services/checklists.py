"""Task lists in a note's text: tick or clear one box, as an ordinary correction."""

from __future__ import annotations

import uuid
from typing import Any

from grove.interfaces.tasklists import with_task_set
from grove.kernel import fences, operations
from grove.kernel.actor import Actor
from grove.kernel.errors import Invalid
from grove.kernel.tenancy import tenant
from notebooks.models import Revision
from notebooks.rules import clean_bool, clean_version, parse_uuid
from notebooks.schemas.notes import NoteOut
from notebooks.selectors.access import access_note
from notebooks.services.notes import note_update

TASK_INDEX_MAX = 10_000  # far more boxes than 6,000 characters can hold


def note_task_set(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    note_id: uuid.UUID | str,
    index: int,
    done: bool,
    expected_version: int,
) -> NoteOut:
    """Tick (`done`) or clear the `index`-th task-list box (from 0, in the order the note
    page draws them) of the note's text as it was at `expected_version` — the version
    the page showed.

    The new text goes through `note_update` with that version as its fence, so this is
    an ordinary correction (a new revision, re-indexing, the owner's rules for declared
    truth): a box ticked on a page that is out of date is a `version_conflict` and
    changes nothing, never an edit lost. The text is taken from that version's revision,
    so a repeat of the same operation id computes the same change and replays the first
    result. A box already in the wanted state changes nothing. Raises Invalid
    (`task_not_found`) for a box the text does not have."""
    op_id = operations.coerce_operation_id(operation_id)
    note_uuid = parse_uuid(note_id, what="note id")
    expected_version = clean_version(expected_version)
    done = clean_bool(done, what="done")
    if isinstance(index, bool) or not isinstance(index, int) \
            or not 0 <= index <= TASK_INDEX_MAX:
        raise Invalid("index must be a whole number from 0.", code="invalid_index")
    with tenant(actor):
        note = access_note(actor, note_uuid)
        seen: Any = (Revision.objects.filter(note=note, version=expected_version)
                     .values_list("content", flat=True).first())
    if seen is None:  # a version the note never had: stale or made up
        fences.expect_version(what="note", actual=note.version, expected=expected_version)
        seen = note.content
    content = with_task_set(seen, index, done)
    if content is None:
        raise Invalid(f"Version {expected_version} of this note has no task-list box "
                      f"number {index + 1}.", code="task_not_found")
    return note_update(actor=actor, operation_id=op_id, note_id=note_uuid,
                       expected_version=expected_version, content=content)
