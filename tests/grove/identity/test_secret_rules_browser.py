"""Secret hygiene in real Chromium under the real CSP (issue 22 item 5): the owner sets
the rules and a pattern on Settings, a credential typed into the editor is saved as a
marker with a warning, and a refusing rule keeps the draft with why."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from grove.models import Account
from tests import factories
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow

KEY = "AKIA" + "M3KD7QX2WZ9RB4TN"


def test_rules_on_settings_apply_to_the_editor(browser_site: str, page: Page):
    owner = _owner("keeper")
    note = factories.note(owner, "# Server\n\nrack 4")
    errors = watch_console(page)
    sign_in(page, browser_site, "keeper")
    page.goto(browser_site + "/settings/")
    card = page.locator("#credentials")
    expect(card.get_by_label("Agents saving on their own")).to_have_value("refuse")
    expect(card.get_by_label("Ingested files")).to_have_value("redact")
    card.get_by_label("Your own patterns").fill("door badge: BADGE-[0-9]{4}\nbroken: (a)\\1")
    card.get_by_role("button", name="Save credential rules").click()
    expect(card.locator(".errorlist")).to_contain_text("Pattern “broken” is not usable")
    assert Account.objects.get(username="keeper").secret_patterns == []
    card.get_by_label("Your own patterns").fill("door badge: BADGE-[0-9]{4}")
    card.get_by_role("button", name="Save credential rules").click()
    expect(page.locator(".flash")).to_contain_text("Credential rules saved")
    expect(card.get_by_label("Your own patterns")).to_have_value("door badge: BADGE-[0-9]{4}")

    page.goto(f"{browser_site}/notes/{note.id}/#edit")
    page.get_by_label("Content").fill(f"\nrack 4, key {KEY}, door BADGE-0042")
    page.get_by_role("button", name="Save").first.click()
    expect(page.locator(".flash")).to_contain_text(
        "Saved with a credential (aws-access-key, custom-door-badge) replaced by a marker")
    body = page.locator(".note-body, article").first
    expect(body).to_contain_text("[redacted: aws-access-key]")
    expect(body).to_contain_text("[redacted: custom-door-badge]")
    assert KEY not in page.content()
    assert KEY not in factories.note_row(owner, note.id).content

    # Refuse on explicit saves: the draft stays in the editor, with why.
    page.goto(browser_site + "/settings/")
    card.get_by_label("Saves you or an agent make on request").select_option("refuse")
    card.get_by_role("button", name="Save credential rules").click()
    expect(page.locator(".flash")).to_contain_text("Credential rules saved")
    page.goto(f"{browser_site}/notes/new")
    page.get_by_label("Content").fill(f"new key {KEY}")
    page.get_by_role("button", name="Save").first.click()
    expect(page.locator(".errorlist, .form-error, [role=alert]").first).to_contain_text(
        "this account refuses explicit saves that hold credentials")
    expect(page.get_by_label("Content")).to_have_value(f"new key {KEY}")
    assert [e for e in errors if "status of 400" not in e] == []
