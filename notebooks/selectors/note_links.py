"""A note's links as a caller may see them (issue 38; docs/architecture.md, "Links
between notes"): what it links to and what links to it, through the caller's grant.

A link whose target the caller may not read is the same as an unresolved one — its
written text (which is in the note the caller reads) and nothing of the target — and a
backlink from a note the caller may not read is not listed. Callers hold the tenant
transaction and have checked the caller may read `note`."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.db.models.functions import Length, Substr

from grove.interfaces.rendering import note_title, plain, shorten
from grove.kernel.actor import Actor
from grove.kernel.tenancy import tenant
from links import rewrite
from links.models import Link, LinkName
from links.rules import name_key
from notebooks.models import Note
from notebooks.schemas.notes import BacklinkOut, NoteLinkOut
from notebooks.selectors.access import notes_live, notes_visible_to
from passages.models import Passage

TITLE_SOURCE_CHARS = 8_000  # what a title is read from (front matter, first heading)
BACKLINKS_MAX = 200  # notes a read lists as linking here (the most recently updated)
CONTEXT_CHARS = 240


def titles(actor: Actor, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, str]:
    """The titles of those of `ids` the caller may read (by the one title rule)."""
    wanted = {i for i in ids if i is not None}
    if not wanted:
        return {}
    rows = (notes_visible_to(actor).filter(id__in=wanted)
            .annotate(head=Substr("content", 1, TITLE_SOURCE_CHARS))
            .values_list("id", "head", "source_path"))
    return {note_id: note_title(head, path=path) or "(empty)" for note_id, head, path in rows}


def links_of(actor: Actor, note: Note) -> list[NoteLinkOut]:
    """The links the note's current text writes, in order."""
    rows = list(Link.objects.filter(note_id=note.id).order_by("position")
                .values_list("target", "heading", "label", "form", "target_note_id"))
    named = titles(actor, (row[4] for row in rows))
    return [NoteLinkOut(target=target, heading=heading, label=label,
                        form="markdown" if form == "markdown" else "wiki",
                        note_id=target_id if target_id in named else None,
                        title=named.get(target_id))
            for target, heading, label, form, target_id in rows]


def backlinks_of(actor: Actor, note: Note) -> list[BacklinkOut]:
    """The notes the caller may read that link here (not the note itself), most
    recently updated first, each with the passage around its first link here."""
    sources = list(notes_visible_to(actor)
                   .filter(id__in=Link.objects.filter(target_note_id=note.id).values("note_id"))
                   .exclude(id=note.id).order_by("-updated_at", "-id")
                   .annotate(head=Substr("content", 1, TITLE_SOURCE_CHARS))
                   .values_list("id", "head", "source_path")[:BACKLINKS_MAX])
    if not sources:
        return []
    first: dict[uuid.UUID, int] = {}
    for source_id, start in (Link.objects.filter(target_note_id=note.id,
                                                  note_id__in=[s[0] for s in sources])
                             .order_by("note_id", "position").values_list("note_id", "start")):
        first.setdefault(source_id, start)
    return [BacklinkOut(note_id=source_id, title=note_title(head, path=path) or "(empty)",
                        context=_context(source_id, first.get(source_id, 0)))
            for source_id, head, path in sources]


def _context(note_id: uuid.UUID, at: int) -> str:
    """The passage holding offset `at` of the note, as plain text, around it."""
    passage = (Passage.objects.filter(note_id=note_id, start__lte=at, end__gt=at)
               .order_by("position").values_list("text", "start").first())
    if passage is None:
        return ""
    text, start = passage
    offset = at - start
    window = text[max(0, offset - CONTEXT_CHARS // 2):offset + CONTEXT_CHARS]
    return shorten(plain(window), CONTEXT_CHARS)


SUGGESTIONS = 8


def title_suggestions(actor: Actor, prefix: str) -> list[tuple[uuid.UUID, str, str]]:
    """The editor's `[[` suggestions: live notes the caller may read answering to a name
    that starts with `prefix` (as names compare: `name_key`) — (id, title, the name
    matched when it is an alias or file name, else ""), titles first, shortest first."""
    key = name_key(prefix)
    if not key:
        return []
    with tenant(actor):
        rows = list(LinkName.objects.filter(key__startswith=key,
                                            note__in=notes_live(actor))
                    .order_by(Length("key"), "key", "kind")
                    .values_list("note_id", "key", "kind")[:SUGGESTIONS * 3])
        seen: dict[uuid.UUID, str] = {}
        for note_id, matched, kind in rows:
            if note_id not in seen:
                seen[note_id] = "" if kind == "title" else matched
        named = titles(actor, seen)
    # A title that cannot be written inside `[[…]]` (or was shortened) is not offered.
    return [(note_id, named[note_id], matched) for note_id, matched in seen.items()
            if note_id in named and rewrite.writable(named[note_id])
            and not named[note_id].endswith("…")][:SUGGESTIONS]
