"""Deleting the account in real Chromium under the real CSP: the final export is
offered first, a wrong password deletes nothing, the right one signs this browser out
and every link to the account stops working."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, expect

from grove.models import Account
from sharing.services import share_create
from tests import factories
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow


def test_the_owner_deletes_the_account(browser_site: str, page: Page):
    owner = _owner("leaving")
    note = factories.note(owner, "# Packing list\n\ntent, stove")
    share, _ = share_create(actor=owner, note_id=note.id)
    assert httpx.get(share.url).status_code == 200
    errors = watch_console(page)
    sign_in(page, browser_site, "leaving")

    page.goto(browser_site + "/settings/")
    page.locator("#delete-account").get_by_role("link", name="Delete this account…").click()
    expect(page.get_by_role("heading", name="Delete your account")).to_be_visible()
    with page.expect_download() as download:
        page.get_by_role("link", name="Download archive").click()
    assert download.value.suggested_filename.startswith("grove-archive-")

    page.get_by_label("Your password").fill("not my password")
    page.get_by_role("button", name="Delete my account").click()
    expect(page.locator(".errorlist")).to_contain_text("not your password")
    assert Account.objects.get(username="leaving").deleted_at is None

    from tests.browser import PASSWORD

    page.get_by_label("Your password").fill(PASSWORD)
    page.get_by_role("button", name="Delete my account").click()
    expect(page.get_by_role("heading", name="Your account was deleted")).to_be_visible()
    expect(page.locator("#deleted")).to_contain_text("1 share link")
    account = Account.objects.get(username="leaving")
    assert account.deleted_at is not None and not account.is_active

    # Signed out, and the password no longer signs in.
    page.goto(browser_site + "/settings/")
    expect(page).to_have_url(f"{browser_site}/login/?next=/settings/")
    page.get_by_label("Username").fill("leaving")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator(".errorlist")).to_be_visible()
    assert httpx.get(share.url).status_code == 404
    # Only the wrong password's answer (400) — no CSP violation, no script error.
    assert [e for e in errors if "status of 400" not in e] == []
