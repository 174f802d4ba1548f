"""Notes as HTML: CommonMark + GFM tables, strikethrough and task lists
(markdown-it-py), then sanitised (nh3), so nothing stored in a note can run in a page.

Two layers on purpose: markdown-it escapes raw HTML in the source (`html=False`) and
refuses `javascript:`-style links; nh3 (the Rust `ammonia` sanitiser) then keeps only an
allow-list of tags, attributes and URL schemes, whatever a future plugin might emit.

Nothing rendered here makes a browser fetch anything by itself: a note or a model
answer is untrusted text, and an image's address is a way out (a remote image is
requested the moment the page opens, with whatever the text put in its URL). So every
image — inline, reference-style, inside a link or a table — becomes a labelled link
naming its host (`image_label`), followed only when someone clicks it, and `img` is not
among the tags nh3 keeps. `without_images` applies the same rule to markdown text
itself, for answers that clients render on their own (ask.services).

Two modes: a note (`render_markdown`) is the owner's own text and keeps its links;
markdown a model wrote (`render_model_markdown`, Ask's answers) has every link decided by
`grove.interfaces.links` — an off-site one opens Grove's confirmation page and shows its
whole destination, other schemes are text — since a link's address can carry what the
model read.
"""

from __future__ import annotations

import functools
import html
import re
from urllib.parse import urlsplit

import nh3
from django.utils.html import strip_tags
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline.image import image as image_rule
from markdown_it.token import Token
from mdit_py_plugins.tasklists import tasklists_plugin

from grove.interfaces.front_matter import front_matter_end, front_matter_lines, front_matter_plugin
from grove.interfaces.wikilinks import (
    ANCHOR_PREFIX,
    Resolver,
    draw_links,
    heading_anchor,
    wikilinks_plugin,
)

TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code",
    "pre", "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th",
    "td", "input",
}  # no img (nor anything else that loads a resource): see the module's docstring
ATTRIBUTES = {
    "a": {"href", "title", "class"},  # class: wikilink | wikilink missing
    "th": {"class"}, "td": {"class"},  # column alignment: align-left|center|right
    "ol": {"start"},
    "li": {"class"}, "ul": {"class"},
    "input": {"type", "checked", "disabled", "class"},
    "code": {"class"},
    # A note's headings carry an id (`h-…`) that `[[Note#Heading]]` links to.
    **{f"h{level}": {"id"} for level in range(1, 7)},
}
URL_SCHEMES = {"http", "https", "mailto"}


@functools.cache
def markdown_parser(breaks: bool = False) -> MarkdownIt:
    """The one parser (`breaks`: a single line break drawn as `<br>`; tokens are the
    same either way)."""
    return (MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False,
                                      "breaks": breaks})
            .enable(["table", "strikethrough"])
            .use(tasklists_plugin).use(front_matter_plugin).use(wikilinks_plugin))


ALIGNMENTS = {f"text-align:{side}": f"align-{side}" for side in ("left", "center", "right")}


LINK_CLASSES = frozenset({"wikilink", "wikilink missing"})


def _classes_only(element: str, attribute: str, value: str) -> str | None:
    if attribute == "class" and element in ("th", "td"):
        return value if value in ALIGNMENTS.values() else None
    if attribute == "class" and element == "a":
        return value if value in LINK_CLASSES else None
    if attribute == "id":
        return value if value.startswith(ANCHOR_PREFIX) else None
    return value


def _web_host(src: str) -> str | None:
    """The host (and port) of an http(s) URL; None for any other address."""
    try:
        parts = urlsplit(src)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not host:
        return None
    return f"{host}:{port}" if port else host


def image_label(alt: str, src: str) -> str:
    """What an image is shown as: "Image: <alt> — <host>" (the host only, never the
    user part of the address, so "trusted.example@attacker.example" names the
    attacker)."""
    alt = " ".join(alt.split())
    host = _web_host(src)
    label = f"Image: {alt}" if alt else "Image"
    return f"{label} — {host}" if host else label


def _alt(token: Token, parser: MarkdownIt, env: dict) -> str:
    renderer = parser.renderer
    assert isinstance(renderer, RendererHTML)
    return renderer.renderInlineAsText(token.children or [], parser.options, env)


