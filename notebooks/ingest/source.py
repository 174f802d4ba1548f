"""One file's text made ready to chunk (issue 22): private regions out, front matter read.

* `<private>…</private>` regions (any case, across lines) are removed first — before
  the text is parsed, stored, embedded, logged or shown to a model. An opening tag with
  no closing one hides everything after it: a forgotten `</private>` must not publish
  the rest of the file.
* YAML front matter (`---` lines at the top) is read with PyYAML's safe loader: its
  `tags` (a list, or words separated by commas or spaces) become the notes' tags. Front
  matter that is not YAML, or not a mapping, is dropped from the text with a warning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


@dataclass(frozen=True)
class Exported:
    """A file Grove's Markdown export wrote (`grove-export` in its front matter): kept
    whole, as the one note it was, with its kind, in its notebook path."""

    kind: str
    notebook: tuple[str, ...]  # names from the top of the export; () = Personal
    task_id: str | None = None  # a handoff's task


@dataclass(frozen=True)
class Prepared:
    body: str
    tags: tuple[str, ...] = ()
    exported: Exported | None = None
    private_regions: int = 0  # how many were removed
    warnings: tuple[str, ...] = field(default=())


def strip_private(text: str) -> tuple[str, int]:
    """`text` without its private regions, and how many there were."""
    return _PRIVATE.subn("", text)


def _tags(value: Any) -> tuple[str, ...]:
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
    text = text.lstrip("\ufeff")
    match = _FRONT_MATTER.match(text)
    if match is None:
        return Prepared(body=text.strip(), private_regions=private)
    body = text[match.end():].strip()
    try:
        meta = yaml.safe_load(match.group(1) or "")
    except (yaml.YAMLError, RecursionError):  # deeply nested flow collections too
        return Prepared(body=body, private_regions=private,
                        warnings=("front matter is not YAML; ignored",))
    if meta is None:
        return Prepared(body=body, private_regions=private)
    if not isinstance(meta, dict):
        return Prepared(body=body, private_regions=private,
                        warnings=("front matter is not a mapping; ignored",))
    return Prepared(body=body, tags=_tags(meta.get("tags")), private_regions=private,
                    exported=_exported(meta))


def _exported(meta: dict[Any, Any]) -> Exported | None:
    if meta.get("grove-export") != 1 or not isinstance(meta.get("kind"), str):
        return None
    path = meta.get("notebook") or []
    if not isinstance(path, list) or not all(isinstance(name, str) for name in path):
        return None
    task = meta.get("task_id")
    return Exported(kind=meta["kind"], notebook=tuple(path),
                    task_id=str(task) if isinstance(task, str | int) and str(task) else None)
