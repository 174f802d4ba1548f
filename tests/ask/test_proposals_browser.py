"""A merge proposal in real Chromium (CSP on, HTMX, a real Celery worker on Redis, the fake
OpenAI-compatible provider): the owner asks "merge my two notes about the staging
database", sees the preview and its diff, applies it, sees the survivor and the archived
original, undoes it and gets exactly the earlier versions back as new revisions."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from notebooks.models import Revision
from tests import factories
from tests.ask.conftest import fake_provider
from tests.ask.proposal_helpers import proposal, reply
from tests.browser import PASSWORD, sign_in, watch_console
from tests.conftest import redis_url_or_skip

pytestmark = pytest.mark.slow

FIRST = "Staging database: db-staging-1, rebuilt on Sundays."
SECOND = "The staging DB is rebuilt every Sunday at 02:00 from the nightly dump."
MERGED = "Staging database: db-staging-1, rebuilt every Sunday at 02:00 from the nightly dump."


def test_merge_apply_and_undo_in_the_browser(browser_site: str, page: Page, celery_worker_on):
    from grove.models import Account

    broker = redis_url_or_skip("redis://127.0.0.1:6379/13")
    account = Account.objects.create_user(username="merger", password=PASSWORD)
    me = factories.Actor.for_session(account.id)
    first, second = factories.note(me, FIRST), factories.note(me, SECOND)
    with fake_provider(timeout=5.0) as provider, celery_worker_on(broker, {}):
        errors = watch_console(page)
        sign_in(page, browser_site, "merger")
        page.goto(f"{browser_site}/ask/?note={first.id}&note={second.id}")
        expect(page.get_by_label("Only these sources")).to_be_checked()
        page.get_by_label("Question").fill("merge my two notes about the staging database")
        provider.chat_replies = [reply(first.versioned_id, proposal(
            "merge", [first.versioned_id, second.versioned_id], content=MERGED,
            summary="Both notes describe the staging rebuild; keep one."))]
        page.get_by_role("button", name="Ask", exact=True).click()

        turn = page.locator("li.turn").first
        expect(turn).to_have_attribute("data-status", "completed", timeout=30_000)
        card = turn.locator("article.proposal")
        expect(card).to_have_attribute("data-state", "proposed")
        expect(card.locator(".affected li")).to_have_count(2)
        expect(card.locator(".affected li").nth(0)).to_contain_text("keeps the merged content")
        expect(card.locator(".affected li").nth(1)).to_contain_text("archived")
        expect(card.locator("pre.diff .del")).to_have_text(f"- {FIRST}")
        expect(card.locator("pre.diff .add")).to_have_text(f"+ {MERGED}")
        expect(card.locator(".undo-note")).to_contain_text("restores the archived notes")
        conversation_url = page.url

        card.get_by_role("button", name="Apply").click()
        expect(card).to_have_attribute("data-state", "applied")
        expect(page.locator("#flash")).to_contain_text("Applied.")
        page.goto(f"{browser_site}/notes/{first.id}/")
        expect(page.locator(".note-page .markdown")).to_contain_text("from the nightly dump")
        page.goto(f"{browser_site}/notes/{second.id}/")
        expect(page.locator(".note-page")).to_contain_text("archived")

        page.goto(conversation_url)
        card = page.locator("article.proposal")
        card.get_by_role("button", name="Undo").click()
        expect(card).to_have_attribute("data-state", "undone")
        expect(page.locator("#flash")).to_contain_text("earlier versions are back")
        page.goto(f"{browser_site}/notes/{first.id}/")
        expect(page.locator(".note-page")).to_have_attribute("data-version", "3")
        expect(page.locator(".note-page .markdown")).to_contain_text("rebuilt on Sundays.")
    assert errors == []
    survivor = factories.revisions(me, first.id)
    assert [(r.version, r.content) for r in survivor] == [(1, FIRST), (2, MERGED), (3, FIRST)]
    original = factories.note_row(me, second.id)
    assert (original.status, original.version, original.content) == ("active", 3, SECOND)
    with factories.tenant(me):
        assert Revision.objects.filter(note_id=second.id).count() == 3