def _images_as_links(children: list[Token], parser: MarkdownIt, env: dict) -> list[Token]:
    """Inline tokens with each image replaced by a link to it (by its label as text
    when it is inside a link already, or its address is not an http(s) one)."""
    out: list[Token] = []
    depth = 0
    for token in children:
        depth += {"link_open": 1, "link_close": -1}.get(token.type, 0)
        if token.type != "image":
            out.append(token)
            continue
        src = str(token.attrs.get("src", ""))
        label = Token("text", "", 0, content=image_label(_alt(token, parser, env), src))
        if _web_host(src) is None or depth:
            out.append(label)
            continue
        out += [Token("link_open", "a", 1, attrs={"href": src}),
                label, Token("link_close", "a", -1)]
    return out


def render_markdown(text: str, *, title: bool = False, breaks: bool = False,
                    links: Resolver | None = None, anchors: bool = False) -> SafeString:
    """Markdown as safe HTML for templates. Table column alignment becomes a class, not
    a style attribute: the site's Content-Security-Policy allows no inline styles.

    `title`: the note's title line (`title_line`), when it opens a paragraph, becomes a
    heading (`render_note`);
    `breaks`: a single line break is drawn as one (`<br>`);
    `links`: where links to other notes go (`grove.interfaces.wikilinks.draw_links`;
    without it a wiki-link is its label as text);
    `anchors`: each heading gets the id `[[Note#Heading]]` links to (only where the
    note is the page's text: a preview or an excerpt on the same page would repeat it)."""
    return _render(text, model=False, title=title, breaks=breaks, links=links,
                   anchors=anchors)


def render_model_markdown(text: str) -> SafeString:
    """Markdown a model wrote (an Ask answer) as safe HTML: as `render_markdown`, and
    every link decided by `grove.interfaces.links.model_link` — internal ones kept,
    off-site ones through the confirmation page with their full destination shown
    beside them, any other scheme as text only."""
    return _render(text, model=True)


def _render(text: str, *, model: bool, title: bool = False, breaks: bool = False,
            links: Resolver | None = None, anchors: bool = False) -> SafeString:
    parser = markdown_parser(breaks)
    env: dict = {}
    tokens = parser.parse(text, env)
    for token in tokens:
        if token.type in ("th_open", "td_open") and token.attrs.get("style"):
            side = ALIGNMENTS.get(str(token.attrs.pop("style")))
            if side:
                token.attrs["class"] = side
        if token.type == "inline" and token.children:
            token.children = draw_links(_images_as_links(token.children, parser, env), links)
            if model:
                token.children = _model_links(token.children, parser, env)
    line = title_line(text) if title else None
    if line is not None:  # counted after the front matter; the tokens count it
        tokens = _title_as_heading(tokens, line + front_matter_lines(text))
    if anchors:
        _anchor_headings(tokens, parser, env)
    html = parser.renderer.render(tokens, parser.options, env)
    clean = nh3.clean(html, tags=MODEL_TAGS if model else TAGS,
                      attributes=MODEL_ATTRIBUTES if model else ATTRIBUTES,
                      url_schemes=URL_SCHEMES, link_rel="noopener noreferrer nofollow",
                      attribute_filter=_model_classes if model else _classes_only)
    return mark_safe(clean)  # noqa: S308 - sanitised by nh3 just above


_ANCHOR_ID = re.compile(r' id="h-[^"]*"')


def without_anchors(html: SafeString) -> SafeString:
    """Rendered HTML with its headings' anchors taken out (the same text shown twice on
    a page: ids are unique)."""
    return mark_safe(_ANCHOR_ID.sub("", str(html)))  # noqa: S308 - removes attributes only


def _anchor_headings(tokens: list[Token], parser: MarkdownIt, env: dict) -> None:
    """Each heading gets its anchor (`heading_anchor`; the second of one name `-2`…)."""
    seen: dict[str, int] = {}
    for opening, inline in zip(tokens, tokens[1:], strict=False):
        if opening.type == "heading_open" and inline.type == "inline":
            anchor = heading_anchor(_alt(inline, parser, env))
            seen[anchor] = seen.get(anchor, 0) + 1
            opening.attrs["id"] = anchor if seen[anchor] == 1 else f"{anchor}-{seen[anchor]}"


# What model-written markdown adds: the destination shown beside an off-site link.
MODEL_TAGS = TAGS | {"span"}
MODEL_ATTRIBUTES = {**ATTRIBUTES, "a": {"href", "title", "class"}, "span": {"class"}}
MODEL_CLASSES = {"a": {"offsite"}, "span": {"link-to", "link-none"}}


