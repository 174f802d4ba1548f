"""Search as you type in real Chromium (CSP on): every key narrows the list — prefixes
of the word being typed match, a word finds its other forms, a typo finds the word
meant — and excerpts read as text, not markdown."""

import re

import pytest
from playwright.sync_api import Page, expect

from notebooks.services.term_stats import term_stats_compact
from tests import factories
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow


def test_search_narrows_with_every_key(browser_site: str, page: Page):
    owner = _owner("typist")
    factories.note(owner, "Shakshuka for Sunday breakfast")
    factories.note(owner, "We run Postgres for the job queue")
    factories.note(owner, "PostgreSQL 17 upgrade checklist")
    factories.note(owner, "# Launch plan\n\n## Rollout\n\n| Phase | Owner |\n|---|---|\n"
                   "| Canary | **Ana** |\n\nThe rollout is gradual.")
    term_stats_compact(actor=owner)
    errors = watch_console(page)
    sign_in(page, browser_site, "typist")
    count = page.locator("#count")
    expect(count).to_have_text(re.compile(r"Showing 4 of 4 notes"))

    page.keyboard.press("/")
    box = page.locator("#q")
    expect(box).to_be_focused()
    typed = ""
    for letter in "shaksh":
        typed += letter
        page.keyboard.type(letter)
        # Every prefix finds the note, never "No notes match".
        expect(box).to_have_value(typed)
        expect(count).to_contain_text(f"matching “{typed}”")
        expect(page.locator("li.note a.title", has_text="Shakshuka")).to_be_visible()
    expect(count).to_contain_text("Showing 1 of 1 note matching “shaksh”")
    expect(page.locator("li.note mark").first).to_have_text("Shakshuka")

    # One form of a word finds the other: both ways.
    for query in ("postgres", "postgresql"):
        box.fill("")
        page.keyboard.type(query)
        expect(count).to_contain_text(f"Showing 2 of 2 notes matching “{query}”")
        expect(page.locator("li.note a.title")).to_have_count(2)

    # A typo finds the word meant.
    box.fill("")
    page.keyboard.type("brekfast ")
    expect(count).to_contain_text("Showing 1 of 1 note")
    expect(page.locator("li.note a.title")).to_have_text(["Shakshuka for Sunday breakfast"])

    # The excerpt is the note's text: no heading marks or table pipes.
    box.fill("")
    page.keyboard.type("rollout")
    excerpt = page.locator("li.note .excerpt")
    expect(excerpt).to_contain_text("Canary")
    text = excerpt.inner_text()
    assert "|" not in text and "##" not in text and "**" not in text, text
    expect(page.locator("li.note .excerpt mark").first).to_have_text(re.compile("rollout", re.I))
    assert errors == []
