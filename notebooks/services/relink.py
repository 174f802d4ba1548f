"""A renamed note keeps its links (issue 38 item 3): after a note's title changes, the
links in other notes that meant it by its old title are written anew with the new one —
each changed note a new revision under the rename's operation id, so one Undo
(`batch_undo`) takes them all back. Only notes the caller may change are touched; a
link whose new title cannot be written inside `[[…]]` (it holds `|`, `#`, `/`, brackets)
stays as it was, and says so by staying unresolved."""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import datetime

from grove.interfaces.rendering import note_title
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import GroveError
from links import rewrite
from links.parsing import NAME_MAX_CHARS
from links.rules import name_key
from links.services import NoteText, asking_for
from notebooks.models import Note, RevisionReason
from notebooks.selectors.access import access_note
from notebooks.services.indexing import mark_for_indexing
from notebooks.services.revisions import save_new_version


def relink_after_rename(actor: Actor, note: Note, *, before: str, operation_id: uuid.UUID,
                        now: datetime) -> int:
    """Rewrite the links that meant `note` by the title its text `before` gave it, if
    its title changed; returns how many notes changed. Caller: `note_update`, in its
    tenant transaction, after saving the note."""
    old = note_title(before, NAME_MAX_CHARS, path=note.source_path)
    new = note_title(note.content, NAME_MAX_CHARS, path=note.source_path)
    if not old or not new or name_key(old) == name_key(new) or not rewrite.writable(new):
        return 0
    asking = asking_for(note.account_id, NoteText(note.id, note.notebook_id, note.content,
                                                  note.source_path),
                        name_key(old), note.created_at)
    by_note: dict[uuid.UUID, list[tuple[int, int, str]]] = defaultdict(list)
    for link in asking:
        if link.form == "wiki":
            text = rewrite.wiki(link.target, link.heading, link.label, new)
        elif link.end > link.start:
            text = None  # filled below, from the address as written
        else:
            continue
        by_note[link.note_id].append((link.start, link.end, text or ""))
    changed = 0
    for source_id, spans in by_note.items():
        try:
            source = access_note(actor, source_id, need=WRITE, for_update=True)
        except GroveError:
            continue  # outside what the caller may change: left as it is
        spans = [(start, end, text or rewrite.address(source.content[start:end], new))
                 for start, end, text in spans]
        content = rewrite.rewritten(source.content, spans)
        if content == source.content:
            continue
        source.content = content
        try:
            save_new_version(source, reason=RevisionReason.UPDATE, actor=actor,
                             operation_id=operation_id, now=now)
        except GroveError:
            continue  # declared ground truth a connection may not change, and the like
        mark_for_indexing(source)
        changed += 1
    return changed