def _model_classes(element: str, attribute: str, value: str) -> str | None:
    if attribute == "class" and element in MODEL_CLASSES:
        return value if value in MODEL_CLASSES[element] else None
    return _classes_only(element, attribute, value)


def _destination(address: str, kind: str) -> list[Token]:
    """A link's destination as visible text after it: `<span class="link-to">…</span>`."""
    return [Token("text", "", 0, content=" "),
            Token("span_open", "span", 1, attrs={"class": kind}),
            Token("text", "", 0, content=address), Token("span_close", "span", -1)]


def _model_links(children: list[Token], parser: MarkdownIt, env: dict) -> list[Token]:
    """Inline tokens with each link decided by the rule for model-written links: an
    off-site one points at the confirmation page and is followed by its destination;
    one with any other scheme loses its link (its text and destination stay, as text).
    Links do not nest (CommonMark), so each open pairs with the next close."""
    from grove.interfaces.links import leave_url, model_link

    out: list[Token] = []
    opened: tuple[Token, str, str] | None = None  # (the link_open, kind, address)
    inside: list[Token] = []
    for token in children:
        if token.type == "link_open":
            href = str(token.attrs.get("href", ""))
            link = model_link(href)
            opened, inside = (token, link.kind, link.address or href), []
            continue
        if token.type != "link_close" or opened is None:
            (inside if opened is not None else out).append(token)
            continue
        link_open, kind, address = opened
        text = _alt(Token("inline", "", 0, children=inside), parser, env).strip()
        if kind == "internal":
            link_open.attrs = {"href": address}
            out += [link_open, *inside, token]
        elif kind == "offsite":
            link_open.attrs = {"href": leave_url(address), "class": "offsite",
                               "title": f"Leaves Grove for {address}"}
            shown = [] if text == address else _destination(address, "link-to")
            out += [link_open, *inside, token, *shown]
        else:
            out += [*inside, *(_destination(address, "link-none") if address else [])]
        opened, inside = None, []
    return out + inside


_BREAKS = ("softbreak", "hardbreak")


def _title_as_heading(tokens: list[Token], line: int) -> list[Token]:
    """The tokens with `line` made a level-1 heading when it opens a top-level paragraph
    (the rest of that paragraph, if any, staying a paragraph). Done on the tokens, not
    the text, so nothing else parses differently (a second line indented four spaces
    stays text rather than becoming code)."""
    at = next((i for i, t in enumerate(tokens) if t.map and t.map[1] > line), None)
    if at is None or at + 2 >= len(tokens):
        return tokens
    opening, inline, closing = tokens[at:at + 3]
    if opening.type != "paragraph_open" or opening.level != 0 or not opening.map \
            or opening.map[0] != line:
        return tokens
    children = inline.children or []
    cut = next((i for i, child in enumerate(children) if child.type in _BREAKS), len(children))
    heading = [Token("heading_open", "h1", 1, map=opening.map, block=True),
               Token("inline", "", 0, children=children[:cut], block=True),
               Token("heading_close", "h1", -1, block=True)]
    rest = children[cut + 1:]
    if rest:
        heading += [opening, Token("inline", "", 0, children=rest, block=True), closing]
    return tokens[:at] + heading + tokens[at + 3:]


def _images_and_code(markdown: str) -> tuple[int, list[str], dict]:
    """How many images the markdown renders, the text of its code, and its references."""
    env: dict = {}
    tokens = markdown_parser().parse(markdown, env)
    inline = [c for t in tokens if t.type == "inline" for c in (t.children or [])]
    code = [t.content for t in [*tokens, *inline]
            if t.type in ("code_block", "fence", "code_inline")]
    return sum(1 for c in inline if c.type == "image"), code, env


_CANDIDATE = re.compile(r"(?<!\\)(?:\\\\)*!\[")  # "![" whose "!" is not escaped
# What could act as markup inside a link's text (a table cell's "|" included).
_PUNCTUATION = re.compile(r"([\\`*_\[\]<>!&~|])")
TRIALS_MAX = 16  # images rewritten one by one; past that, every "![" is escaped


def _markdown_text(text: str) -> str:
    return _PUNCTUATION.sub(r"\\\1", " ".join(text.split()))


