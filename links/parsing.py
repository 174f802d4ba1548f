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
from markdown_it.token import Token

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
    not a link of its own), each with where it is written (`_Placer`)."""
    if not might_link(content):
        return []
    place = _Placer(content)
    found: list[Found] = []
    for block in markdown_parser().parse(content):
        if block.type != "inline" or not block.children or not block.map:
            continue
        where = place.block(block)
        depth, text, opened = 0, "", block
        for token in block.children:
            if token.type == "wikilink" and not depth:
                at, end = where.span(token.meta.get("span"), token.markup)
                found.append(Found(len(found) + 1, at, end, token.meta["written"]))
            elif token.type == "link_open":
                depth, text, opened = depth + 1, "", token
            elif token.type == "link_close" and depth:
                depth -= 1
                href = str(opened.attrs.get("href", ""))
                written = markdown_target(href, text)
                if written is not None:
                    at, end = where.address((opened.meta or {}).get("span"), href)
                    found.append(Found(len(found) + 1, at, end, written))
            elif depth and token.type in ("text", "code_inline", "wikilink"):
                text += (token.meta["written"].shown if token.type == "wikilink"
                         else token.content)
    return found


class _Placer:
    """Where a link the parser read is written in the note's text. The parser says where
    in an inline block's source (`meta["span"]`); the source is the block's lines with
    what the parser took off each (indentation, `>` and list markers, `\r`), so its
    characters are found in the text in order, from where the last block ended. A
    Markdown link's place is its address's (`[text](address)`): found after the `](`,
    as written (`<…>` or bare), and only if it reads as the address the parser took — a
    reference link's (`[text][ref]`) is elsewhere, and has none (an empty span)."""

    def __init__(self, content: str) -> None:
        self.content = content
        self.starts = _line_starts(content)
        self.floor = 0  # where the previous block ended: blocks on one line come in order

    def block(self, block: Token) -> _Block:
        first, last = block.map or (0, 0)
        lo = max(self.starts[min(first, len(self.starts) - 1)], self.floor)
        hi = self.starts[min(last, len(self.starts) - 1)]
        # The source the parser read (a plugin may have changed the content since:
        # task lists take their `[ ]` off it).
        source = next((t.meta["source"] for t in block.children or []
                       if t.meta and "source" in t.meta), block.content)
        positions = _aligned(source, self.content, lo, hi)
        if positions is not None:
            self.floor = positions[-1]
        return _Block(self.content, positions, lo)


@dataclass
class _Block:
    content: str
    positions: list[int] | None  # each source character's offset in the text, and the end
    start: int

    def span(self, span: tuple[int, int] | None, markup: str) -> tuple[int, int]:
        if self.positions is None or span is None or span[1] >= len(self.positions):
            at = self.content.find(markup, self.start)  # unplaced: the first such text
            return (at, at + len(markup)) if at >= 0 else (self.start, self.start)
        return self.positions[span[0]], self.positions[span[1] - 1] + 1

    def address(self, span: tuple[int, int] | None, href: str) -> tuple[int, int]:
        if self.positions is None or span is None or span[1] >= len(self.positions):
            return self.start, self.start
        lo, hi = self.positions[span[0]], self.positions[span[1] - 1] + 1
        source = self.content[lo:hi]
        opening = source.find("](")
        if opening < 0:
            return lo, lo  # a reference link: its address is in its definition
        a = opening + 2
        while a < len(source) and source[a] in " \t\r\n":
            a += 1
        if source.startswith("<", a):
            b = source.find(">", a + 1)
            a += 1
        else:
            b, depth = a, 0
            while b < len(source) and not source[b].isspace() and (
                    source[b] != ")" or depth):
                depth += {"(": 1, ")": -1}.get(source[b], 0)
                b += 1
        if b < a or unquote(source[a:b]) != unquote(href):
            return lo, lo  # written with entities or escapes: not rewritten in place
        return lo + a, lo + b


def _aligned(source: str, content: str, lo: int, hi: int) -> list[int] | None:
    """The offsets in `content[lo:hi]` of `source`'s characters in order (a NUL reads
    as U+FFFD, as the parser reads it), and the offset after the last; None if they are
    not all there."""
    out = []
    at = lo
    for char in source:
        while at < hi and content[at] != char and not (char == "\ufffd"
                                                       and content[at] == "\0"):
            at += 1
        if at >= hi:
            return None
        out.append(at)
        at += 1
    out.append(at)
    return out


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
