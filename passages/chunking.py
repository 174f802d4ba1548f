"""A note's markdown cut into passages: spans of its text of about CHUNK_CHARS characters.

The rules are those ingest cut files into before issue 37 (issue 22's chunker, gone
now that a file is one note); what differs is the answer. That chunker re-joined a
file's blocks into new text; this one returns offsets into the text as given, so
`text[span.start:span.end]` is the passage, character for character, and an excerpt or
a highlight can point back into the note.

Where to cut is decided on the document's blocks as markdown-it-py parses them, once
(CommonMark with tables: a `#` inside a code fence is not a heading, a list is one
block), in this order of preference: before a heading (once the passage holds at least
HEADING_BREAK_CHARS; smaller sections share a passage with the next), between blocks,
between sentences, between words, and anywhere inside a single word longer than a
passage. Each passage after the first of its section starts with the last
~OVERLAP_CHARS characters of the one before, from the start of a word, so a sentence
cut in two is whole in one of them; a passage that starts a section starts clean. A
passage carries its heading trail — the headings its first own block sits under,
outermost first.

Offsets come from markdown-it's line ranges (`token.map`) and a table of where each
line of the original string starts, never from searching for text, so `\\r\\n` line
endings and repeated paragraphs cannot shift them. YAML front matter at the very start
(a `---` line, lines, a `---` or `...` line) is one block with no trail; it is never
read as a setext heading or a thematic break. Lines the parser makes no token for (link
reference definitions) are blocks too: no character of the text is left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from markdown_it import MarkdownIt

CHUNK_CHARS = 1200
OVERLAP_CHARS = 150
# A heading ends the passage before it once the passage holds at least this much;
# smaller sections share a passage with the next. (With another `size`, the same
# third of it.)
HEADING_BREAK_CHARS = CHUNK_CHARS // 3

# Only the block structure and the headings' source are needed, so the core "inline"
# rule (emphasis, links, ...) is off: a heading's inline token keeps its `content`, the
# raw title, which is what the trail shows. Parsing is most of the cost of a cut.
_PARSER = MarkdownIt("commonmark").enable("table").disable("inline")
# Line breaks as markdown-it counts lines (its `normalize` rule). Not `str.splitlines`:
# that also breaks at \x0b, \x0c, \x1c-\x1e, \x85, \u2028 and \u2029, which markdown-it
# reads as ordinary characters, and the two line numberings would drift apart.
_LINE_BREAK = re.compile(r"\r\n?|\n")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
_WORD = re.compile(r"\S+")
_WORD_START = re.compile(r"(?<=\s)\S")
_FRONT_MATTER_OPEN = "---"
_FRONT_MATTER_CLOSE = ("---", "...")


@dataclass(frozen=True)
class Span:
    index: int  # 0-based, in document order
    start: int  # offset into the text (a str index), inclusive
    end: int  # exclusive: text[start:end] is the passage, exactly
    headings: tuple[str, ...]  # the heading trail, outermost first


@dataclass(frozen=True)
class _Block:
    start: int  # trimmed: text[start] and text[end - 1] are not whitespace
    end: int
    headings: tuple[str, ...]
    heading: bool  # the block is a heading: it opens a section


def _line_starts(text: str) -> list[int]:
    """Where each line of `text` starts, as markdown-it numbers lines, and then
    `len(text)`: line `n` is `text[starts[n]:starts[n + 1]]`, its line break included."""
    starts = [0]
    starts.extend(match.end() for match in _LINE_BREAK.finditer(text))
    if starts[-1] != len(text):
        starts.append(len(text))
    return starts


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    """`start:end` without the whitespace at either end; None if nothing else is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _front_matter_lines(text: str, starts: list[int]) -> int:
    """How many lines of YAML front matter `text` opens with (0 if none)."""
    lines = len(starts) - 1

    def line(n: int) -> str:
        return text[starts[n]:starts[n + 1]].rstrip()

    if not lines or line(0).removeprefix("\ufeff") != _FRONT_MATTER_OPEN:
        return 0
    for n in range(1, lines):
        if line(n) in _FRONT_MATTER_CLOSE:
            return n + 1
    return 0  # never closed: markdown (a thematic break), not front matter


