"""A 150,000-character document in the library, in real Chromium under the real CSP
(issue 37, item 7): it opens, its editor takes the whole text and previews it, one
section is changed and saved as a new version, and History compares the two versions by
what changed — a few rows around the edit, the rest skipped — never two walls of text.
No console errors."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests import factories
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner
from tests.passages.test_sync import document

pytestmark = pytest.mark.slow


def test_a_long_document_opens_edits_previews_saves_and_diffs(browser_site: str, page: Page):
    owner = _owner("longreader")
    text = document(80)
    assert len(text) > 150_000
    note = factories.note(owner, text, kind="note")
    errors = watch_console(page)
    sign_in(page, browser_site, "longreader")
    page.goto(f"{browser_site}/notes/{note.id}/")
    expect(page.get_by_role("heading", name="Field manual", exact=True)).to_be_visible()
    expect(page.locator(".note-page .content h2")).to_have_count(80)
    expect(page.locator(".note-page .meta")).to_contain_text("note")

    page.goto(f"{browser_site}/notes/{note.id}/#edit")
    content = page.get_by_label("Content")
    expect(content).to_be_focused()
    body = content.input_value()
    assert len(body) > 149_000 and "## Section 79" in body
    expect(page.locator("#content-count")).to_contain_text("200,000")
    edited = body.replace("## Section 40\n\n", "## Section 40\n\nThe weir was rebuilt in May. ")
    content.fill(edited)
    preview = page.locator("#preview")
    expect(preview).to_contain_text("The weir was rebuilt in May.", timeout=15_000)
    expect(preview.locator("h2")).to_have_count(80)
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(".note-page")).to_have_attribute("data-version", "2", timeout=15_000)
    expect(page.locator(".note-page .content")).to_contain_text("The weir was rebuilt in May.")

    page.get_by_role("link", name="History").click()
    page.get_by_role("button", name="Compare").click()
    diff = page.locator("#diff pre.diff")
    expect(diff).to_be_visible()
    expect(diff.locator("span.add")).to_contain_text("The weir was rebuilt in May.")
    rows = diff.locator("span").count()
    assert rows < 20, rows  # the edit and a little context, not the document
    assert len(diff.inner_text()) < 10_000
    assert errors == []
