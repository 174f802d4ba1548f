"""Where a link is written (`links.parsing.extract`): for any text, every wiki-link's
span is exactly its `[[…]]` markup and every Markdown link's span its address (or
empty, for a reference link), whatever surrounds them — code spans, escapes, quotes,
lists, task boxes, tables, line breaks of every kind. Random texts from a seeded
generator, so a failure names its case."""

from __future__ import annotations

import random
from urllib.parse import unquote

import pytest

from links.parsing import extract

PIECES = ["[[Plan]]", "[[Plan|the plan]]", "[[a/Plan#Part 2]]", "`[[Plan]]`", "\\[[Plan]]",
          "[Plan.md](Plan.md)", "[x](<Caf%C3%A9 x.md>)", "[y][p]", "[p]: Plan.md", "- [ ] ",
          "- [x] ", "> ", "| a | [[b]] |", "|---|---|", "# ", "  ", "\t", "\n", "\r\n", "\r",
          "word", "Plan", "[[", "]]", "](", "&amp;", "**", "_", "1. ", "```", "\x00", "é🌱"]


@pytest.mark.parametrize("seed", range(400))
def test_every_span_is_the_link_it_names(seed: int):
    rng = random.Random(seed)  # noqa: S311 - a seeded case, not a secret
    text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 40)))
    for found in extract(text):
        written = text[found.start:found.end]
        if found.written.form == "wiki":
            assert written.startswith("[[") and written.endswith("]]"), (text, written)
            assert found.written.target.strip() in written.replace("\x00", "\ufffd") \
                or found.written.target in written, (text, written)
        elif written:
            assert unquote(written.strip("<>")) == found.written.target + (
                "#" + found.written.heading if found.written.heading else "") or \
                unquote(written).startswith(found.written.target), (text, written)