def _blocks(text: str) -> list[_Block]:
    starts = _line_starts(text)
    blocks: list[_Block] = []
    trail: list[tuple[int, str]] = []  # (level, title)
    done = 0  # lines before this one are in a block already (or blank)

    def add(first: int, last: int, *, heading: bool = False) -> None:
        """Lines `first:last` as a block under the current trail, unless blank."""
        span = _trimmed(text, starts[first], starts[last])
        if span is not None:
            blocks.append(_Block(*span, tuple(title for _, title in trail), heading))

    front = _front_matter_lines(text, starts)
    if front:
        add(0, front)
        done = front
    # The body is parsed on its own, so front matter cannot read as markdown; its line
    # numbers are then `front` behind the text's.
    tokens = _PARSER.parse(text[starts[front]:])
    for position, token in enumerate(tokens):
        if token.level != 0 or token.nesting == -1 or token.map is None:
            continue
        first, last = token.map[0] + front, token.map[1] + front
        if first > done:
            add(done, first)  # lines no token claims: link reference definitions
        first = max(first, done)
        if token.type == "heading_open":
            level = int(token.tag[1])
            title = tokens[position + 1].content.strip()
            trail = [(lvl, t) for lvl, t in trail if lvl < level] + [(level, title)]
            add(first, last, heading=True)
        else:
            add(first, last)
        done = max(done, last)
    add(done, len(starts) - 1)
    return blocks


def _pack(parts: Iterator[tuple[int, int]], limit: int) -> Iterator[tuple[int, int]]:
    """Consecutive `parts` (each at most `limit` long) merged into as few runs of at
    most `limit` characters, gaps included, as keep them whole and in order."""
    run: tuple[int, int] | None = None
    for start, end in parts:
        if run is None:
            run = (start, end)
        elif end - run[0] > limit:
            yield run
            run = (start, end)
        else:
            run = (run[0], end)
    if run is not None:
        yield run


def _words(text: str, start: int, end: int, limit: int) -> Iterator[tuple[int, int]]:
    """The words of `start:end`, a word longer than `limit` cut every `limit`."""
    for match in _WORD.finditer(text, start, end):
        for at in range(match.start(), match.end(), limit):
            yield at, min(at + limit, match.end())


def _sentences(text: str, block: _Block, limit: int) -> Iterator[tuple[int, int]]:
    """The sentences of a block; a sentence longer than `limit` as runs of its words."""
    start = block.start
    ends = [(m.start(), m.end()) for m in _SENTENCE_END.finditer(text, block.start, block.end)]
    for end, following in [*ends, (block.end, block.end)]:
        if end - start <= limit:
            yield start, end
        else:
            yield from _pack(_words(text, start, end, limit), limit)
        start = following


def _pieces(text: str, block: _Block, limit: int) -> Iterator[tuple[int, int]]:
    """A block cut, if longer than `limit`, between sentences, else between words, else
    (a single longer word) anywhere."""
    if block.end - block.start <= limit:
        yield block.start, block.end
    else:
        yield from _pack(_sentences(text, block, limit), limit)


def _carried(text: str, before: Span, lowest: int) -> int | None:
    """Where the overlap taken from `before` begins: the first word start in its last
    characters at or after `lowest`; None if no word starts there."""
    match = _WORD_START.search(text, max(lowest, before.start + 1), before.end)
    return match.start() if match else None


def cut(text: str, *, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[Span]:
    """`text` (a note's markdown, or plain text) as passages of at most `size`
    characters, overlap included, in order. A text of at most `size` characters, once
    trimmed, is one passage; an empty or blank one has none."""
    if size < 1 or overlap < 0:
        raise ValueError(f"cut needs size >= 1 and overlap >= 0, not {size} and {overlap}")
    trimmed = _trimmed(text, 0, len(text))
    if trimmed is None:
        return []
    blocks = _blocks(text)
    if trimmed[1] - trimmed[0] <= size:
        return [Span(index=0, start=trimmed[0], end=trimmed[1], headings=blocks[0].headings)]

    heading_break = HEADING_BREAK_CHARS * size // CHUNK_CHARS
    # Pieces leave room for the overlap (and a blank line) in front of them; a large
    # overlap against a small size must still leave pieces of some length.
    room = max(size - overlap - 2, (size + 1) // 2) if overlap else size
    spans: list[Span] = []
    start: int | None = None  # where the current passage begins, its overlap included
    end = 0
    headings: tuple[str, ...] = ()

    def close() -> Span:
        assert start is not None  # only a passage that holds a piece is closed
        span = Span(index=len(spans), start=start, end=end, headings=headings)
        spans.append(span)
        return span

    for block in blocks:
        if block.heading and start is not None and end - start >= heading_break:
            close()
            start = None
        for piece_start, piece_end in _pieces(text, block, room):
            if start is None:
                start, end, headings = piece_start, piece_end, block.headings
            elif piece_end - start <= size:
                end = piece_end
            else:
                before = close()
                begin = None
                if overlap and not block.heading:
                    begin = _carried(text, before, max(before.end - overlap, piece_end - size))
                start = piece_start if begin is None else begin
                end, headings = piece_end, block.headings
    if start is not None:
        close()
    return spans
