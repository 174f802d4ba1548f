"""What a new user hit on a phone and in the menus (issue 36 item 3.9), in real Chromium
under the real CSP (a violation is a console error, and every test asserts there is
none): on a 390 × 844 screen the Shares table keeps Revoke in view, every section of the
top bar is in view, and the library's filters fold behind a button so the first notes
come first; the account menu closes with Escape and with a click outside it; typing in
the search box runs under the CSP without a complaint."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from sharing import services as sharing
from tests import factories
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow

PHONE = {"width": 390, "height": 844}


def _in_view(page: Page, locator) -> None:
    """The element is drawn inside the window, sideways too (not cut off or scrolled
    out of reach)."""
    box = locator.bounding_box()
    assert box is not None, locator
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 0.5, box
    assert box["y"] >= 0 and box["y"] + box["height"] <= PHONE["height"] + 0.5, box


def test_a_phone_shows_revoke_every_section_and_the_first_notes(browser_site: str,
                                                                 browser):
    owner = _owner("pocket")
    book = factories.notebook(owner, "A notebook with a rather long name indeed")
    for number in range(8):
        factories.note(owner, f"Note {number} on the shopping list", notebook_id=book.id)
    note = factories.note(owner, "# Sourdough\n\nBake at 240 °C.")
    sharing.share_create(actor=owner, note_id=note.id)
    sharing.share_create(actor=owner, notebook_id=book.id)
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    errors = watch_console(page)
    try:
        sign_in(page, browser_site, "pocket")
        # The top bar: every section in view, none cut off at the edge.
        menu = page.get_by_role("navigation", name="Main")
        for name in ("Library", "Ask", "Activity", "Connections"):
            _in_view(page, menu.get_by_role("link", name=name))
        # The library: the filters folded behind their button, the first note high up.
        form = page.locator("form.filters")
        expect(form).to_be_hidden()
        toggle = page.get_by_role("button", name="Filters")
        expect(toggle).to_have_attribute("aria-expanded", "false")
        first = page.locator("ol.notes > li.note").first
        box = first.bounding_box()
        assert box is not None and box["y"] < PHONE["height"] * 0.4, box
        toggle.click()
        expect(form).to_be_visible()
        expect(toggle).to_have_attribute("aria-expanded", "true")
        page.get_by_label("Kind").select_option("fact")
        expect(page.locator("#count")).to_contain_text("Showing 9 of 9 notes")
        expect(form).to_be_visible()  # a filter applied: still open to change another
        # Shared links: each link's Revoke in view, and the confirmation behind it.
        page.goto(f"{browser_site}/shares/")
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        rows = page.locator("table.shares tbody tr")
        expect(rows).to_have_count(2)
        for row in rows.all():
            revoke = row.get_by_text("Revoke…")
            revoke.scroll_into_view_if_needed()
            _in_view(page, revoke)
        rows.first.get_by_text("Revoke…").click()
        confirm = rows.first.get_by_role("button", name="Revoke for good")
        confirm.scroll_into_view_if_needed()
        _in_view(page, confirm)
        confirm.click()
        expect(page.locator("table.shares tbody tr")).to_have_count(1)
        assert errors == []
    finally:
        context.close()


def test_the_account_menu_closes_with_escape_and_a_click_outside(browser_site: str,
                                                                  page: Page):
    _owner("menus")
    errors = watch_console(page)
    sign_in(page, browser_site, "menus")
    account = page.get_by_label("Account menu")
    settings = page.get_by_role("link", name="Settings")
    account.click()
    expect(settings).to_be_visible()
    page.keyboard.press("Escape")
    expect(settings).to_be_hidden()
    expect(account).to_be_focused()
    account.click()
    expect(settings).to_be_visible()
    page.locator("main h1").click()  # anywhere outside
    expect(settings).to_be_hidden()
    account.click()  # and a click inside it works as ever
    settings.click()
    expect(page).to_have_url(re.compile(r"/settings/$"))
    assert errors == []


def test_search_as_you_type_runs_under_the_csp_without_a_complaint(browser_site: str,
                                                                   page: Page):
    owner = _owner("quiet")
    for number in range(30):
        factories.note(owner, f"Walnut harvest note {number:02d}\n\nPicked on 2026-12-01.")
    factories.note(owner, "Almonds")
    errors = watch_console(page)
    sign_in(page, browser_site, "quiet")
    page.keyboard.press("/")
    for letter in "walnut 2026-12":
        page.keyboard.type(letter)
        page.wait_for_timeout(60)
    expect(page.locator("#count")).to_contain_text("of 30 notes matching")
    page.locator("ol.notes > li.more").scroll_into_view_if_needed()  # the next page
    expect(page.locator("#count")).to_contain_text("Showing 30 of 30")
    page.get_by_role("searchbox").fill("")
    expect(page.locator("#count")).to_contain_text("of 31 notes")
    assert errors == []
