"""Ask in real Chromium with a real Celery worker (Redis) and the fake OpenAI-compatible
provider: pick a note as the only source, ask, see the cited answer, click the citation
chip and land on the exact revision; edit the note and see "note changed since (v1 →
v2)"; re-ask and get an answer citing v2. No console errors (CSP included)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests import factories
from tests.ask.conftest import fake_provider
from tests.ask.test_ask import answer, index_all
from tests.browser import PASSWORD, sign_in, watch_console
from tests.conftest import redis_url_or_skip

pytestmark = pytest.mark.slow


def test_ask_click_a_citation_edit_and_see_the_change(browser_site: str, page: Page,
                                                      celery_worker_on):
    from grove.models import Account

    broker = redis_url_or_skip("redis://127.0.0.1:6379/13")
    account = Account.objects.create_user(username="asker", password=PASSWORD)
    me = factories.Actor.for_session(account.id)
    note = factories.note(me, "The boiler is serviced every October by Hendrik.")
    factories.note(me, "Hendrik also fixed the garden tap.")
    index_all(me)
    cite_v1, cite_v2 = f"note:{note.id}@1", f"note:{note.id}@2"
    with fake_provider(timeout=5.0) as provider, celery_worker_on(broker, {}):
        errors = watch_console(page)
        sign_in(page, browser_site, "asker")
        page.locator("nav.menu").get_by_role("link", name="Ask").click()
        expect(page.get_by_role("heading", name="Ask your notes")).to_be_visible()

        # The source picker: find the note, keep only it.
        page.locator(".sources-picker summary").click()
        page.get_by_placeholder("Find a note to add…").fill("boiler")
        expect(page.locator("#picker .pick")).to_have_count(1)
        page.locator("#picker input[type=checkbox]").check()
        page.get_by_label("Only these sources").check()
        page.get_by_label("Question").fill("When is the boiler serviced?")
        provider.chat_replies = [answer("answered", ("Every October, by Hendrik.", [cite_v1]))]
        page.get_by_role("button", name="Ask", exact=True).click()

        turn = page.locator("li.turn").first
        expect(turn).to_have_attribute("data-status", "completed", timeout=30_000)
        expect(turn.locator(".block")).to_contain_text("Every October, by Hendrik.")
        expect(turn.locator(".coverage")).to_contain_text("everything picked was read")
        prompt = str(provider.requests[-1]["body"]["messages"])
        assert "garden tap" not in prompt  # only the picked note was sent
        conversation_url = page.url

        chip = turn.locator("a.chip")
        expect(chip).to_have_text("1")
        chip.click()
        expect(page).to_have_url(re.compile(rf"/notes/{note.id}/\?v=1$"))
        expect(page.locator(".revision-banner")).to_contain_text("the current version")
        expect(page.locator(".note-page .markdown")).to_contain_text("every October")

        page.get_by_role("link", name="Edit").click()
        page.get_by_label("Title").fill("The boiler is serviced every November by Hendrik.")
        page.get_by_role("button", name="Save changes").click()
        expect(page.locator(".note-page")).to_have_attribute("data-version", "2")

        page.goto(conversation_url)
        expect(page.locator(".badge.changed")).to_have_text("note changed since (v1 → v2)")
        provider.chat_replies = [answer("answered", ("Every November now.", [cite_v2]))]
        page.get_by_role("button", name="Re-ask with the notes as they are now").click()
        second = page.locator("li.turn").nth(1)
        expect(second).to_have_attribute("data-status", "completed", timeout=30_000)
        expect(second.locator(".block")).to_contain_text("Every November now.")
        expect(second.locator("a.chip")).to_have_attribute("href",
                                                           f"/notes/{note.id}/?v=2")
        expect(second.locator(".badge.changed")).to_have_count(0)
    assert errors == []
