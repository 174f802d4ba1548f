"""Task lists: the boxes `render_markdown` draws, found in the note's source, and one of
them ticked or cleared (the note page's checkboxes, `notebooks.services.checklists`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from markdown_it.renderer import RendererHTML

from grove.interfaces.rendering import NEWLINE, markdown_parser

CHECKBOX = '<input class="task-list-item-checkbox"'  # what the tasklists plugin emits
_BOX = re.compile(r"\[[ xX]\]")


@dataclass(frozen=True)
class TaskItem:
    """One task-list box: where its "[ ]" / "[x]" sits in the text, and its item's text
    (plain: what a label may say)."""

    offset: int  # of the "[" in the markdown text
    done: bool
    text: str


def task_items(markdown: str) -> list[TaskItem]:
    """The task-list boxes `render_markdown` draws for this text, in document order (the
    order of the rendered checkboxes), each located in the source.

    Found with the same parser and plugin as the rendering, so the n-th box here is the
    n-th checkbox on the page. A box is the start of a list item's first paragraph; the
    paragraph's first source line holds it, and nothing before it on that line can be a
    "[" (only indentation and container marks: ">", "-", "*", "+", "1." or "1)")."""
    parser, env = markdown_parser(), dict[str, Any]()
    renderer = parser.renderer
    assert isinstance(renderer, RendererHTML)
    tokens = parser.parse(markdown, env)
    starts = [0] + [m.end() for m in NEWLINE.finditer(markdown)]
    items: list[TaskItem] = []
    for token in tokens:
        if token.type != "inline" or not token.children or token.map is None:
            continue
        first = token.children[0]
        if first.type != "html_inline" or not first.content.startswith(CHECKBOX):
            continue
        line = token.map[0]
        begin = starts[line] if line < len(starts) else len(markdown)
        end = starts[line + 1] if line + 1 < len(starts) else len(markdown)
        offset = markdown.find("[", begin, end)
        if offset < 0 or not _BOX.match(markdown, offset):
            return []  # not where it must be: offer no box rather than a wrong one
        items.append(TaskItem(offset=offset, done=markdown[offset + 1] != " ",
                              text=" ".join(renderer.renderInlineAsText(
                                  token.children[1:], parser.options, env).split())))
    return items


def with_task_set(markdown: str, index: int, done: bool) -> str | None:
    """The text with its `index`-th task-list box ticked (`done`) or cleared — or None
    when the text has no such box. Only that one character changes."""
    items = task_items(markdown)
    if not 0 <= index < len(items):
        return None
    item = items[index]
    if item.done == done:
        return markdown
    at = item.offset + 1
    changed = markdown[:at] + ("x" if done else " ") + markdown[at + 1:]
    after = task_items(changed)
    if len(after) != len(items) or after[index].done != done:
        return None  # the change would not be that box alone (cannot happen; never guess)
    return changed
