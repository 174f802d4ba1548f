"""Partial edits of a note's text (`edit_note`, `PATCH /v1/notes/{id}` with `edit`): the
rules alone — what each operation does to a text, and why one is refused. The service
(`notebooks.services.edit`) applies them to the note as it is, as one revision.

* `append` / `prepend`: `text` as a block of its own at the end / the start (a blank
  line between; a prepend goes after the note's front matter, which stays first).
* `replace_section`: the body under the heading `heading` — up to the next heading of
  the same or a higher level — becomes `text`; the heading line stays. `heading` is the
  heading's text (`Status`), optionally with its level (`## Status`); matched ignoring
  case and runs of spaces. Headings are read by the one CommonMark parser's rules: a `#`
  line inside a code fence is not one.
* `replace_text`: the one place `find` occurs, exactly, becomes `text` (empty: deleted).

An operation that cannot say where it applies is refused, saying why: the heading or
text is absent (`edit_target_not_found`, with the headings there are) or occurs more than
once (`edit_target_ambiguous`, with the lines where). Nothing is guessed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt

from grove.interfaces.front_matter import front_matter_end
from grove.kernel.errors import Conflict, Invalid

OPS = ("append", "prepend", "replace_section", "replace_text")
EDIT_TEXT_MAX_CHARS = 200_000
FIND_MAX_CHARS = 10_000
HEADING_MAX_CHARS = 300
SHOWN = 20  # headings or lines named in a refusal

_PARSER = MarkdownIt("commonmark").enable("table").disable("inline")
_LINE_BREAK = re.compile(r"\r\n?|\n")
_SPACES = re.compile(r"\s+")
_LEVEL = re.compile(r"^(#{1,6})\s+")


@dataclass(frozen=True)
class Edit:
    op: str
    text: str = ""
    heading: str | None = None
    find: str | None = None

    def to_json(self) -> dict[str, Any]:
        """As the operation's arguments record it (a replay compares it)."""
        return {key: value for key, value in (("op", self.op), ("text", self.text),
                                              ("heading", self.heading), ("find", self.find))
                if value is not None}


def clean_edit(value: Any) -> Edit:
    """An edit as a request gives it (`op`, `text`, `heading`, `find`), checked."""
    if isinstance(value, Edit):
        value = value.to_json()
    if not isinstance(value, dict):
        raise Invalid("edit must be an object with op and text.", code="invalid_edit")
    op, text = value.get("op"), value.get("text", "")
    heading, find = value.get("heading"), value.get("find")
    if op not in OPS:
        raise Invalid(f"edit.op must be one of: {', '.join(OPS)}.", code="invalid_edit")
    if not isinstance(text, str) or len(text) > EDIT_TEXT_MAX_CHARS:
        raise Invalid(f"edit.text must be text of at most {EDIT_TEXT_MAX_CHARS:,} "
                      "characters.", code="invalid_edit")
    if op in ("append", "prepend") and not text.strip():
        raise Invalid(f"{op} needs text.", code="invalid_edit")
    needs = {"replace_section": "heading", "replace_text": "find"}.get(op)
    for name, given in (("heading", heading), ("find", find)):
        if name != needs and given is not None:
            raise Invalid(f"edit.{name} belongs to "
                          f"{'replace_section' if name == 'heading' else 'replace_text'}.",
                          code="invalid_edit")
    if needs == "heading" and (not isinstance(heading, str) or not heading.strip()
                               or len(heading) > HEADING_MAX_CHARS):
        raise Invalid(f"replace_section needs heading: a heading's text (at most "
                      f"{HEADING_MAX_CHARS} characters).", code="invalid_edit")
    if needs == "find" and (not isinstance(find, str) or not find
                            or len(find) > FIND_MAX_CHARS):
        raise Invalid(f"replace_text needs find: the exact text to replace (1–"
                      f"{FIND_MAX_CHARS:,} characters).", code="invalid_edit")
    return Edit(op=op, text=text, heading=heading, find=find)


def apply_edit(content: str, edit: Edit) -> str:
    """`content` with `edit` made (then trimmed and checked like any content)."""
    if edit.op == "append":
        return f"{content.rstrip()}\n\n{edit.text.strip(chr(10))}"
    if edit.op == "prepend":
        end = front_matter_end(content)
        head, body = content[:end], content[end:].lstrip("\n")
        return f"{head}{edit.text.strip(chr(10))}\n\n{body}"
    if edit.op == "replace_text":
        assert edit.find is not None
        return _replace_text(content, edit.find, edit.text)
    assert edit.heading is not None
    return _replace_section(content, edit.heading, edit.text)


def _line_of(content: str, offset: int) -> int:
    return content.count("\n", 0, offset) + 1


def _replace_text(content: str, find: str, text: str) -> str:
    first = content.find(find)
    if first < 0:
        raise Conflict("The text to replace (find) is not in the note; read it again.",
                       code="edit_target_not_found", find=_shown(find))
    second = content.find(find, first + 1)
    if second >= 0:
        lines: list[int] = []
        at = first
        while at >= 0 and len(lines) < SHOWN:
            lines.append(_line_of(content, at))
            at = content.find(find, at + 1)
        raise Conflict("The text to replace (find) occurs more than once; give more of it "
                       "so it names one place.", code="edit_target_ambiguous",
                       find=_shown(find), lines=lines)
    return content[:first] + text + content[first + len(find):]


@dataclass(frozen=True)
class _Heading:
    level: int
    title: str
    start: int  # offset of its first line
    body: int  # offset just after it: where its section's body begins


def _headings(content: str) -> list[_Heading]:
    starts = [0] + [match.end() for match in _LINE_BREAK.finditer(content)]
    starts.append(len(content))
    front = front_matter_end(content)
    skip = content.count("\n", 0, front)  # front matter lines: never headings
    found = []
    tokens = _PARSER.parse(content[front:])
    for position, token in enumerate(tokens):
        if token.type != "heading_open" or token.level != 0 or token.map is None:
            continue
        first, last = token.map[0] + skip, token.map[1] + skip
        found.append(_Heading(int(token.tag[1]), tokens[position + 1].content.strip(),
                              starts[first], starts[min(last, len(starts) - 1)]))
    return found


def _normal(title: str) -> str:
    return _SPACES.sub(" ", title.strip().strip("#").strip()).casefold()


def _replace_section(content: str, heading: str, text: str) -> str:
    level_given = _LEVEL.match(heading.strip())
    level = len(level_given.group(1)) if level_given else None
    wanted = _normal(heading)
    headings = _headings(content)
    matches = [h for h in headings
               if _normal(h.title) == wanted and (level is None or h.level == level)]
    if not matches:
        raise Conflict("No heading in the note is that one; give one of its headings.",
                       code="edit_target_not_found", heading=_shown(heading),
                       headings=[f"{'#' * h.level} {h.title}" for h in headings][:SHOWN])
    if len(matches) > 1:
        raise Conflict("More than one heading is that one; give its level (## …) or edit "
                       "with replace_text.", code="edit_target_ambiguous",
                       heading=_shown(heading),
                       lines=[_line_of(content, h.start) for h in matches][:SHOWN])
    target = matches[0]
    following = [h for h in headings if h.start > target.start and h.level <= target.level]
    end = following[0].start if following else len(content)
    head = content[:target.body].rstrip("\r\n")
    body = text.strip("\n")
    tail = content[end:]
    middle = f"\n\n{body}\n" if body else "\n"
    return head + middle + ("\n" + tail if tail else "")


def _shown(text: str) -> str:
    return text if len(text) <= 200 else text[:199] + "…"
