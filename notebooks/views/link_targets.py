"""Where the links of a note page go (issue 38): to the note each one reached, at the
heading it names; an unresolved one (or one reaching a note the reader may not read —
the two look the same) offers to create the note it names."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from urllib.parse import urlencode

from django.urls import reverse

from grove.interfaces.wikilinks import Drawn, Resolver, Written, heading_anchor
from notebooks.schemas.notes import NoteLinkOut


def name_written(written: Written) -> str:
    """The note a link names, as a title: its last path segment, without `.md`."""
    name = written.target.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].strip()
    return name[:-3] if name.lower().endswith(".md") else name


def page_resolver(links: Sequence[NoteLinkOut], notebook_id: uuid.UUID | None) -> Resolver:
    """The note page's resolver: the note's stored links, by form and target as
    written; a missing note is made, from its link, in the linking note's notebook."""
    reached = {(link.form, link.target): link.note_id for link in links}

    def resolve(written: Written) -> Drawn | None:
        key = (written.form, written.target)
        if key not in reached:
            return None  # not in the current text (an older version's link): text only
        note_id = reached[key]
        if note_id is None:
            wanted = {"title": name_written(written)[:200]}
            if notebook_id is not None:
                wanted["notebook"] = str(notebook_id)
            return Drawn(f"{reverse('note-create')}?{urlencode(wanted)}", missing=True)
        anchor = f"#{heading_anchor(written.heading)}" if written.heading else ""
        return Drawn(reverse("note", args=[note_id]) + anchor)

    return resolve
