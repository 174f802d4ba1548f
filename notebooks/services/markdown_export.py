"""Files out (issue 22 item 3, issue 37 item 6): what the caller may see, as a zip of
Markdown files — one file per note, notebooks as folders — that any editor opens and
`grove ingest` takes back (docs/architecture.md, "Files in and out").

* A note ingested from a file, still in the notebook ingest put it in, goes back to
  its source path under its root notebook's folder, as the bytes it came in as: its
  content with the whitespace around it that the ledger kept. Any other note is
  `<notebook folder>/<title>.md` (Personal notes at the top of the zip).
* No id in a name. Paths that would be the same (compared case-folded) are told apart
  stably: the ingested notes in place first, then by age; a later one is `Title (2).md`.
* A document note's file adds front matter only for what the file does not say: its
  tags, when its front matter names none. A memory record is written under
  `grove-export: 2` front matter (kind, tags, task id), which ingest reads back:

    Projects/Grove/Ship the ingest.md
    ---
    grove-export: 2
    kind: decision
    tags:
    - release
    ---
    Ship the ingest before the archive.

Nothing account-specific (ids, versions, dates) is in a file, so export → ingest into a
new account (`grove ingest FOLDER` at the top level) → export writes the same bytes.
Deleted notes are left out; archived and expired ones are in.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
import zipfile
from dataclasses import dataclass
from datetime import UTC
from pathlib import PurePosixPath
from typing import IO

import yaml
from django.db.models.functions import Substr

from grove.interfaces.front_matter import front_matter_end
from grove.interfaces.rendering import note_title
from grove.kernel.actor import READ, Actor
from grove.kernel.errors import Invalid
from grove.kernel.paging import Key, keyset_page
from grove.kernel.tenancy import tenant
from notebooks.ingest.files import unsafe_path_reason
from notebooks.ingest.source import listed_tags
from notebooks.models import IngestedChunk, Kind, Note
from notebooks.rules import TAGS_MAX, clean_tag
from notebooks.schemas.notes import NotebookOut
from notebooks.selectors.access import notebooks_visible_to, notes_visible_to
from notebooks.selectors.library import notebooks_as_seen
from notebooks.services.portability import parents_first

MARKER = "grove-export"
FORMAT = 2
PAGE = 500
TITLE_SOURCE_CHARS = 8_000  # what a title is read from (front matter, first heading)
# Unpacked by any tool as a folder anyone may enter and files anyone may read (umask
# still applies): without modes, `unzip` makes folders its own user cannot enter.
FOLDER_MODE = 0o40755
FILE_MODE = 0o100644
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


@dataclass(frozen=True)
class _Filed:
    """What the export knows of an ingested note's file (the ledger's row)."""

    root_id: uuid.UUID | None
    path: str
    lead: str
    tail: str
    subfolders: bool


def _ledger(actor: Actor) -> dict[uuid.UUID, _Filed]:
    rows = IngestedChunk.objects.filter(chunk=0, gone_at__isnull=True).values_list(
        "note_id", "root_id", "path", "lead", "tail", "subfolders")
    return {note: _Filed(root, path, lead, tail, subfolders)
            for note, root, path, lead, tail, subfolders in rows}


def _in_place(filed: _Filed, notebook_id: uuid.UUID | None,
              children: dict[tuple[uuid.UUID | None, str], uuid.UUID]) -> bool:
    """Whether a note is where ingest put its file: the root, or (folders as notebooks)
    the notebook of the file's folder under it."""
    expected: uuid.UUID | None = filed.root_id
    if filed.subfolders or filed.root_id is None:
        for name in PurePosixPath(filed.path).parent.parts:
            found = children.get((expected, name.casefold()))
            if found is None:
                return False
            expected = found
    return expected == notebook_id


def _numbered(path: str, number: int) -> str:
    folder, _, name = path.rpartition("/")
    stem, dot, suffix = name.rpartition(".")
    named = f"{stem} ({number}).{suffix}" if dot and stem else f"{name} ({number})"
    return f"{folder}/{named}" if folder else named


def _plan(actor: Actor, notebooks: list[NotebookOut], folders: dict[uuid.UUID, str],
          filed: dict[uuid.UUID, _Filed]) -> dict[uuid.UUID, str]:
    """Every exported note's path in the zip: ingested notes in place first (by path,
    exactly as their files were named), then the rest by age, each taking the first
    name free in any case."""
    children = {(nb.parent_id, nb.name.casefold()): nb.id for nb in notebooks}
    placed: list[tuple[str, uuid.UUID]] = []
    titled: list[tuple[str, uuid.UUID]] = []
    after: Key | None = None
    while True:
        with tenant(actor):
            page = keyset_page(
                notes_visible_to(actor).annotate(head=Substr("content", 1, TITLE_SOURCE_CHARS))
                .only("id", "notebook_id", "created_at", "source_path"),
                order=("created_at", "id"), after=after, limit=PAGE)
        for note in page.rows:
            folder = folders.get(note.notebook_id) if note.notebook_id else None
            known = filed.get(note.id)
            if known is not None and unsafe_path_reason(PurePosixPath(known.path)) is None \
                    and (known.root_id is None or known.root_id in folders) \
                    and _in_place(known, note.notebook_id, children):
                root = folders.get(known.root_id) if known.root_id else None
                placed.append((f"{root}/{known.path}" if root else known.path, note.id))
                continue
            head: str = note.head  # type: ignore[attr-defined]  # the annotation above
            name = PurePosixPath(known.path).name if known is not None else \
                f"{safe_name(note_title(head, path=note.source_path), 'note')}.md"
            titled.append((f"{folder}/{name}" if folder else name, note.id))
        if page.next_key is None:
            break
        after = page.next_key
    # An ingested file keeps its exact path: the folder it came from held it beside
    # names that differ only in case. Only an exact clash (two roots, or a file moved
    # onto another's path) is numbered, never onto another file's path.
    reserved = {path for path, _ in placed}
    exact: set[str] = set()
    paths: dict[uuid.UUID, str] = {}
    for path, note_id in sorted(placed):
        chosen, number = path, 1
        while chosen in exact or (chosen != path and chosen in reserved):
            number += 1
            chosen = _numbered(path, number)
        exact.add(chosen)
        paths[note_id] = chosen
    # Every other note takes the first name no other file has in any case.
    folded = {path.casefold() for path in exact}
    for path, note_id in titled:
        chosen, number = path, 1
        while chosen.casefold() in folded:
            number += 1
            chosen = _numbered(path, number)
        folded.add(chosen.casefold())
        paths[note_id] = chosen
    return paths


