"""A link written anew for a renamed note (issue 38 item 3): the same link — its
folders, heading and label as written — naming the note's new title. Pure functions of
the text."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

# What a title cannot hold to be written inside `[[…]]` (or as a file name in a path).
_UNWRITABLE = ("[", "]", "|", "#", "/", "\\", "\n", "\r")


def writable(title: str) -> bool:
    return bool(title.strip()) and not any(mark in title for mark in _UNWRITABLE)


def wiki(target: str, heading: str, label: str, title: str) -> str:
    """`[[folders/Title#heading|label]]` with the last part of `target` made `title`."""
    folders, slash, _ = target.rpartition("/")
    inner = f"{folders}{slash}{title}" + (f"#{heading}" if heading else "")
    return f"[[{inner}{'|' + label if label else ''}]]"


def address(written: str, title: str) -> str:
    """A Markdown link's address as written (`../a/Old%20name.md#part`) naming the file
    `title`.md instead, encoded as such addresses are."""
    path, hash_, fragment = written.partition("#")
    folders, slash, _ = path.rpartition("/")
    return f"{folders}{slash}{quote(title)}.md{hash_}{fragment}"


def moved_address(written: str, path: str) -> str:
    """A Markdown link's address as written, leading along `path` (decoded, from the
    linking note's folder) instead — its `#fragment` kept."""
    _, hash_, fragment = written.partition("#")
    return f"{quote(path)}{hash_}{fragment}"


def rewritten(content: str, spans: Sequence[tuple[int, int, str]]) -> str:
    """`content` with each (start, end, text) span replaced (spans do not overlap)."""
    out = content
    for start, end, text in sorted(spans, key=lambda span: span[0], reverse=True):
        out = out[:start] + text + out[end:]
    return out
