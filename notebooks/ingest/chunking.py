"""A markdown file cut into chunks of about CHUNK_CHARS characters (issue 22).

Where to cut is decided on the document's blocks as markdown-it-py parses them
(CommonMark: a `#` inside a code fence is not a heading, a list is one block), in this
order of preference: before a heading, between blocks, between sentences, between
words. Each chunk after the first of its section starts with the last ~OVERLAP_CHARS
characters of the one before (from a word boundary), so a sentence cut in two is whole
in one of them; a chunk that starts a section starts clean. A chunk carries its heading
trail — the headings it sits under, outermost first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

CHUNK_CHARS = 1200
OVERLAP_CHARS = 150
# A heading ends the chunk before it once the chunk holds at least this much; smaller
# sections share a chunk with the next.
HEADING_BREAK_CHARS = CHUNK_CHARS // 3

_PARSER = MarkdownIt("commonmark").enable("table")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


@dataclass(frozen=True)
class Chunk:
    index: int  # 0-based, in file order
    text: str
    headings: tuple[str, ...]  # the heading trail, outermost first


@dataclass(frozen=True)
class _Block:
    text: str
    headings: tuple[str, ...]
    heading: bool  # the block is a heading: it opens a section


def _blocks(text: str) -> list[_Block]:
    lines = text.splitlines()
    tokens = _PARSER.parse(text)
    trail: list[tuple[int, str]] = []  # (level, title)
    blocks: list[_Block] = []
    for position, token in enumerate(tokens):
        if token.level != 0 or token.nesting == -1 or token.map is None:
            continue
        start, end = token.map
        source = "\n".join(lines[start:end]).strip()
        if not source:
            continue
        if token.type == "heading_open":
            level = int(token.tag[1])
            title = tokens[position + 1].content.strip()
            trail = [(lvl, t) for lvl, t in trail if lvl < level] + [(level, title)]
            blocks.append(_Block(source, tuple(t for _, t in trail), heading=True))
        else:
            blocks.append(_Block(source, tuple(t for _, t in trail), heading=False))
    return blocks


def _pack(parts: list[str], limit: int) -> list[str]:
    """`parts` (each at most `limit` long) joined with spaces into as few runs of at
    most `limit` characters as keep them whole and in order."""
    out: list[str] = []
    current = ""
    for part in parts:
        if current and len(current) + 1 + len(part) > limit:
            out.append(current)
            current = part
        else:
            current = f"{current} {part}" if current else part
    if current:
        out.append(current)
    return out


def _pieces(text: str, limit: int) -> list[str]:
    """A block longer than `limit` cut between sentences, else between words, else
    (a single longer word) anywhere."""
    if len(text) <= limit:
        return [text]
    parts: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        if len(sentence) <= limit:
            parts.append(sentence)
            continue
        words = [word[i:i + limit] for word in sentence.split()
                 for i in range(0, len(word), limit)]
        parts.extend(_pack(words, limit))
    return _pack(parts, limit)


def _tail(text: str, size: int) -> str:
    """The last ~`size` characters of `text`, from the start of a word."""
    if len(text) <= size:
        return text
    cut = text[-size:]
    space = cut.find(" ")
    newline = cut.find("\n")
    starts = [i for i in (space, newline) if i >= 0]
    return cut[min(starts) + 1:] if starts else cut


def chunk_markdown(text: str, *, size: int = CHUNK_CHARS,
                   overlap: int = OVERLAP_CHARS) -> list[Chunk]:
    """`text` (markdown or plain text, front matter and private regions already gone)
    as chunks of at most `size` characters, overlap included."""
    chunks: list[Chunk] = []
    parts: list[str] = []
    headings: tuple[str, ...] = ()
    carried = ""  # the overlap the current chunk starts with

    def used() -> int:
        return len("\n\n".join(([carried] if carried else []) + parts))

    def flush(*, carry: bool) -> None:
        nonlocal parts, carried
        if not parts:
            return
        body = "\n\n".join(([carried] if carried else []) + parts)
        chunks.append(Chunk(index=len(chunks), text=body, headings=headings))
        carried = _tail(body, overlap) if carry and overlap else ""
        parts = []

    for block in _blocks(text):
        if block.heading and used() >= HEADING_BREAK_CHARS:
            flush(carry=False)
        room = size - (overlap + 2 if overlap else 0)
        for piece in _pieces(block.text, room):
            if parts and used() + 2 + len(piece) > size:
                flush(carry=not block.heading)
            if not parts:
                headings = block.headings
                if carried and len(carried) + 2 + len(piece) > size:
                    carried = ""
            parts.append(piece)
    flush(carry=False)
    return chunks