def with_tags(content: str, tags: list[str]) -> str:
    """A document note's text with its tags in its front matter: unchanged when the
    front matter lists exactly the note's tags (a file ingested and not retagged comes
    back byte for byte); else a `tags:` line added to it (or a new front matter block),
    or its `tags` entry written anew when it lists others — the rest of the block as it
    was. Front matter that is not YAML is left alone."""
    end = front_matter_end(content)
    if not end:
        return f"---\n{_tags_line(tags)}---\n{content}" if tags else content
    block = content[:end]
    opening = block.index("\n") + 1
    closing = block.rstrip("\r\n").rfind("\n") + 1  # where the closing "---" starts
    try:
        meta = yaml.safe_load(block[opening:closing])
    except (yaml.YAMLError, RecursionError):
        return content
    if meta is not None and not isinstance(meta, dict):
        return content
    newline = "\r\n" if block[:closing].endswith("\r\n") else "\n"
    if not isinstance(meta, dict) or "tags" not in meta:
        return content if not tags else (
            content[:closing] + _tags_line(tags).replace("\n", newline) + content[closing:])
    if _normalised(listed_tags(meta["tags"])) == sorted(set(tags)):
        return content
    lines = block[opening:closing].splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if _TAGS_KEY.match(line)), None)
    if at is None:  # a `tags` key written some other way: not edited blind
        return content
    after = at + 1
    while after < len(lines) and (lines[after][:1] in (" ", "\t", "-")
                                  or not lines[after].strip()):
        after += 1
    entry = _tags_line(tags).replace("\n", newline) if tags else ""
    edited = "".join([*lines[:at], entry, *lines[after:]])
    try:
        check = yaml.safe_load(edited)
    except (yaml.YAMLError, RecursionError):
        return content
    if not isinstance(check, dict) or _normalised(listed_tags(check.get("tags"))) \
            != sorted(set(tags)):
        return content  # never write front matter that says something else
    return content[:opening] + edited + content[closing:]


_TAGS_KEY = re.compile(r"tags[ \t]*:")


def _tags_line(tags: list[str]) -> str:
    return yaml.safe_dump({"tags": list(tags)}, default_flow_style=None,
                          allow_unicode=True, width=10_000)


def _normalised(listed: tuple[str, ...]) -> list[str]:
    """Tags as ingest stores them: the ones it would refuse left out, at most TAGS_MAX."""
    kept = set()
    for tag in listed:
        try:
            kept.add(clean_tag(tag))
        except Invalid:
            continue
    return sorted(kept)[:TAGS_MAX]


def file_bytes(note: Note, filed: _Filed | None) -> bytes:
    """A note's file: its text in its envelope (a file's own whitespace, else one
    newline at the end), under `grove-export: 2` front matter for a memory record."""
    lead, tail = (filed.lead, filed.tail) if filed is not None else ("", "\n")
    if note.kind == Kind.NOTE:
        return (lead + with_tags(note.content, list(note.tags)) + tail).encode()
    front: dict[str, object] = {MARKER: FORMAT, "kind": note.kind, "tags": list(note.tags)}
    if note.task_id:
        front["task_id"] = note.task_id
    header = yaml.safe_dump(front, sort_keys=False, allow_unicode=True)
    return f"---\n{header}---\n{lead}{note.content}{tail}".encode()


def markdown_export(*, actor: Actor, out: IO[bytes]) -> MarkdownExportOut:
    """Write the zip to `out`. Notes are read in pages, each in its own short tenant
    transaction — once for their names (the start of each text only), once to write
    them — and each file is written as it is read: memory holds a path per note, not
    their texts."""
    with tenant(actor):
        actor.require(READ)
        notebooks = notebooks_as_seen(
            actor, list(notebooks_visible_to(actor).order_by("created_at", "id")))
        filed = _ledger(actor)
    folders = _folders(notebooks)
    paths = _plan(actor, notebooks, folders, filed)
    count = 0
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for folder_name in sorted(folders.values()):  # empty notebooks are folders too
            folder = zipfile.ZipInfo(folder_name + "/")
            folder.external_attr = FOLDER_MODE << 16 | 0x10  # MS-DOS directory flag
            archive.writestr(folder, b"")
        after: Key | None = None
        while True:
            with tenant(actor):
                page = keyset_page(notes_visible_to(actor), order=("created_at", "id"),
                                   after=after, limit=PAGE)
            for note in page.rows:
                path = paths.get(note.id)
                if path is None:  # made since the names were planned: the next export's
                    continue
                info = zipfile.ZipInfo(path, date_time=note.updated_at.astimezone(UTC)
                                       .timetuple()[:6])
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = FILE_MODE << 16
                archive.writestr(info, file_bytes(note, filed.get(note.id)))
                count += 1
            if page.next_key is None:
                break
            after = page.next_key
    return MarkdownExportOut(notebooks=len(notebooks), notes=count)
