"""Links between notes as the one markdown parser reads them (issue 38;
docs/architecture.md, "Links between notes").

`[[Title]]`, `[[Title|label]]`, `[[Title#Heading]]` and `[[folder/Title]]` (Obsidian's
wiki-links) are one inline token, `wikilink`, on one line, never inside code or front
matter (markdown-it never reads those as inline text). A Markdown link to a relative
`.md` path (`[label](../Other%20note.md#Heading)`) is an ordinary link the parser already
reads; `markdown_target` says whether its address is one.

Both are drawn by `draw_links` with a `Resolver` that says where each goes: the note
page resolves them to notes of the account, a share page only to notes inside the
share, and without a resolver a wiki-link is its label as plain text. The extractor
(`links.parsing`) reads the same tokens, so what is drawn as a link and what is stored
as one never differ.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote, urlsplit

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

INNER_MAX_CHARS = 500  # longer "[[…]]" text is not a link


@dataclass(frozen=True)
class Written:
    """A link as written: its form, the target (a note's name, maybe after folders;
    for a Markdown link the decoded relative path), the heading after `#`, the label
    after `|` (or a Markdown link's text)."""

    form: Literal["wiki", "markdown"]
    target: str
    heading: str = ""
    label: str = ""

    @property
    def shown(self) -> str:
        """What the link reads as: its label, else its target (with the heading)."""
        if self.label:
            return self.label
        return f"{self.target} > {self.heading}" if self.heading else self.target


@dataclass(frozen=True)
class Drawn:
    """Where a link goes (`href`) and how it looks (`missing`: its note does not exist
    yet, and the link offers to create it)."""

    href: str
    missing: bool = False


# Where each link goes; None: drawn as plain text (its label).
type Resolver = Callable[[Written], Drawn | None]


def parse_inner(inner: str) -> Written | None:
    """The parts of `[[inner]]`, or None when it names no note."""
    target, _, label = inner.partition("|")
    target, _, heading = target.partition("#")
    target, heading, label = target.strip(), heading.strip(), label.strip()
    if not target:
        return None
    return Written("wiki", target, heading, label)


def _wikilink(state: StateInline, silent: bool) -> bool:
    start = state.pos
    if not state.src.startswith("[[", start):
        return False
    close = state.src.find("]]", start + 2, start + 2 + INNER_MAX_CHARS + 1)
    if close < 0:
        return False
    inner = state.src[start + 2:close]
    if not inner.strip() or any(c in inner for c in "[]\n\r"):
        return False
    written = parse_inner(inner)
    if written is None:
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        token.markup = state.src[start:close + 2]
        # Where it is in the inline source, and that source (a plugin may change the
        # block's content after): `links.parsing` maps it to the note's text.
        token.meta = {"written": written, "span": (start, close + 2), "source": state.src}
    state.pos = close + 2
    return True


def _placed(rule: Callable[[StateInline, bool], bool]) -> Callable[[StateInline, bool], bool]:
    """`rule` (the `link` rule), its `link_open` token told where in the inline source
    the link is written (`meta["span"]`), so its address can be found in the text."""
    def placed(state: StateInline, silent: bool) -> bool:
        start, count = state.pos, len(state.tokens)
        if not rule(state, silent):
            return False
        if not silent:
            for token in state.tokens[count:]:
                if token.type == "link_open":
                    token.meta = {**(token.meta or {}), "span": (start, state.pos),
                                  "source": state.src}
                    break
        return True
    return placed


def wikilinks_plugin(md: MarkdownIt) -> None:
    """The parser reads `[[…]]` as a `wikilink` token (before `link`, so `[[a]]` is not
    read as a reference link); both say where in the inline source they are written."""
    md.inline.ruler.before("link", "wikilink", _wikilink)
    link = next(rule.fn for rule in md.inline.ruler.__rules__ if rule.name == "link")
    md.inline.ruler.at("link", _placed(link))


def markdown_target(href: str, text: str) -> Written | None:
    """A Markdown link's address as a link to a note: a relative path ending in `.md`
    (no scheme, no host, not absolute), percent-decoded; None for any other address."""
    try:
        parts = urlsplit(href)
    except ValueError:
        return None
    path = unquote(parts.path)
    if parts.scheme or parts.netloc or parts.query or not path or path.startswith("/") \
            or not path.lower().endswith(".md") or "\\" in path:
        return None
    return Written("markdown", path, unquote(parts.fragment).strip(), text.strip())


_SPACES = re.compile(r"\s+")
_NOT_WORD = re.compile(r"[^\w]+")
ANCHOR_PREFIX = "h-"  # a heading's id on a note page: never clobbers the page's own ids


def heading_anchor(heading: str) -> str:
    """The id a note page gives a heading, and the fragment `[[Note#Heading]]` links
    to: `h-` and its words, lower-case, joined by hyphens."""
    words = _NOT_WORD.sub("-", unicodedata.normalize("NFC", heading).casefold()).strip("-_")
    return ANCHOR_PREFIX + (words[:80] or "section")


def _text(children: list[Token]) -> str:
    return _SPACES.sub(" ", "".join(t.content for t in children
                                    if t.type in ("text", "code_inline"))).strip()


def draw_links(children: list[Token], resolver: Resolver | None) -> list[Token]:
    """Inline tokens with each wiki-link made a link (`wikilink`, or `wikilink missing`)
    or its label as text, as `resolver` says; a Markdown link to a `.md` path is pointed
    where the resolver says (kept as written without one). Links do not nest."""
    out: list[Token] = []
    opened: Token | None = None
    inside: list[Token] = []
    for token in children:
        if token.type == "wikilink":
            written: Written = token.meta["written"]
            drawn = resolver(written) if resolver else None
            label = Token("text", "", 0, content=written.shown)
            if drawn is None or opened is not None:
                (inside if opened is not None else out).append(label)
                continue
            css = "wikilink missing" if drawn.missing else "wikilink"
            out += [Token("link_open", "a", 1, attrs={"href": drawn.href, "class": css}),
                    label, Token("link_close", "a", -1)]
            continue
        if token.type == "link_open" and resolver is not None:
            opened, inside = token, []
            continue
        if opened is None:
            out.append(token)
            continue
        if token.type != "link_close":
            inside.append(token)
            continue
        written_md = markdown_target(str(opened.attrs.get("href", "")), _text(inside))
        drawn = resolver(written_md) if written_md and resolver else None
        if written_md is None:
            out += [opened, *inside, token]
        elif drawn is None:
            out += inside
        else:
            opened.attrs = {"href": drawn.href,
                            "class": "wikilink missing" if drawn.missing else "wikilink"}
            out += [opened, *inside, token]
        opened, inside = None, []
    return out + ([opened, *inside] if opened is not None else [])
