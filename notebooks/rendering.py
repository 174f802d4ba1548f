"""Notes as HTML: CommonMark + GFM tables, strikethrough and task lists
(markdown-it-py), then sanitised (nh3), so nothing stored in a note can run in a page.

Two layers on purpose: markdown-it escapes raw HTML in the source (`html=False`) and
refuses `javascript:`-style links; nh3 (the Rust `ammonia` sanitiser) then keeps only an
allow-list of tags, attributes and URL schemes, whatever a future plugin might emit.
"""

from __future__ import annotations

import functools
import html

import nh3
from django.utils.html import strip_tags
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from mdit_py_plugins.tasklists import tasklists_plugin

TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code",
    "pre", "blockquote", "ul", "ol", "li", "a", "img", "table", "thead", "tbody", "tr", "th",
    "td", "input",
}
ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "th": {"class"}, "td": {"class"},  # column alignment: align-left|center|right
    "ol": {"start"},
    "li": {"class"}, "ul": {"class"},
    "input": {"type", "checked", "disabled", "class"},
    "code": {"class"},
}
URL_SCHEMES = {"http", "https", "mailto"}


@functools.cache
def _parser() -> MarkdownIt:
    return (MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
            .enable(["table", "strikethrough"])
            .use(tasklists_plugin))


ALIGNMENTS = {f"text-align:{side}": f"align-{side}" for side in ("left", "center", "right")}


def _classes_only(element: str, attribute: str, value: str) -> str | None:
    if attribute == "class" and element in ("th", "td"):
        return value if value in ALIGNMENTS.values() else None
    return value


def render_markdown(text: str) -> SafeString:
    """The note's content as safe HTML for templates. Table column alignment becomes a
    class, not a style attribute: the site's Content-Security-Policy allows no inline
    styles."""
    parser = _parser()
    env: dict = {}
    tokens = parser.parse(text, env)
    for token in tokens:
        if token.type in ("th_open", "td_open") and token.attrs.get("style"):
            side = ALIGNMENTS.get(str(token.attrs.pop("style")))
            if side:
                token.attrs["class"] = side
    html = parser.renderer.render(tokens, parser.options, env)
    clean = nh3.clean(html, tags=TAGS, attributes=ATTRIBUTES, url_schemes=URL_SCHEMES,
                      link_rel="noopener noreferrer nofollow",
                      attribute_filter=_classes_only)
    return mark_safe(clean)  # noqa: S308 - sanitised by nh3 just above


EXCERPT_SOURCE_CHARS = 800


def plain(markdown: str) -> str:
    """Markdown as one line of plain text (rendered, then the tags dropped)."""
    return " ".join(html.unescape(strip_tags(render_markdown(markdown))).split())


def title_and_excerpt(content: str) -> tuple[str, str]:
    """A note's title (its first line, as plain text) and an excerpt of the rest (at
    most 240 characters: only the start of a long note is rendered)."""
    lines = content.strip()[:EXCERPT_SOURCE_CHARS].splitlines()
    title = plain(lines[0]) if lines else ""
    rest = plain("\n".join(lines[1:]))
    if not title:
        title, rest = (rest[:80] or "(empty)"), rest[80:]
    return title[:120], (rest[:240] + "…") if len(rest) > 240 else rest


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def first_line(content: str, limit: int = 80) -> str:
    """A note's label: its first non-empty line without markdown marks, shortened."""
    line = next((ln.strip(" #*-\t") for ln in content.splitlines() if ln.strip()), "")
    return shorten(line, limit)
