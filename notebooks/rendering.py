"""Notes as HTML: CommonMark + GFM tables, strikethrough and task lists
(markdown-it-py), then sanitised (nh3), so nothing stored in a note can run in a page.

Two layers on purpose: markdown-it escapes raw HTML in the source (`html=False`) and
refuses `javascript:`-style links; nh3 (the Rust `ammonia` sanitiser) then keeps only an
allow-list of tags, attributes and URL schemes, whatever a future plugin might emit.
"""

from __future__ import annotations

import functools

import nh3
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
    "th": {"style"}, "td": {"style"},  # column alignment: text-align only (filtered below)
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


def _keep_alignment_only(element: str, attribute: str, value: str) -> str | None:
    if attribute == "style":
        return value if value in ("text-align:left", "text-align:center",
                                  "text-align:right") else None
    return value


def render_markdown(text: str) -> SafeString:
    """The note's content as safe HTML for templates."""
    html = _parser().render(text)
    clean = nh3.clean(html, tags=TAGS, attributes=ATTRIBUTES, url_schemes=URL_SCHEMES,
                      link_rel="noopener noreferrer nofollow",
                      attribute_filter=_keep_alignment_only)
    return mark_safe(clean)  # noqa: S308 - sanitised by nh3 just above
