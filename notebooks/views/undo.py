"""Undo in the library: after an archive, a move or a delete on the website, the flash
message on the page the browser is sent to carries an Undo button — a small POST form
(CSRF, no JavaScript needed) to the ordinary action that reverses it, through the
ordinary service:

| done | undone by |
|---|---|
| archive a note | its restore (`note_restore`), fenced by the version the archive made |
| move a note | a move back (`note_move`), fenced the same way |
| delete a note | Recently deleted's restore (`note_undelete`), fenced the same way |
| archive a notebook | its restore (`notebook_restore`) |
| delete a notebook | Recently deleted's restore (`notebook_undelete`) |
| a batch of notes (bulk bar) | its Undo (`note_batch_undo`), fenced per note the same way |
| the links a rename rewrote | the same Undo (`note_batch_undo` of the rename's operation) |

A batch is an archive, delete, move or tag of several notes at once.

The offer travels in the message's extra tags (`undo <kind> <id> <version> <place>`; a
batch's id is its operation id, whose record names the notes), so it needs no state of
its own and is shown once, like the message. Nothing in it is trusted: the form posts to
an action that checks everything again, and the fence turns an Undo of something
changed since into a clear refusal that changes nothing.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any, Literal, cast

from django.contrib import messages
from django.http import HttpRequest
from django.urls import reverse

Kind = Literal["note-archive", "note-move", "note-delete", "notebook-archive",
               "notebook-delete", "notes-archive", "notes-move", "notes-delete", "notes-tag",
               "notes-relink"]
_TAGS = re.compile(r"undo (note-archive|note-move|note-delete|notebook-archive|"
                   r"notebook-delete|notes-archive|notes-move|notes-delete|notes-tag|"
                   r"notes-relink) "
                   r"([0-9a-f-]{36}) (\d{1,10}) ([0-9a-f-]{36}|-)")

# What a refused Undo says: the version fence found a newer change.
CHANGED = "The note changed after that, so nothing was undone. Here it is as it is now."


@dataclass(frozen=True)
class Undo:
    kind: Kind
    target: uuid.UUID | str  # the note or notebook; a batch ("notes-…"): its operation id
    version: int = 0  # a note's version right after the change (0: no fence)
    place: uuid.UUID | str | None = None  # note-move: the notebook it came from (None: Personal)

    def tags(self) -> str:
        return f"undo {self.kind} {self.target} {self.version} {self.place or '-'}"

    @classmethod
    def of(cls, tags: str) -> Undo | None:
        found = _TAGS.fullmatch(tags or "")
        if found is None:
            return None
        kind, target, version, place = found.groups()
        try:
            return cls(kind=cast(Kind, kind), target=uuid.UUID(target), version=int(version),
                       place=None if place == "-" else uuid.UUID(place))
        except ValueError:
            return None

    def form(self, *, here: str = "") -> dict[str, Any]:
        """The Undo form: where it posts and its hidden fields (a fresh operation id, so a
        double click undoes once). A batch's Undo goes back to the page it is on, `here`."""
        fields: dict[str, Any] = {"operation_id": uuid.uuid4()}
        if self.version:
            fields["expected_version"] = self.version
        if self.kind.startswith("notes-"):
            action = reverse("notes-bulk-undo")
            fields.update(batch=self.target, next=here)
        elif self.kind == "note-archive":
            action = reverse("note-action", args=[self.target, "restore"])
        elif self.kind == "note-move":
            action = reverse("note-move", args=[self.target])
            # Moving back writes the links that followed it back too.
            fields.update(destination=self.place or "", relink="on")
        elif self.kind == "note-delete":
            action = reverse("trash-note-restore", args=[self.target])
        elif self.kind == "notebook-archive":
            action = reverse("notebook-action", args=[self.target, "restore"])
            fields["confirm"] = "on"  # the counts were confirmed for the archive
        else:
            action = reverse("trash-notebook-restore", args=[self.target])
        return {"action": action, "fields": sorted(fields.items()),
                "trash": self.kind.endswith("-delete")}


def offer(request: HttpRequest, text: str, undo: Undo | None) -> None:
    """Say what was done; with `undo`, offer to reverse it."""
    messages.success(request, text, extra_tags=undo.tags() if undo else "")
