"""Tags and pins as a person uses them, in real Chromium under the real CSP: tags typed
in the editor show as links on the note and in the list, the sidebar counts them and
filters by one, a chip takes the filter off; Pin on the note page puts the note in the
sidebar's Pinned list, Unpin takes it out."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests import factories
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow


def test_tag_a_note_filter_by_it_and_pin_it(browser_site: str, page: Page):
    owner = _owner("tagger")
    factories.note(owner, "Focaccia\n\nOlive oil, flaky salt.", tags=["bread"])
    factories.note(owner, "Risotto\n\nStir, stir.")
    errors = watch_console(page)
    sign_in(page, browser_site, "tagger")

    # Tag the risotto from its editor.
    page.get_by_role("link", name="Risotto").click()
    page.get_by_role("link", name="Edit", exact=True).click()
    page.get_by_label("Tags").fill("Italian, #weeknight")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#flash")).to_contain_text("Saved.")
    tags = page.locator("article.note-page ul.tags")
    expect(tags.locator("a.tag")).to_have_text(["#italian", "#weeknight"])

    # The sidebar counts each tag; one of them filters the list.
    sidebar = page.get_by_role("navigation", name="Notebooks")
    expect(sidebar.locator("details.tags-nav a")).to_have_count(3)
    sidebar.get_by_role("link", name=re.compile(r"^#bread 1")).click()
    expect(page).to_have_url(re.compile(r"\?tag=bread$"))
    expect(page.locator("ol.notes li.note a.title")).to_have_text(["Focaccia"])
    expect(sidebar.get_by_role("link", name=re.compile(r"^#bread"))).to_have_attribute(
        "aria-current", "page")
    # Search as you type keeps the tag on; the chip takes it off.
    page.locator("#q").fill("foca")
    expect(page).to_have_url(re.compile(r"tag=bread"))
    expect(page.locator("ol.notes li.note a.title")).to_have_text(["Focaccia"])
    page.locator("#q").fill("")
    page.get_by_role("link", name=re.compile(r"#bread.*remove this filter")).click()
    expect(page.locator("ol.notes li.note")).to_have_count(2)

    # A tag on a row is a link to that filter too.
    page.locator("ol.notes").get_by_role("link", name="#weeknight").click()
    expect(page.locator("ol.notes li.note a.title")).to_have_text(["Risotto"])

    # Pin from the note page; the sidebar's Pinned lists it, Unpin takes it out.
    page.get_by_role("link", name="Risotto").click()
    page.get_by_role("button", name="Pin", exact=True).click()
    expect(page.locator("#flash")).to_contain_text("Pinned.")
    expect(page.locator("article.note-page .badge.pinned")).to_have_text("pinned")
    pinned = sidebar.get_by_role("link", name=re.compile(r"^Pinned 1"))
    pinned.click()
    expect(page.locator("ol.notes li.note a.title")).to_have_text(["Risotto"])
    page.locator("ol.notes").get_by_role("link", name="Risotto").click()
    page.get_by_role("button", name="Unpin").click()
    expect(page.locator("#flash")).to_contain_text("Unpinned.")
    expect(sidebar.get_by_role("link", name=re.compile(r"^Pinned"))).to_have_count(0)
    assert errors == []
