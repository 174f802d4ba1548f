"""Ask reads passages, not whole documents (issue 37, item 4), in real Chromium with a
real Celery worker and the fake OpenAI-compatible provider: a question about one section
of a long document sends the model that section's passage, cited as
`note:<id>@<v>#<n>` — never the whole document — and the answer's citation chip opens
the note at that version with the cited passage highlighted and in view. No console
errors (CSP included)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from passages.rules import pieces
from tests import factories
from tests.ask.conftest import fake_provider
from tests.ask.test_ask import answer, index_all
from tests.browser import PASSWORD, sign_in, watch_console
from tests.conftest import redis_url_or_skip
from tests.passages.test_sync import document

pytestmark = pytest.mark.slow

FACT = "The sluice keeper opens the north gate at dawn."


def test_a_cited_passage_is_what_the_model_saw_and_what_the_chip_shows(
        browser_site: str, page: Page, celery_worker_on):
    from grove.models import Account

    broker = redis_url_or_skip("redis://127.0.0.1:6379/13")
    account = Account.objects.create_user(username="reader", password=PASSWORD)
    me = factories.Actor.for_session(account.id)
    text = document(60).replace("## Section 44\n\n", f"## Section 44\n\n{FACT} ")
    note = factories.note(me, text, kind="note")
    index_all(me)
    cut = pieces("note", text)
    [cited] = [p for p in cut if FACT in p.text]
    cite = f"note:{note.id}@1#{cited.position}"
    with fake_provider(timeout=5.0) as provider, celery_worker_on(broker, {}):
        errors = watch_console(page)
        sign_in(page, browser_site, "reader")
        page.locator("nav.menu").get_by_role("link", name="Ask").click()
        page.get_by_label("Question").fill("When does the sluice keeper open the north gate?")
        provider.chat_replies = [answer("answered", ("At dawn.", [cite]))]
        page.get_by_role("button", name="Ask", exact=True).click()
        turn = page.locator("li.turn").first
        expect(turn).to_have_attribute("data-status", "completed", timeout=30_000)
        expect(turn.locator(".block")).to_contain_text("At dawn.")

        # The model was sent that passage under its citation, not the document.
        prompt = str(provider.requests[-1]["body"]["messages"])
        assert f'id=\\"{cite}\\"' in prompt or f'id="{cite}"' in prompt
        assert FACT in prompt
        far = next(p for p in cut if p.headings[-1:] == ("Section 3",))
        assert far.text[:200] not in prompt
        assert len(prompt) < len(text) // 4

        chip = turn.locator("a.chip")
        expect(chip).to_have_text("1")
        chip.click()
        expect(page).to_have_url(re.compile(
            rf"/notes/{note.id}/\?v=1&passage={cited.position}#passage-{cited.position}$"))
        shown = page.locator(f"#passage-{cited.position}")
        expect(shown).to_be_visible()
        expect(shown).to_contain_text(f"passage {cited.position} of {len(cut)}")
        expect(shown).to_contain_text("Field manual › Section 44")
        expect(shown).to_contain_text(FACT)
        expect(shown).to_be_in_viewport()
    assert errors == []