def _image_at(markdown: str, start: int, env: dict) -> tuple[int, str] | None:
    """If an image starts at `start` (its "!"): where it ends and its replacement — a
    link to it labelled by `image_label`, or the label as text."""
    parser = markdown_parser()
    state = StateInline(markdown, parser, env, [])
    state.pos = start
    if not image_rule(state, False):
        return None
    token = state.tokens[-1]
    src = str(token.attrs.get("src", ""))
    label = _markdown_text(image_label(_alt(token, parser, env), src))
    if _web_host(src) is None:
        return state.pos, label
    address = src.replace("<", "%3C").replace(">", "%3E").replace("\n", "%0A")
    return state.pos, f"[{label}](<{address}>)"


def without_images(markdown: str) -> str:
    """The markdown with every image turned into a link to it labelled as
    `render_markdown` shows it — the text a client may render itself, carrying links
    and never images. Text without images comes back unchanged.

    Every "![" that starts an image when read from there is rewritten (from the end, so
    earlier offsets hold); that is the answer when the result has no image and its code
    reads as before. Otherwise (a "![" inside code was rewritten too) each is tried on
    its own and kept only if the document has one image fewer; should images remain
    after `TRIALS_MAX` tries, every "![" left gets its "!" escaped (then only what sits
    in code shows a backslash)."""
    count, code, env = _images_and_code(markdown)
    if not count:
        return markdown
    found = [(m.end() - 2, _image_at(markdown, m.end() - 2, env))
             for m in reversed(list(_CANDIDATE.finditer(markdown)))]
    rewrites = [(start, image) for start, image in found if image is not None]
    bulk, limit = markdown, len(markdown)
    for start, (end, replacement) in rewrites:
        if end <= limit:  # an image around one rewritten already stays for the checks
            bulk, limit = bulk[:start] + replacement + bulk[end:], start
    left, bulk_code, _ = _images_and_code(bulk)
    if not left and bulk_code == code:
        return bulk
    limit = len(markdown)
    for start, (end, replacement) in rewrites[:TRIALS_MAX]:
        if end > limit:
            continue
        trial = markdown[:start] + replacement + markdown[end:]
        left, _, _ = _images_and_code(trial)
        if left < count:
            markdown, count, limit = trial, left, start
        if not count:
            return markdown
    return _CANDIDATE.sub(lambda m: m.group(0)[:-2] + "\\![", markdown)


NEWLINE = re.compile(r"\r\n?|\n")  # markdown-it's own notion of a line break
EXCERPT_SOURCE_CHARS = 800
TITLE_MAX_CHARS = 120


def plain(markdown: str) -> str:
    """Markdown as one line of plain text (rendered, then the tags dropped)."""
    return " ".join(html.unescape(strip_tags(render_markdown(markdown))).split())


# -- a note's title: one rule for every page, list, file name and agent ----------------------

# What opens a line of markdown without being its text: indentation, heading, quote,
# list and task-list marks (repeated: "> - [ ] x").
_LINE_MARKS = re.compile(r"^(?:[ \t]*(?:#{1,6}(?=\s|$)|>|[-*+](?=\s)|\d{1,9}[.)](?=\s)|"
                         r"\[[ xX]\](?=\s)))+[ \t]*")
_CLOSING_HASHES = re.compile(r"[ \t]+#+[ \t]*$")
# Inline marks: an image or link keeps its text, an autolink its address; emphasis,
# strikethrough and code marks go (not the "_" inside snake_case); escapes unescaped.
_LINKED = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
# A wiki-link keeps its label, else its target (`grove.interfaces.wikilinks`).
_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]*)(?:#[^\[\]|\n]*)?(?:\|([^\[\]\n]*))?\]\]")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]*)>")
_EMPHASIS = re.compile(r"(?<!\\)(?:\*\*|__|~~|`+|(?<!\w)[*_]+|[*_]+(?!\w))")
# A line of marks alone: a rule, a setext underline, a fence (its language is no title).
_MARKS_ONLY = re.compile(r"^[ \t]*(?:[-*_=+#>|:\s]+|(?:```|~~~)\S*)[ \t]*$")
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def _title_text(line: str) -> str:
    if _MARKS_ONLY.match(line):
        return ""
    line = _CLOSING_HASHES.sub("", _LINE_MARKS.sub("", line))
    line = _WIKILINK.sub(lambda m: (m.group(2) or m.group(1)).strip(), line)
    line = _AUTOLINK.sub(r"\1", _LINKED.sub(r"\1", line))
    return " ".join(html.unescape(_ESCAPED.sub(r"\1", _EMPHASIS.sub("", line))).split())


_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}=+[ \t]*$")
HEADING_SEARCH_LINES = 60


