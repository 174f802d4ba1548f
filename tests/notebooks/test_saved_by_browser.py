"""The library's "Saved by" select in real Chromium under the real CSP: it lists the
agents that saved the owner's notes (never another account's), and picking one narrows
the list in place; "Any agent" widens it again."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests import factories
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow


def test_saved_by_lists_the_agents_and_filters(browser_site: str, page: Page):
    owner = _owner("librarian")
    factories.note(owner, "Claude wrote this.", source_agent="claude")
    factories.note(owner, "Cursor wrote this.", source_agent="Cursor")
    factories.note(owner, "A script wrote this.", source_agent="nightly script")
    factories.note(factories.owner(), "Someone else's.", source_agent="stranger-bot")
    errors = watch_console(page)
    sign_in(page, browser_site, "librarian")

    saved_by = page.get_by_label("Saved by")
    options = saved_by.locator("option")
    expect(options).to_have_text(["Any agent", "claude", "Cursor", "nightly script"])
    expect(page.locator("ol.notes li.note")).to_have_count(3)

    saved_by.select_option("Cursor")
    expect(page).to_have_url(re.compile(r"agent=Cursor"))
    expect(page.locator("ol.notes li.note")).to_have_count(1)
    expect(page.locator("ol.notes")).to_contain_text("Cursor wrote this.")
    expect(page.locator("#count")).to_contain_text("Showing 1 of 1 note")

    page.reload()  # the whole page for the URL: the filter stays picked
    expect(page.get_by_label("Saved by")).to_have_value("Cursor")
    page.get_by_label("Saved by").select_option("")
    expect(page.locator("ol.notes li.note")).to_have_count(3)
    assert errors == []
