"""How a link finds its note (docs/architecture.md, "Links between notes"): the key a
name is compared by, where a note sits, and which of several notes of one name a link
means — the nearest, as in Obsidian."""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from grove.interfaces.wikilinks import Written

_SPACES = re.compile(r"\s+")
KIND_RANK = {"title": 0, "file": 1, "alias": 2}
KEY_MAX_CHARS = 300  # a name's longest (`links.parsing.NAME_MAX_CHARS`)
FOLDERS_MAX = 64
Folder = tuple[str, ...]


def name_key(name: str) -> str:
    """What names are compared by: NFC, case-folded, whitespace collapsed — so
    `[[alpha  project]]` finds "Alpha Project"."""
    return _SPACES.sub(" ", unicodedata.normalize("NFC", name).casefold()).strip()


def _segments(path: str) -> list[str]:
    return [name_key(part) for part in path.replace("\\", "/").split("/")
            if part.strip() not in ("", ".")]


@dataclass(frozen=True)
class Wanted:
    """What a link asks for: a name (`key`), the folders written before it (`folders`,
    keys), and whether those folders are the whole path from the top (a Markdown link,
    resolved against the linking note's folder)."""

    key: str
    folders: Folder
    whole: bool


def wanted(written: Written, source_folder: Folder) -> Wanted | None:
    """What a link asks for, or None when it names nothing."""
    parts = _segments(written.target)
    if not parts:
        return None
    if written.form == "markdown":
        path: list[str] = list(source_folder)
        for part in parts:
            if part == "..":
                if not path:
                    return None  # above the top: no note is there
                path.pop()
            else:
                path.append(part)
        parts, whole = path, True
    else:
        whole = False
    last = parts[-1]
    key = last[:-3].strip() if last.endswith(".md") else last
    if not key or len(key) > KEY_MAX_CHARS or len(parts) > FOLDERS_MAX:
        return None  # no note answers to so long a name (and the key stays indexable)
    return Wanted(key, tuple(parts[:-1]), whole)


def folder_of(notebook_path: Folder, source_path: str) -> Folder:
    """Where a note sits: its notebook's path (keys, outermost first; Personal is the
    top), and for a note ingested from a file the file's folders under the ingested
    folder — unless they became the notebooks already (the notebook path ends with
    them)."""
    folders = tuple(_segments(source_path)[:-1]) if source_path else ()
    if folders and notebook_path[len(notebook_path) - len(folders):] == folders:
        return notebook_path
    return notebook_path + folders


@dataclass(frozen=True)
class Candidate:
    note_id: uuid.UUID
    kind: str  # the name's kind: title | file | alias
    folder: Folder
    created_at: datetime


def _shared(a: Folder, b: Folder) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def choose(want: Wanted, source_folder: Folder,
           candidates: Sequence[Candidate]) -> uuid.UUID | None:
    """The note a link means among those answering to its name: with folders written,
    only those whose folder ends with them (a Markdown link first wants the one whose
    folder is exactly its path); then the nearest — in the linking note's own folder,
    else sharing the longest folder prefix with it — then the shortest path, a title
    before a file name before an alias, the oldest."""
    pool = list(candidates)
    if want.whole:
        exact = [c for c in pool if c.folder == want.folders]
        pool = exact or [c for c in pool if _ends_with(c.folder, want.folders)] or pool
    elif want.folders:
        pool = [c for c in pool if _ends_with(c.folder, want.folders)]
    if not pool:
        return None
    best = min(pool, key=lambda c: (c.folder != source_folder, -_shared(c.folder, source_folder),
                                    len(c.folder), KIND_RANK.get(c.kind, 3), c.created_at,
                                    str(c.note_id)))
    return best.note_id


def _ends_with(folder: Folder, tail: Folder) -> bool:
    return not tail or folder[len(folder) - len(tail):] == tail
