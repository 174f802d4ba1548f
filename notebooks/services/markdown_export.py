"""Files out (issue 22 item 3): what the caller may see, as a zip of Markdown files —
one file per note, notebooks as folders — that any editor opens and `grove ingest`
takes back.

    Projects/Grove/ship-the-ingest-2f1c9a0b.md
    ---
    grove-export: 1
    id: 2f1c9a0b-…
    kind: decision
    tags: [release]
    notebook: [Projects, Grove]
    version: 3
    status: active
    created: 2026-12-01T09:30:00+00:00
    updated: 2026-12-02T16:05:12+00:00
    ---
    Ship the ingest before the archive.

Personal notes are at the top of the zip. Deleted notes are left out; archived and
expired ones are in, with their status. A file's name is its note's first line made
safe for every file system, and the first 8 characters of its id (so two notes with the
same title never clash); a folder is its notebook's name made safe the same way.
`grove ingest` reads the `grove-export` front matter back and keeps each file whole, as
one note with its kind and tags, in the notebook its path names (`notebooks.ingest.source`).
"""

from __future__ import annotations

import re
import unicodedata
import uuid
import zipfile
from dataclasses import dataclass
from datetime import UTC
from typing import IO

import yaml

from grove.interfaces.rendering import note_title
from grove.kernel.actor import READ, Actor
from grove.kernel.paging import Key, keyset_page
from grove.kernel.tenancy import tenant
from notebooks.schemas.notes import NotebookOut
from notebooks.selectors.access import notebooks_visible_to, notes_visible_to
from notebooks.selectors.library import notebooks_as_seen
from notebooks.services.portability import parents_first

MARKER = "grove-export"
FORMAT = 1
PAGE = 500
NAME_MAX_CHARS = 60
_UNSAFE = re.compile(r'[\x00-\x1f<>:"/\\|?*\x7f]+')


@dataclass(frozen=True)
class MarkdownExportOut:
    notebooks: int
    notes: int


def safe_name(text: str, fallback: str) -> str:
    """A file or folder name every common file system accepts: no separators, control
    or reserved characters, no leading dots or trailing dots and spaces."""
    name = _UNSAFE.sub(" ", unicodedata.normalize("NFC", text)).strip().strip(".").strip()
    name = re.sub(r"\s+", " ", name)[:NAME_MAX_CHARS].strip()
    return name or fallback


def _folders(notebooks: list[NotebookOut]) -> dict[uuid.UUID, str]:
    """Each notebook's folder in the zip: its visible ancestors' safe names, joined;
    siblings whose safe names collide get their id's first 8 characters. Walked
    parents first, without recursion: a deep tree costs no stack."""
    siblings: dict[tuple[uuid.UUID | None, str], int] = {}
    for nb in notebooks:
        key = (nb.parent_id, safe_name(nb.name, "notebook").casefold())
        siblings[key] = siblings.get(key, 0) + 1
    folders: dict[uuid.UUID, str] = {}
    for nb in parents_first(notebooks):
        name = safe_name(nb.name, "notebook")
        if siblings[(nb.parent_id, name.casefold())] > 1:
            name = f"{name} {str(nb.id)[:8]}"
        parent = folders.get(nb.parent_id) if nb.parent_id else None
        folders[nb.id] = f"{parent}/{name}" if parent else name
    return folders


def _names(notebooks: list[NotebookOut]) -> dict[uuid.UUID, list[str]]:
    """Each notebook's path of names from the top of what the caller sees: the
    front matter's `notebook`, from which ingest makes the same tree again."""
    names: dict[uuid.UUID, list[str]] = {}
    for nb in parents_first(notebooks):
        names[nb.id] = [*(names.get(nb.parent_id, []) if nb.parent_id else []), nb.name]
    return names


def markdown_export(*, actor: Actor, out: IO[bytes]) -> MarkdownExportOut:
    """Write the zip to `out`. Notes are read in pages, each in its own short tenant
    transaction, and each file is written as it is read: memory stays flat whatever
    the account's size."""
    with tenant(actor):
        actor.require(READ)
        notebooks = notebooks_as_seen(
            actor, list(notebooks_visible_to(actor).order_by("created_at", "id")))
    folders = _folders(notebooks)
    paths = _names(notebooks)
    count = 0
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for folder_name in sorted(folders.values()):  # empty notebooks are folders too
            archive.writestr(zipfile.ZipInfo(folder_name + "/"), b"")
        after: Key | None = None
        while True:
            with tenant(actor):
                page = keyset_page(notes_visible_to(actor), order=("created_at", "id"),
                                   after=after, limit=PAGE)
            for note in page.rows:
                folder = folders.get(note.notebook_id) if note.notebook_id else None
                front = {
                    MARKER: FORMAT, "id": str(note.id), "kind": note.kind,
                    "tags": list(note.tags),
                    "notebook": paths.get(note.notebook_id, []) if note.notebook_id else [],
                    "version": note.version, "status": note.status,
                    "created": note.created_at.isoformat(),
                    "updated": note.updated_at.isoformat()}
                if note.task_id:
                    front["task_id"] = note.task_id
                if note.pinned:
                    front["pinned"] = True
                name = f"{safe_name(note_title(note.content), 'note')} {str(note.id)[:8]}.md"
                info = zipfile.ZipInfo(f"{folder}/{name}" if folder else name,
                                       date_time=note.updated_at.astimezone(UTC)
                                       .timetuple()[:6])
                info.compress_type = zipfile.ZIP_DEFLATED
                header = yaml.safe_dump(front, sort_keys=False, allow_unicode=True)
                archive.writestr(info, f"---\n{header}---\n{note.content}\n")
                count += 1
            if page.next_key is None:
                break
            after = page.next_key
    return MarkdownExportOut(notebooks=len(notebooks), notes=count)
