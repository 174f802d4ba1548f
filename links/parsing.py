"""What a note's text says about links: the links it writes, in document order with
their offsets, and the names it answers to (docs/architecture.md, "Links between
notes"). Pure functions of the text; the syntax is the one parser's
(`grove.interfaces.wikilinks`), so what is stored as a link is what the page draws as
one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

import yaml

from grove.interfaces.front_matter import FRONT_MATTER
from grove.interfaces.rendering import markdown_parser, note_title
from grove.interfaces.wikilinks import Written, markdown_target

NAME_MAX_CHARS = 300  # a longer title, alias or target names nothing
ALIASES_MAX = 50
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # as markdown-it splits lines
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Found:
    """A link written in a note: its place in the text (`start`..`end`: the `[[…]]`
    markup, or a Markdown link's address) and what it says."""

    position: int  # 1-based, in document order
    start: int
    end: int
    written: Written


def might_link(content: str) -> bool:
    """Cheap test before parsing: can the text hold a link at all?"""
    return "[[" in content or ".md" in content.lower()


def _line_starts(content: str) -> list[int]:
    return [0, *(match.end() for match in _LINE_BREAK.finditer(content)), len(content)]


def extract(content: str) -> list[Found]:
    """Every wiki-link and every Markdown link to a relative `.md` path in `content`,
    in document order (a wiki-link inside a Markdown link's text is that link's text,
    not a link of its own)."""
    if not might_link(content):
        return []
    starts = _line_starts(content)
    found: list[Found] = []
    for block in markdown_parser().parse(content):
        if block.type != "inline" or not block.children or not block.map:
            continue
        first, last = block.map
        cursor = starts[min(first, len(starts) - 1)]
        stop = starts[min(last, len(starts) - 1)]
        depth, text, opened = 0, "", block
        for token in block.children:
            if token.type == "wikilink" and not depth:
                at = content.find(token.markup, cursor, stop)
                at, width = (cursor, 0) if at < 0 else (at, len(token.markup))
                cursor = at + width
                found.append(Found(len(found) + 1, at, cursor, token.meta["written"]))
            elif token.type == "link_open":
                depth, text, opened = depth + 1, "", token
            elif token.type == "link_close" and depth:
                depth -= 1
                href = str(opened.attrs.get("href", ""))
                written = markdown_target(href, text)
                if written is not None:
                    at, width = _address(content, href, cursor, stop)
                    cursor = at + width
                    found.append(Found(len(found) + 1, at, cursor, written))
            elif depth and token.type in ("text", "code_inline", "wikilink"):
                text += (token.meta["written"].shown if token.type == "wikilink"
                         else token.content)
    return found


def _address(content: str, href: str, cursor: int, stop: int) -> tuple[int, int]:
    """Where a Markdown link's address is written (the parser hands it out
    normalised: percent-encoded, so the written form is looked for in both)."""
    for form in (href, unquote(href)):
        at = content.find(form, cursor, stop)
        if at >= 0:
            return at, len(form)
    return cursor, 0


def names(content: str, source_path: str = "") -> dict[str, str]:
    """The names a note answers to, as written: its title (the one title rule), its
    file's name without `.md` (a note ingested from a file) and its front matter's
    `aliases` — name → kind (`title` | `file` | `alias`), the first kind kept."""
    out: dict[str, str] = {}
    title = note_title(content, NAME_MAX_CHARS + 1, path=source_path)
    if title and len(title) <= NAME_MAX_CHARS:
        out[title] = "title"
    if source_path:
        stem = source_path.rsplit("/", 1)[-1]
        stem = stem[:-3] if stem.lower().endswith(".md") else stem
        if stem:
            out.setdefault(stem, "file")
    for alias in aliases(content):
        out.setdefault(alias, "alias")
    return out


def aliases(content: str) -> list[str]:
    """The front matter's `aliases` (or `alias`): a list of names or one name."""
    match = FRONT_MATTER.match(content)
    if match is None or "alias" not in (match.group(1) or ""):
        return []
    try:
        meta = yaml.safe_load(match.group(1) or "")
    except (yaml.YAMLError, RecursionError):
        return []
    if not isinstance(meta, dict):
        return []
    listed = meta.get("aliases", meta.get("alias"))
    items = listed if isinstance(listed, list) else [listed]
    out = [_SPACES.sub(" ", str(item)).strip() for item in items[:ALIASES_MAX]
           if isinstance(item, str | int | float) and not isinstance(item, bool)]
    return [item for item in out if item and len(item) <= NAME_MAX_CHARS]
