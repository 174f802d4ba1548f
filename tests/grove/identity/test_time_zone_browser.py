"""The time zone on Settings in real Chromium under the real CSP: typed in, or taken from
the browser with one click (grove.js), and a note page's times then read in it."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Browser, Page, expect

from tests import factories
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow


def _shown(moment, zone: str) -> str:
    local = moment.astimezone(ZoneInfo(zone))
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()}"


def test_a_zone_set_on_settings_is_the_one_note_pages_show(browser_site: str, page: Page,
                                                           browser: Browser):
    owner = _owner("traveller")
    note = factories.note(owner, "Book the ferry to Skye.")
    errors = watch_console(page)
    sign_in(page, browser_site, "traveller")
    page.goto(browser_site + f"/notes/{note.id}/")
    expect(page.locator("dl.facts")).to_contain_text(_shown(note.updated_at, "UTC"))

    page.goto(browser_site + "/settings/")
    card = page.locator("#time-zone")
    card.get_by_label("Time zone").fill("Asia/Kolkata")
    card.get_by_role("button", name="Save time zone").click()
    expect(page.locator(".flash")).to_contain_text("Times are now shown in Asia/Kolkata.")
    expect(card.locator("[data-time-zone]")).to_have_text("Asia/Kolkata")

    page.goto(browser_site + f"/notes/{note.id}/")
    updated = page.locator("dl.facts dd time").nth(1)
    expect(updated).to_have_text(_shown(note.updated_at, "Asia/Kolkata"))  # "… IST"
    expect(page.locator("ul.revisions li").first).to_contain_text(
        _shown(note.created_at, "Asia/Kolkata"))

    assert errors == []

    # A typo is refused where it was typed (400: the browser logs the status, nothing
    # else); the zone stays.
    page.goto(browser_site + "/settings/")
    card.get_by_label("Time zone").fill("Asia/Kolkatta")
    card.get_by_role("button", name="Save time zone").click()
    expect(card.locator(".errorlist")).to_contain_text("“Asia/Kolkatta” is not a time zone")
    expect(card.locator("[data-time-zone]")).to_have_text("Asia/Kolkata")
    assert [e for e in errors if "status of 400" not in e] == []

    # One click takes the browser's own zone (the button exists only with the script).
    auckland = browser.new_context(timezone_id="Pacific/Auckland",
                                   storage_state=page.context.storage_state())
    there = auckland.new_page()
    there_errors = watch_console(there)
    there.goto(browser_site + "/settings/")
    button = there.get_by_role("button", name="Use my browser's time zone (Pacific/Auckland)")
    expect(button).to_be_visible()
    button.click()
    expect(there.locator(".flash")).to_contain_text("Times are now shown in Pacific/Auckland.")
    there.goto(browser_site + f"/notes/{note.id}/")
    expect(there.locator("dl.facts dd time").nth(1)).to_have_text(
        _shown(note.updated_at, "Pacific/Auckland"))
    assert there_errors == []
    auckland.close()


def test_without_the_script_the_browser_button_stays_hidden(browser_site: str,
                                                            browser: Browser):
    _owner("plainreader")
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(browser_site + "/login/")
    page.get_by_label("Username").fill("plainreader")
    from tests.browser import PASSWORD

    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.goto(browser_site + "/settings/")
    expect(page.locator("button[data-browser-zone-for]")).to_be_hidden()
    page.locator("#time-zone").get_by_label("Time zone").fill("America/Sao_Paulo")
    page.get_by_role("button", name="Save time zone").click()
    expect(page.locator("#time-zone [data-time-zone]")).to_have_text("America/Sao_Paulo")
    context.close()
