"""The Ground truth card on the notebook page, in real Chromium under the real CSP (SPEC
§10, §11): declare notes with the picker and a policy, see "declared at v1, now v2", keep
negative claims, and accept an agent's held change — which both agents then read."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from notebooks import selectors, services
from tests import factories
from tests.browser import sign_in, watch_console
from tests.factories import op
from tests.notebooks.test_agents_browser import HOSTILE, _off_site, _owner

pytestmark = pytest.mark.slow


def test_declare_review_and_accept_on_the_notebook_page(browser_site: str, page: Page):
    owner = _owner("truthful")
    ops = factories.notebook(owner, "Ops")
    contract = factories.note(owner, "# Order contract\n\n## Fields\nid, total", notebook_id=ops.id)
    runbook = factories.note(owner, "Deploys need a rollback plan.", kind="decision",
                             notebook_id=ops.id)
    rumour = factories.note(owner, "Someone said staging is db-stage-1.", notebook_id=ops.id)
    hostile = factories.note(owner, HOSTILE, notebook_id=ops.id)
    errors = watch_console(page)
    remote = _off_site(page, browser_site)
    sign_in(page, browser_site, "truthful")

    page.goto(f"{browser_site}/notebooks/{ops.id}/")
    card = page.locator("#truth")
    expect(card.locator(".card-head .meta")).to_have_text("none declared")
    card.get_by_label("Order contract").check()
    card.get_by_label("Deploys need a rollback plan.").check()
    card.get_by_label("Policy").select_option("restrict")
    card.get_by_role("button", name="Save declaration").click()
    expect(page.locator(".flash")).to_have_text("Declared 2 notes (restrict).")
    expect(card).to_have_attribute("data-policy", "restrict")
    expect(card.locator("ul.declared li")).to_have_count(2)
    expect(card.locator(f'li[data-note="{contract.id}"] .meta')).to_have_text(
        "declared at v1")

    card.get_by_label("A claim known to be false").fill("Staging is db-stage-1.")
    card.get_by_role("button", name="Add").click()
    expect(card.locator("ul.negatives li")).to_contain_text("Staging is db-stage-1.")

    # Two agents with their own keys read the same declared notes; one proposes a change.
    first = factories.connection(owner, notebooks=[ops.id])
    second = factories.connection(owner, notebooks=[ops.id])
    for agent in (first, second):
        brief = selectors.brief_get(actor=agent, format="json")
        assert sorted(n.id for n in brief.truth.notes) == sorted(
            [contract.versioned_id, runbook.versioned_id])
        assert brief.truth.negatives == ["Staging is db-stage-1."]
        assert rumour.versioned_id not in brief.meta.returned_items
    held = services.note_update(actor=first, operation_id=op(), note_id=contract.id,
                                content="# Order contract\n\n## Fields\nid, total, currency")
    assert held.pending_revision is not None
    page.reload()
    change = card.locator(f'li[data-pending="{held.pending_revision.id}"]')
    expect(change).to_contain_text("proposes a change to Order contract")
    expect(change.locator("pre.proposed")).to_contain_text("currency")
    assert "currency" not in selectors.brief_get(actor=second, truth="full").markdown
    change.get_by_role("button", name="Accept").click()
    expect(page.locator(".flash")).to_have_text("Change accepted: the note is now v2.")
    expect(card.locator(f'li[data-note="{contract.id}"] .meta')).to_have_text(
        "declared at v1, now v2")
    for agent in (first, second):
        assert "id, total, currency" in selectors.brief_get(actor=agent,
                                                            truth="full").markdown

    # Hostile note text in the picker is text: nothing fetched, nothing run.
    hostile_choice = card.locator("label.choice").filter(
        has=page.locator(f'input[value="{hostile.id}"]'))
    expect(hostile_choice).to_contain_text("Plan")
    expect(card.locator("script")).to_have_count(0)
    assert page.evaluate("window.pwned === undefined")
    assert remote == [] and errors == []


def test_check_agents_writes_and_accept_a_held_new_note(browser_site: str, page: Page):
    """Turn checking on from the card; an agent's contradicting write — hostile markup
    included — waits as text for the owner, who accepts it into the notebook."""
    import json

    from tests.ask.conftest import fake_provider

    owner = _owner("checker")
    ops = factories.notebook(owner, "Ledger")
    euros = factories.note(owner, "Invoice totals are in euros.", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[euros.id])
    errors = watch_console(page)
    remote = _off_site(page, browser_site)
    sign_in(page, browser_site, "checker")
    with fake_provider(timeout=5.0) as provider:
        page.goto(f"{browser_site}/notebooks/{ops.id}/")
        card = page.locator("#truth")
        card.get_by_label("Check agents' facts, decisions and solutions").check()
        card.get_by_role("button", name="Save checking").click()
        expect(page.locator(".flash")).to_contain_text("are now checked")
        expect(card.locator(".card-head .meta")).to_contain_text("agents' writes checked")

        agent = factories.connection(owner, notebooks=[ops.id])
        provider.chat_replies = [json.dumps({"findings": [{
            "claim": "Totals are in dollars.", "finding": "contradicts",
            "note_id": euros.versioned_id, "why": "euros"}]})]
        text = f"Totals are in dollars. {HOSTILE}"
        saved = services.note_remember(actor=agent, operation_id=op(), content=text,
                                       kind="fact", notebook_id=ops.id)
        assert saved.note is None and saved.pending_revision is not None
    page.reload()
    held = card.locator(f'li[data-pending="{saved.pending_revision.id}"]')
    expect(held).to_have_attribute("data-verdict", "contradicts")
    expect(held).to_contain_text("wrote a new note")
    expect(held).to_contain_text("contradicts: Totals are in dollars.")
    expect(held.locator("pre.proposed")).to_contain_text("<img")  # shown as text
    held.get_by_role("button", name="Accept").click()
    expect(page.locator(".flash")).to_have_text("Note accepted: it is saved in this notebook.")
    listed = selectors.note_list(actor=agent, notebook_id=ops.id)
    assert text in [note.content for note in listed]
    expect(card.locator("script")).to_have_count(0)
    assert page.evaluate("window.pwned === undefined")
    assert remote == [] and errors == []
