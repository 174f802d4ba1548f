"""Sharing in real Chromium: the owner creates a link on a note's page and on a
notebook's page, a logged-out visitor (a fresh browser context) reads exactly that,
the owner revokes it on the Shares page, and the visitor's next load is the 404."""

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from tests import factories
from tests.browser import PASSWORD, sign_in, watch_console

pytestmark = pytest.mark.slow


def test_share_open_logged_out_and_revoke(browser_site: str, page: Page, browser: Browser):
    from grove.models import Account

    account = Account.objects.create_user(username="sharer", password=PASSWORD)
    me = factories.Actor.for_session(account.id)
    book = factories.notebook(me, "Recipes")
    note = factories.note(me, "# Pancakes\n\nTwo eggs, **one cup** of flour.",
                          notebook_id=book.id)
    factories.note(me, "Private diary entry.")
    errors = watch_console(page)
    sign_in(page, browser_site, "sharer")
    page.goto(f"{browser_site}/notes/{note.id}/")
    page.get_by_role("link", name="Share", exact=True).click()
    page.get_by_role("button", name="Create public link").click()
    link = page.get_by_label("Public link").input_value()
    assert re.fullmatch(rf"{browser_site}/public/shares/[A-Za-z0-9_-]{{43}}", link)
    expect(page.locator(".share-box")).to_contain_text("Viewed 0 times")

    visitor = browser.new_context()  # no session cookie: a stranger with the link
    stranger = visitor.new_page()
    stranger_errors = watch_console(stranger)
    shown = stranger.goto(link)
    assert shown.status == 200 and shown.headers["x-robots-tag"] == "noindex, nofollow"
    expect(stranger.locator(".markdown strong")).to_have_text("one cup")
    expect(stranger.locator("body")).not_to_contain_text("Private diary")
    expect(stranger.locator("nav.menu")).to_have_count(0)  # no owner UI at all

    page.reload()
    expect(page.locator(".share-box")).to_contain_text("Viewed 1 time")
    page.goto(f"{browser_site}/notebooks/{book.id}/")
    page.get_by_role("button", name="Create public link").click()
    notebook_link = page.get_by_label("Public link").input_value()
    stranger.goto(notebook_link)
    expect(stranger.get_by_role("heading", name="Recipes")).to_be_visible()
    stranger.get_by_role("link", name="Pancakes").click()
    expect(stranger.locator(".markdown h1")).to_have_text("Pancakes")

    page.locator("details.account summary").click()
    page.get_by_role("link", name="Shared links").click()
    expect(page.locator("table.shares tbody tr")).to_have_count(2)
    row = page.locator("table.shares tbody tr", has_text="Note:")
    row.locator("summary", has_text="Revoke").click()  # one click only asks
    expect(page.locator("table.shares tbody tr")).to_have_count(2)
    assert stranger.goto(link).status == 200
    row.get_by_role("button", name="Revoke for good").click()
    expect(page.locator("table.shares tbody tr")).to_have_count(1)
    gone = stranger.goto(link)
    assert gone.status == 404
    expect(stranger.get_by_role("heading", name="This link opens nothing")).to_be_visible()
    assert stranger.goto(notebook_link).status == 200  # the other link still works
    visitor.close()
    assert errors == []
    # The one console error a visitor may see: the revoked link's own 404.
    assert all("status of 404" in e for e in stranger_errors) and len(stranger_errors) == 1