def _head_lines(content: str, *, lines: int = 0) -> list[str]:
    """The lines of a note's start after its front matter, split where markdown splits
    them (`lines`: at least that many, for a heading further down)."""
    start = front_matter_end(content)  # the front matter is never the title
    head = NEWLINE.split(content[start:start + EXCERPT_SOURCE_CHARS])
    if len(head) < lines and start + EXCERPT_SOURCE_CHARS < len(content):
        head = NEWLINE.split(content[start:start + EXCERPT_SOURCE_CHARS * 8])[:lines]
    return head


def _heading_line(lines: list[str]) -> int | None:
    """The first heading among `lines` (ATX, or a line over a `===` underline)."""
    for number, line in enumerate(lines):
        if _HEADING.match(line) and _title_text(line):
            return number
        if (number + 1 < len(lines) and _SETEXT_UNDERLINE.match(lines[number + 1])
                and _title_text(line)):
            return number
    return None


def title_line(content: str, *, path: str = "") -> int | None:
    """Which line of a note (after its front matter) is its title: the first that holds
    any text once its markdown marks are left out (a stored note is trimmed, so that is
    its first line but for a line of marks alone, such as a rule). A note from a file
    (`path`, its source path): its first heading, else none — its file name titles it.
    None for a note without text."""
    if path:
        return _heading_line(_head_lines(content, lines=HEADING_SEARCH_LINES)
                             [:HEADING_SEARCH_LINES])
    for number, line in enumerate(_head_lines(content)):
        if _title_text(line):
            return number
    return None


def note_title(content: str, limit: int = TITLE_MAX_CHARS, *, path: str = "") -> str:
    """A note's title — THE rule, for the library, the note page, the preview, share
    pages, the brief, MCP and export file names: its title line (`title_line`) as plain
    text, shortened to `limit`; for a note from a file (`path`) without a heading, the
    file's name without its suffix; "" when the note has no text. Cheap (no rendering):
    the brief and lists name hundreds of notes."""
    number = title_line(content, path=path)
    if number is None:
        if path:
            name = path.rsplit("/", 1)[-1]
            return shorten(name.rsplit(".", 1)[0] if "." in name[1:] else name, limit)
        return ""
    return shorten(_title_text(_head_lines(content, lines=number + 1)[number]), limit)


def title_and_excerpt(content: str, *, excerpt: bool = True,
                      path: str = "") -> tuple[str, str]:
    """A note's title (`note_title`) and an excerpt of what follows its title line (at
    most 240 characters, as plain text: only the start of a long note is rendered).
    `excerpt=False`: the title alone is wanted — the rendering is skipped."""
    title = note_title(content, path=path) or "(empty)"
    if not excerpt:
        return title, ""
    number = title_line(content, path=path)
    after = _head_lines(content, lines=(number or 0) + 1)[(number + 1 if number is not None
                                                           else 0):]
    if after and _MARKS_ONLY.match(after[0]):
        after = after[1:]  # the title's setext underline ("===")
    rest = plain("\n".join(after))
    return title, shorten(rest, 241)


def render_note(content: str, links: Resolver | None = None, *,
                anchors: bool = False) -> SafeString:
    """A note as its page, its editor's preview and its share page show it: the first
    line, when it opens a paragraph, is the note's heading (a title written without "#"
    reads as one, not as the start of a run-on paragraph), and a single line break is a
    line break (as notes are written), not a space. Everything else is `render_markdown`:
    the same sanitising, the same task-list boxes in the same order; `links` says where
    its links to other notes go, `anchors` gives its headings their ids."""
    return render_markdown(content, title=True, breaks=True, links=links, anchors=anchors)


WORD_BACKTRACK = 24  # how far back a cut looks for the end of a word


def shorten(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: cut after a whole word where one ends near
    the limit (else mid-word, for one long word), with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    if not text[limit - 1].isspace():
        space = cut.rfind(" ", len(cut) - WORD_BACKTRACK)
        if space > 0:
            cut = cut[:space]
    return cut.rstrip() + "…"
