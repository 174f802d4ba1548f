"""Recently deleted and Undo in real Chromium under the real CSP (never bypassed): the
forms post with their CSRF token and nothing is logged to the console."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests import factories
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow


def test_delete_a_note_then_restore_it_from_recently_deleted(browser_site: str, page: Page):
    owner = _owner("binner")
    note = factories.note(owner, "# Boiler\nThe code is 4711.")
    factories.note(owner, "Something else.")
    errors = watch_console(page)
    sign_in(page, browser_site, "binner")
    page.goto(f"{browser_site}/notes/{note.id}/")
    page.get_by_role("link", name="Delete", exact=True).click()
    page.get_by_label("Yes, delete this note").check()
    page.get_by_role("button", name="Delete note").click()
    expect(page.locator(".flash")).to_have_text("Deleted. Undo · Recently deleted")
    expect(page.locator("ol.notes li.note")).to_have_count(1)

    page.locator(".sidebar").get_by_role("link", name="Recently deleted").click()
    expect(page.get_by_role("heading", name="Recently deleted")).to_be_visible()
    row = page.locator(f"#note-{note.id}")
    expect(row).to_contain_text("Boiler")
    expect(row).to_contain_text("restorable for 4")  # weeks and days
    row.get_by_role("button", name=re.compile("^Restore")).click()

    expect(page).to_have_url(f"{browser_site}/notes/{note.id}/")
    expect(page.locator(".flash")).to_have_text("Restored.")
    expect(page.locator(".note-page")).to_have_attribute("data-status", "active")
    expect(page.locator(".note-page")).to_have_attribute("data-version", "3")
    expect(page.locator(".note-page .content")).to_contain_text("The code is 4711.")
    page.goto(browser_site + "/trash/")
    expect(page.locator("#count")).to_have_text("Nothing deleted in the last 30 days.")
    assert errors == []


def test_archive_a_note_then_undo(browser_site: str, page: Page):
    owner = _owner("undoer")
    note = factories.note(owner, "Keep this one handy.")
    errors = watch_console(page)
    sign_in(page, browser_site, "undoer")
    page.goto(f"{browser_site}/notes/{note.id}/")
    page.get_by_role("button", name="Archive").click()
    expect(page.locator(".note-page")).to_have_attribute("data-status", "archived")
    expect(page.locator(".flash")).to_have_text("Archived. Undo")
    page.locator(".flash").get_by_role("button", name="Undo").click()
    expect(page.locator(".flash")).to_have_text("Restored.")
    expect(page.locator(".note-page")).to_have_attribute("data-status", "active")
    expect(page.locator(".note-page")).to_have_attribute("data-version", "3")
    assert factories.note_row(owner, note.id).status == "active"
    assert errors == []


def test_move_a_note_then_undo(browser_site: str, page: Page):
    owner = _owner("mover")
    garden = factories.notebook(owner, "Garden")
    note = factories.note(owner, "Figs like sun.")
    errors = watch_console(page)
    sign_in(page, browser_site, "mover")
    page.goto(f"{browser_site}/notes/{note.id}/")
    page.get_by_role("link", name="Move", exact=True).click()
    page.get_by_label("Move to").select_option(label="Garden")
    page.get_by_role("button", name="Move note").click()
    expect(page.locator(".flash")).to_have_text("Moved. Undo")
    assert factories.note_row(owner, note.id).notebook_id == garden.id
    page.locator(".flash").get_by_role("button", name="Undo").click()
    expect(page.locator(".flash")).to_have_text("Moved.")
    expect(page.locator(".crumbs")).to_contain_text("Personal")
    assert factories.note_row(owner, note.id).notebook_id is None
    assert errors == []
