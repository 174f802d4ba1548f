"""Fixes from a new user's walk through the website (issue 20, item 8), in real Chromium
under the real CSP: Back after a search shows the whole page, reloading the Connections
page after creating a key creates no second key, and `j` goes on past the first page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests import factories
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow


def test_back_after_a_search_shows_the_whole_page(browser_site: str, page: Page):
    """Search as you type pushes its URL, answered with a fragment; going Back to it
    from a note must show the page, not a cached fragment without styles."""
    owner = _owner("walker")
    for n in range(3):
        factories.note(owner, f"Compost turning, week {n}.")
    errors = watch_console(page)
    sign_in(page, browser_site, "walker")
    page.locator("#q").fill("compost")
    expect(page).to_have_url(re.compile(r"q=compost"))
    expect(page.locator("#count")).to_contain_text("matching")
    page.locator("ol.notes a.title").first.click()
    expect(page).to_have_url(re.compile(r"/notes/"))
    page.go_back()
    expect(page).to_have_url(re.compile(r"q=compost"))
    expect(page.locator(".sidebar")).to_be_visible()
    expect(page.locator("ol.notes li.note")).to_have_count(3)
    assert page.locator("link[rel=stylesheet]").count() >= 1
    assert page.evaluate("getComputedStyle(document.body).margin") != "8px"  # styled
    assert errors == []


def test_reloading_after_creating_a_key_creates_no_second_key(browser_site: str,
                                                              page: Page):
    from grove.identity import selectors

    owner = _owner("reloader")
    sign_in(page, browser_site, "reloader")
    page.goto(browser_site + "/connections/")
    page.get_by_label("Name").fill("laptop")
    page.get_by_label("Every notebook, current and future").check()
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_label("New API key")).to_have_value(re.compile(r"^grv_"))
    page.reload()  # the browser posts the form again
    expect(page.locator("main")).to_contain_text("created already")
    names = [c.name for c in selectors.connection_overview(actor=owner).connections]
    assert names.count("laptop") == 1


def test_j_goes_on_past_the_first_page(browser_site: str, page: Page):
    owner = _owner("scroller")
    for n in range(30):
        factories.note(owner, f"Note number {n}.")
    errors = watch_console(page)
    sign_in(page, browser_site, "scroller")
    for _ in range(27):
        page.keyboard.press("j")
    rows = page.locator("ol[data-keynav] > li.note")
    expect(rows).to_have_count(30)  # the second page came
    expect(rows.nth(26)).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator("li.note.selected")).to_have_count(1)
    expect(rows.nth(26).locator("a.title")).to_be_focused()
    assert errors == []
