"""A renamed note keeps its links (issue 38 item 3): after a note's title changes, the
links in other notes that meant it by its old title are written anew with the new one —
each changed note a new revision under the rename's operation id, so one Undo
(`batch_undo`) takes them all back. Only notes the caller may change are touched; a
link whose new title cannot be written inside `[[…]]` (it holds `|`, `#`, `/`, brackets)
stays as it was, and says so by staying unresolved."""

from __future__ import annotations

import posixpath
import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Literal

from grove.interfaces.rendering import note_title
from grove.interfaces.wikilinks import Written
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import GroveError
from links import rewrite
from links.parsing import NAME_MAX_CHARS
from links.rules import choose, name_key, wanted
from links.services import Lost, NoteText, Places, asking_for, candidates, lost_links
from notebooks.models import Note, RevisionReason
from notebooks.rules import content_max_chars
from notebooks.selectors.access import access_note
from notebooks.services.indexing import mark_for_indexing
from notebooks.services.revisions import save_new_version

# Where a link is written, and its text anew (or how to make it from the text there).
Span = tuple[int, int, str | Callable[[str], str]]


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
    by_note: dict[uuid.UUID, list[Span]] = defaultdict(list)
    for link in asking:
        text: str | Callable[[str], str]
        if link.form == "wiki":
            text = rewrite.wiki(link.target, link.heading, link.label, new)
        elif link.end > link.start:  # from the address as written
            text = partial(rewrite.address, title=new)
        else:
            continue
        by_note[link.note_id].append((link.start, link.end, text))
    return len(_apply(actor, by_note, operation_id, now))


def _apply(actor: Actor, by_note: dict[uuid.UUID, list[Span]], operation_id: uuid.UUID,
           now: datetime) -> set[uuid.UUID]:
    """Write each note's spans anew (a text, or a function of the text written there),
    each changed note a new revision under `operation_id`; returns the changed notes.
    Only notes the caller may change are touched."""
    changed: set[uuid.UUID] = set()
    for source_id, spans in by_note.items():
        try:
            source = access_note(actor, source_id, need=WRITE, for_update=True)
        except GroveError:
            continue  # outside what the caller may change: left as it is
        content = rewrite.rewritten(source.content, [
            (start, end, text if isinstance(text, str) else text(source.content[start:end]))
            for start, end, text in spans])
        if content == source.content or len(content) > content_max_chars(source.kind):
            continue  # unchanged; or the longer link would not fit its kind's limit
        source.content = content
        try:
            save_new_version(source, reason=RevisionReason.UPDATE, actor=actor,
                             operation_id=operation_id, now=now)
        except GroveError:
            continue  # declared ground truth a connection may not change, and the like
        mark_for_indexing(source)
        changed.add(source_id)
    return changed


def relink_after_move(actor: Actor, reached: dict[int, uuid.UUID], *,
                      operation_id: uuid.UUID, now: datetime) -> dict[uuid.UUID, int]:
    """After notes moved: rewrite the links that reached them (`reached`, read before
    the move: `links_to`) and no longer do — a path written in the link
    (`[[Projects/Greenhouse]]`, `[text](../Projects/Greenhouse.md)`) that no longer
    leads there — so that they do again: a wiki-link with as many of the note's folders
    as it named (`[[Archive/Greenhouse]]`), else the fewest that reach the note from
    where the link is written; a Markdown link with the path from its note's folder.
    Returns, per moved note, in how many notes links to it were rewritten. Caller:
    `note_move`, in its tenant transaction, after the move."""
    tree = Places(actor.account_id)
    lost = lost_links(actor.account_id, reached, tree)
    if not lost:
        return {}
    targets = {n.id: n for n in Note.objects.filter(id__in={link.reached for link in lost})
               .only("id", "notebook_id", "source_path", "status")}
    by_note: dict[uuid.UUID, list[Span]] = defaultdict(list)
    sources: dict[uuid.UUID, set[uuid.UUID]] = defaultdict(set)  # moved note → linking notes
    for link in lost:
        target = targets.get(link.reached)
        if target is None or target.status == "deleted" or (
                link.path is not None
                and link.path == tree.folder(target.notebook_id, target.source_path)):
            continue  # gone; or a Markdown path that still leads to it
        if link.asking.end <= link.asking.start:
            continue  # written where it cannot be rewritten in place (a reference link)
        text = _reaching(actor.account_id, link, target, tree)
        if text is not None:
            by_note[link.asking.note_id].append((link.asking.start, link.asking.end, text))
            sources[target.id].add(link.asking.note_id)
    changed = _apply(actor, by_note, operation_id, now)
    return {moved: len(linking & changed) for moved, linking in sources.items()
            if linking & changed}


def _reaching(account_id: uuid.UUID, link: Lost, target: Note,
              tree: Places) -> str | Callable[[str], str] | None:
    """The link written anew to reach `target` from where it is written, or None when
    no way of writing it does (the name is another note's nearer by, say)."""
    asking = link.asking
    folder = tree.written_folder(target.notebook_id, target.source_path)
    name = asking.target.replace("\\", "/").rpartition("/")[2]
    form: Literal["wiki", "markdown"] = "wiki" if asking.form == "wiki" else "markdown"
    if form == "wiki":
        # As many folders as the link named, where they reach it; else the fewest that do.
        named = min(asking.target.replace("\\", "/").count("/"), len(folder))
        counts = [named, *(k for k in range(len(folder) + 1) if k != named)]
        tries = ["/".join((*folder[len(folder) - k:], name)) for k in counts]
    else:
        written_here = "/" + "/".join(link.written_here)
        tries = [posixpath.relpath("/" + "/".join((*folder, name)), written_here)]
    for written in tries:
        if form == "wiki" and not all(rewrite.writable(part)
                                      for part in written.split("/")[:-1]):
            continue  # a folder named with `|`, `#` or brackets cannot be written in it
        want = wanted(Written(form, written, asking.heading, asking.label), link.here)
        if want is None:
            continue
        pool = candidates(account_id, [want.key], tree).get(want.key, [])
        if choose(want, link.here, pool) != target.id:
            continue
        if form == "wiki":
            return rewrite.wiki(written, asking.heading, asking.label, name)
        return partial(rewrite.moved_address, path=written)
    return None
