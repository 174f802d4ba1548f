"""Notes render as CommonMark + GFM and nothing in them can run (SPEC §11)."""

from html.parser import HTMLParser

import pytest
from django.test import Client

from grove.interfaces.rendering import render_markdown
from grove.models import Account
from tests import factories

ATTACKS = [
    "<script>alert(1)</script>",
    "[click](javascript:alert(1))",
    "<img src=x onerror=alert(1)>",
    "![pic](javascript:alert(2))",
    '<a href="javascript:alert(3)">x</a>',
    "<iframe src=https://example.org></iframe>",
    "[x](JaVaScRiPt:alert(4))",
    "<svg onload=alert(5)>",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
]


class ActiveParts(HTMLParser):
    """Everything in parsed HTML that could run: script-like elements, event handler
    attributes, and script or data URLs."""

    def __init__(self, html: str):
        super().__init__()
        self.found: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "iframe", "svg", "object", "embed", "style"):
            self.found.append(tag)
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"{tag}[{name}]")
            if name in ("href", "src") and (value or "").strip().lower().startswith(
                    ("javascript:", "data:", "vbscript:")):
                self.found.append(f"{tag}[{name}={value}]")


def test_gfm_tables_strikethrough_and_task_lists():
    html = str(render_markdown("| a | b |\n|:-|-:|\n| 1 | ~~2~~ |\n\n- [x] done\n- [ ] todo"))
    assert "<table>" in html and '<th class="align-left">a</th>' in html
    assert '<td class="align-right"><s>2</s></td>' in html
    assert "style=" not in html  # the CSP allows no inline styles
    assert "<s>2</s>" in html
    assert 'type="checkbox"' in html and 'checked="checked"' in html and "disabled" in html


def test_only_alignment_classes_survive():
    # A class can only come from the table renderer; none can be smuggled in.
    html = str(render_markdown('| a |\n|--|\n| <td class="x">1 |'))
    assert '<td class="x"' not in html and '&lt;td class="x"&gt;' in html


def test_links_are_kept_safe():
    html = str(render_markdown("[site](https://example.org) <https://x.example>"))
    assert 'href="https://example.org"' in html
    assert 'rel="noopener noreferrer nofollow"' in html


@pytest.mark.parametrize("attack", ATTACKS)
def test_stored_html_and_script_urls_are_inert(attack):
    html = str(render_markdown(f"before\n\n{attack}\n\nafter"))
    assert ActiveParts(html).found == [], html
    assert "before" in html and "after" in html


@pytest.mark.django_db
def test_the_note_page_shows_rendered_markdown():
    owner = factories.owner()
    note = factories.note(owner, "# Plan\n\n| step | done |\n|---|---|\n| one | ~~yes~~ |\n\n"
                                 + "\n\n".join(ATTACKS))
    web = Client()
    web.force_login(Account.objects.get(id=owner.account_id))
    page = web.get(f"/notes/{note.id}/").content.decode()
    assert "<h1>Plan</h1>" in page and "<table>" in page
    body = page[page.index("<main"):]
    assert ActiveParts(body).found == []
    assert ActiveParts('<a href="javascript:x" onclick="y">').found  # the checker works


def test_front_matter_is_drawn_as_its_properties_and_the_title_follows_it():
    """An Obsidian note's properties: one quiet preformatted block (escaped, inert), not
    a rule over a heading; the title line after it is the page's heading; a task-like
    line inside it is no box to tick."""
    from grove.interfaces.rendering import render_note
    from grove.interfaces.tasklists import task_items

    note = ("---\r\ntags: [garden]\r\nstatus: <script>alert(1)</script>\r\n"
            "todo: \"- [ ] not a task\"\r\n---\r\nGarden plan\r\n\r\n- [ ] sow beans\r\n")
    html = render_note(note)
    assert html.startswith('<pre><code class="front-matter">tags: [garden]\nstatus: '
                           "&lt;script&gt;alert(1)&lt;/script&gt;\n")
    assert "<hr>" not in html and "<h2>" not in html and ActiveParts(html).found == []
    assert "<h1>Garden plan</h1>" in html
    assert [item.text for item in task_items(note)] == ["sow beans"]
    # No closing line: not front matter, but a rule and text as markdown has them.
    assert render_note("---\nnot closed\n\ntext").startswith("<hr>")
    # Further down, "---" blocks are ordinary markdown.
    assert "front-matter" not in render_markdown("text\n\n---\na: 1\n---\n")
