"""A note's revisions compared (History, an Ask proposal's preview): a line diff, read
by section in a document with headings (issue 37)."""

from __future__ import annotations

import difflib
import re

from grove.interfaces.rendering import _title_text

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def heading_trails(lines: list[str]) -> list[tuple[str, ...]]:
    """The heading trail each line sits under (its own, for a heading line), outermost
    first; `#` lines inside code fences are no headings."""
    trails: list[tuple[str, ...]] = []
    trail: list[tuple[int, str]] = []
    fence: str | None = None
    for line in lines:
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
        elif opened:
            fence = opened.group(1)
        elif (heading := _ATX.match(line)) and (title := _title_text(line)):
            level = len(heading.group(1))
            trail = [(lvl, t) for lvl, t in trail if lvl < level] + [(level, title)]
        trails.append(tuple(title for _, title in trail))
    return trails


def revision_diff(old: str, new: str) -> list[tuple[str, str]]:
    """A line diff as (kind, text) rows: "same", "del", "add" or "gap" (skipped lines),
    and — in a document with headings — "section" rows naming the heading trail a run
    of changes sits under (its first change's, in the new text), so a long note's
    history reads by section."""
    rows: list[tuple[str, str]] = []
    a, b = old.splitlines(), new.splitlines()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    trails_b = heading_trails(b)
    trails_a = heading_trails(a)
    said: tuple[str, ...] = ()
    for group in matcher.get_grouped_opcodes(3):
        if rows:
            rows.append(("gap", "…"))
        tag, i1, _, j1, _ = next((op for op in group if op[0] != "equal"), group[0])
        # Where the run's first change is: its new line's section, or for a deletion
        # the section the deleted line sat in.
        trail = trails_b[j1] if tag != "delete" and j1 < len(b) else \
            trails_a[i1] if i1 < len(a) else ()
        if trail and trail != said:
            rows.append(("section", " › ".join(trail)))
            said = trail
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows.extend(("same", line) for line in a[i1:i2])
                continue
            rows.extend(("del", line) for line in a[i1:i2])
            rows.extend(("add", line) for line in b[j1:j2])
    return rows
