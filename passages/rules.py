"""What a note's passages are: which notes are cut, what identifies a passage, what is
embedded (docs/architecture.md, "Documents and passages")."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from passages.chunking import CHUNK_CHARS, cut

# The kind whose notes are documents; every other kind is a memory record, one passage.
DOCUMENT_KIND = "note"
TRAIL_SEPARATOR = " › "


@dataclass(frozen=True)
class Piece:
    """A passage as the rules make it from a note's text."""

    position: int  # 1-based
    start: int
    end: int
    headings: tuple[str, ...]
    text: str

    @property
    def trail(self) -> str:
        return TRAIL_SEPARATOR.join(self.headings)

    @property
    def hash(self) -> str:
        return passage_hash(self.trail, self.text)

    @property
    def embedded(self) -> str:
        return embedded_text(self.trail, self.text)


def passage_hash(trail: str, text: str) -> str:
    return hashlib.sha256(f"{trail}\n\n{text}".encode()).hexdigest()


def embedded_text(trail: str, text: str) -> str:
    """What the model reads for a passage: the heading trail as a line above the text; a
    passage without one reads its text alone — exactly what a note's vector was made
    from before passages, so those vectors carry over (migration `passages 0001`)."""
    return f"{trail}\n\n{text}" if trail else text


def pieces(kind: str, content: str) -> list[Piece]:
    """A note's passages: a memory record, or any text of at most CHUNK_CHARS
    characters, is one passage (its whole text); a longer document is cut
    (`chunking.cut`). `content` is stored trimmed, so one passage spans all of it."""
    if kind != DOCUMENT_KIND or len(content) <= CHUNK_CHARS:
        return [Piece(position=1, start=0, end=len(content), headings=(), text=content)]
    return [Piece(position=span.index + 1, start=span.start, end=span.end,
                  headings=span.headings, text=content[span.start:span.end])
            for span in cut(content)]
