"""One file's text made ready to keep (issues 22, 37): private regions out, front matter read.

* `<private>…</private>` regions (any case, across lines) are removed first — before
  the text is parsed, stored, embedded, logged or shown to a model. An opening tag with
  no closing one hides everything after it: a forgotten `</private>` must not publish
  the rest of the file.
* YAML front matter (`---` lines at the top) is read with PyYAML's safe loader: its
  `tags` (a list, or words separated by commas or spaces) become the notes' tags. Front
  matter that is not YAML, or not a mapping, is read for nothing, with a warning.
* `Prepared.text` is the whole file as a document note keeps it — front matter included
  — and `lead`/`tail` the whitespace around it (with a byte-order mark), which a note's
  trimmed content does not hold and the export puts back (`envelope`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from grove.interfaces.front_matter import FRONT_MATTER

_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Exported:
    """A memory record Grove's Markdown export wrote (`grove-export` in its front
    matter): the record again, its text the body under the front matter, with its kind.
    Format 1 (before issue 37) also named its notebook path; format 2 leaves the place
    to the file's folder."""

    kind: str
    notebook: tuple[str, ...] | None  # format 1: names from the root; None: the folder's
    task_id: str | None = None  # a handoff's task


@dataclass(frozen=True)
class Prepared:
    body: str  # the text under the front matter, trimmed
    text: str = ""  # the whole file, front matter included, trimmed
    lead: str = ""  # what trimming took from the start of `text` (or of `body`: exported)
    tail: str = ""  # … and from its end
    tags: tuple[str, ...] = ()
    exported: Exported | None = None
    private_regions: int = 0  # how many were removed
    warnings: tuple[str, ...] = field(default=())


def envelope(text: str) -> tuple[str, str, str]:
    """`text` trimmed as a note's content is (`str.strip`), and what was trimmed from
    its start and its end."""
    inner = text.strip()
    if not inner:
        return text, "", ""
    start = len(text) - len(text.lstrip())
    return text[:start], inner, text[start + len(inner):]


def strip_private(text: str) -> tuple[str, int]:
    """`text` without its private regions, and how many there were."""
    return _PRIVATE.subn("", text)


def listed_tags(value: Any) -> tuple[str, ...]:
    """The tags a front matter `tags` value lists (a list, or words in a string)."""
    if isinstance(value, str):
        items: list[Any] = re.split(r"[,\s]+", value)
    elif isinstance(value, list):
        items = value
    else:
        return ()
    return tuple(str(item).strip().lstrip("#") for item in items
                 if isinstance(item, str | int) and str(item).strip().lstrip("#"))


def prepare(text: str) -> Prepared:
    text, private = strip_private(text)
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    text = text[len(bom):]
    lead, whole, tail = envelope(text)
    lead = bom + lead
    match = FRONT_MATTER.match(text)
    if match is None:
        return Prepared(body=whole, text=whole, lead=lead, tail=tail, private_regions=private)
    body = text[match.end():].strip()
    plain = Prepared(body=body, text=whole, lead=lead, tail=tail, private_regions=private)
    try:
        meta = yaml.safe_load(match.group(1) or "")
    except (yaml.YAMLError, RecursionError):  # deeply nested flow collections too
        return replace(plain, warnings=("front matter is not YAML; ignored",))
    if meta is None:
        return plain
    if not isinstance(meta, dict):
        return replace(plain, warnings=("front matter is not a mapping; ignored",))
    exported = _exported(meta)
    if exported is None:
        return replace(plain, tags=listed_tags(meta.get("tags")))
    body_lead, _, body_tail = envelope(text[match.end():])
    return replace(plain, tags=listed_tags(meta.get("tags")), exported=exported,
                   lead=body_lead, tail=body_tail)


def _exported(meta: dict[Any, Any]) -> Exported | None:
    marker = meta.get("grove-export")
    if marker not in (1, 2) or not isinstance(meta.get("kind"), str):
        return None
    notebook: tuple[str, ...] | None = None
    if marker == 1:
        path = meta.get("notebook") or []
        if not isinstance(path, list) or not all(isinstance(name, str) for name in path):
            return None
        notebook = tuple(path)
    task = meta.get("task_id")
    return Exported(kind=meta["kind"], notebook=notebook,
                    task_id=str(task) if isinstance(task, str | int) and str(task) else None)
