"""Links on the note page, in real Chromium under the real CSP (issue 38 item 2): a
resolved link opens its note, at the heading it names; the note linked to lists the
linking note under Backlinks with the passage around the link; an unresolved link looks
missing and opens a new note with its title, and once that note is saved the link
resolves. No console errors."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests import factories
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow


def test_links_backlinks_and_a_missing_note_made_from_its_link(browser_site: str, page: Page):
    owner = _owner("linker")
    alpha = factories.note(owner, "# Alpha\n\nIntro.\n\n## Budget\n\nNine thousand.", kind="note")
    hub = factories.note(owner, "# Hub\n\nThe plan is in [[Alpha#Budget|the budget]]; "
                                "open questions live in [[Open questions]].", kind="note")
    errors = watch_console(page)
    sign_in(page, browser_site, "linker")
    page.goto(f"{browser_site}/notes/{hub.id}/")
    body = page.locator(".note-page .content")
    budget = body.get_by_role("link", name="the budget")
    expect(budget).to_have_class("wikilink")
    missing = body.get_by_role("link", name="Open questions")
    expect(missing).to_have_class("wikilink missing")

    budget.click()
    expect(page).to_have_url(f"{browser_site}/notes/{alpha.id}/#h-budget")
    expect(page.locator("#h-budget")).to_have_text("Budget")
    backlinks = page.get_by_role("region", name="Backlinks")
    expect(backlinks.get_by_role("link", name="Hub")).to_have_attribute(
        "href", f"/notes/{hub.id}/")
    expect(backlinks).to_contain_text("The plan is in the budget")

    page.goto(f"{browser_site}/notes/{hub.id}/")
    page.locator(".note-page .content").get_by_role("link", name="Open questions").click()
    expect(page.get_by_label("Title")).to_have_value("Open questions")
    page.get_by_label("Content").fill("Who signs off?")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Open questions", exact=True)).to_be_visible()
    expect(page.get_by_role("region", name="Backlinks")).to_contain_text("Hub")

    page.goto(f"{browser_site}/notes/{hub.id}/")
    expect(page.locator(".note-page .content").get_by_role("link", name="Open questions")
           ).to_have_class("wikilink")

    # The neighbourhood, drawn in the page: both notes linked from here, as links.
    graph = page.get_by_role("region", name="Linked notes")
    expect(graph.locator(f'a[href="/notes/{alpha.id}/"]')).to_have_count(1)
    expect(graph.locator("a.node")).to_have_count(2)

    # Typing [[ suggests notes by name; the keyboard picks one and closes the link.
    page.goto(f"{browser_site}/notes/{hub.id}/#edit")
    content = page.get_by_label("Content")
    content.press("End")
    content.press("Control+End")
    content.type(" Also [[op")
    listbox = page.get_by_role("listbox", name="Notes to link to")
    expect(listbox.get_by_role("option")).to_have_text(["Open questions"])
    content.press("Enter")
    assert content.input_value().endswith("Also [[Open questions]]")
    content.type(" and [[al")
    expect(listbox.get_by_role("option")).to_have_text(["Alpha"])
    content.press("ArrowDown")
    content.press("Escape")
    expect(listbox).to_have_count(0)
    assert content.input_value().endswith("and [[al")
    assert errors == []


def test_a_rename_and_a_move_keep_the_links_and_undo_takes_them_back(browser_site: str,
                                                                     page: Page):
    from grove.kernel.tenancy import tenant
    from notebooks.models import Note

    owner = _owner("renamer")
    projects = factories.notebook(owner, "Projects")
    factories.notebook(owner, "Archive")
    plan = factories.note(owner, "# Plan\n\nShip in May.", kind="note", notebook_id=projects.id)
    hub = factories.note(owner, "# Hub\n\nSee [[Plan]] and [[Projects/Plan|the plan]].",
                         kind="note")

    def hub_text() -> str:
        with tenant(owner):
            return Note.objects.get(id=hub.id).content

    errors = watch_console(page)
    sign_in(page, browser_site, "renamer")
    page.goto(f"{browser_site}/notes/{plan.id}/#edit")
    relink = page.get_by_label("Update the links to this note if its title changes")
    expect(relink).to_be_checked()
    page.get_by_role("textbox", name="Title").fill("# Launch plan")
    page.get_by_role("button", name="Save changes").click()
    flash = page.locator("#flash")
    expect(flash).to_contain_text("the links to it updated in 1 note")
    assert hub_text() == "# Hub\n\nSee [[Launch plan]] and [[Projects/Launch plan|the plan]]."
    flash.get_by_role("button", name="Undo").click()
    expect(flash).to_contain_text("Undone")
    assert hub_text() == "# Hub\n\nSee [[Plan]] and [[Projects/Plan|the plan]]."
    with tenant(owner):
        assert Note.objects.get(id=plan.id).content == "# Plan\n\nShip in May."

    # Moving it: the link that names its folder follows it; Undo moves both back.
    page.goto(f"{browser_site}/notes/{plan.id}/#move")
    expect(page.get_by_label("Update links that name its old place")).to_be_checked()
    page.get_by_label("Move to").select_option(label="Archive")
    page.get_by_role("button", name="Move note").click()
    expect(flash).to_contain_text("Moved, and the links to it updated in 1 note.")
    assert hub_text() == "# Hub\n\nSee [[Plan]] and [[Archive/Plan|the plan]]."
    flash.get_by_role("button", name="Undo").click()
    expect(page.locator("#flash")).to_contain_text("Moved")
    assert hub_text() == "# Hub\n\nSee [[Plan]] and [[Projects/Plan|the plan]]."
    assert errors == []


def test_an_answer_shows_the_source_it_reached_through_a_link(browser_site: str, page: Page):
    """Ask followed a link (issue 38 item 5): the answer's sources, as the owner reads
    them in the conversation, mark the linked note as reached through the link from the
    note that matched, and its chip opens that revision."""
    from tests.ask.conftest import fake_provider
    from tests.ask.helpers import generate, start, submit
    from tests.ask.test_ask import answer, index_all

    owner = _owner("follower")
    billing = factories.note(owner, "Billing is owned by the [[Payments squad]].", kind="note")
    squad = factories.note(owner, "# Payments squad\n\nDana Okafor is in charge.", kind="note")
    index_all(owner)
    with fake_provider(timeout=5.0) as provider:
        provider.chat_replies = [answer("answered", ("Dana Okafor.", [squad.versioned_id]))]
        conversation = start(owner)
        submit(owner, conversation, "Who owns billing?")
        generate(owner)
    errors = watch_console(page)
    sign_in(page, browser_site, "follower")
    page.goto(f"{browser_site}/ask/{conversation.id}/")
    sources = page.locator("ol.sources")
    expect(sources.locator("li").first).to_contain_text(
        "reached through a link from “Billing is owned by the Payments squad.”")
    expect(sources.locator("li").nth(1)).not_to_contain_text("reached")
    expect(sources.locator(f'a[href^="/notes/{billing.id}/"]')).to_have_count(1)
    sources.get_by_role("link", name=re.compile(r"^\[1\] Payments squad")).click()
    expect(page).to_have_url(re.compile(rf"/notes/{squad.id}/\?v=1$"))
    assert errors == []
