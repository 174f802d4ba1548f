"""A note's leading YAML front matter (an Obsidian note's properties): where it ends,
what it holds, and how the one markdown parser (`rendering.markdown_parser`) reads it —
as a block of its own, drawn as the properties it is, never as a rule over a heading.

One rule for every reader: ingest (its tags), the title (never the front matter), the
Markdown export (what it adds) and the page. A block opens on the first line with
`---` and needs its closing `---`: an unclosed one is ordinary markdown (a rule)."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.token import Token

FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def front_matter_end(text: str) -> int:
    """Where a leading front matter block ends (0: none)."""
    match = FRONT_MATTER.match(text)
    return match.end() if match else 0


def front_matter_lines(text: str) -> int:
    """How many lines the leading front matter block takes (0: none)."""
    match = FRONT_MATTER.match(text)
    if match is None:
        return 0
    block = match.group(0)
    return block.count("\n") + (0 if block.endswith("\n") else 1)


def _block(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    if start_line != 0 or state.parentType != "root":
        return False
    match = FRONT_MATTER.match(state.src)
    if match is None:
        return False
    if silent:
        return True
    after = min(front_matter_lines(state.src), end_line)
    token = state.push("front_matter", "", 0)
    token.content, token.map, token.block = match.group(1) or "", [0, after], True
    state.line = after
    return True


def _draw(renderer: Any, tokens: Sequence[Token], index: int, options: Any, env: Any) -> str:
    return (f'<pre><code class="front-matter">{html.escape(tokens[index].content)}'
            "</code></pre>\n")


def front_matter_plugin(md: MarkdownIt) -> None:
    """The parser reads a note's front matter as one `front_matter` block, drawn as
    preformatted properties (escaped; nh3 checks the page after)."""
    md.block.ruler.before("table", "front_matter", _block,
                          {"alt": ["paragraph", "reference", "blockquote", "list"]})
    md.add_render_rule("front_matter", _draw)
