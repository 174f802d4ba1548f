"""Notebooks the way people think of folders, in real Chromium under the real CSP: a
notebook's list can include its sub-notebooks (remembered in the URL), the sidebar counts
each notebook's notes and folds a parent's children away (remembered by the browser),
and the grant pickers say that a notebook's grant does not cover the ones inside it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests import factories
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow


def _work(username: str):
    """Work (3 notes) ─ Plans (2) ─ Q3 (1); Home (0)."""
    owner = _owner(username)
    work = factories.notebook(owner, "Work")
    plans = factories.notebook(owner, "Plans", parent=work.id)
    q3 = factories.notebook(owner, "Q3", parent=plans.id)
    factories.notebook(owner, "Home")
    for n in range(3):
        factories.note(owner, f"Work item {n}.", notebook_id=work.id)
    for n in range(2):
        factories.note(owner, f"Plan item {n}.", notebook_id=plans.id)
    factories.note(owner, "Q3 target.", notebook_id=q3.id)
    return owner, work, plans, q3


def test_a_notebook_lists_its_sub_notebooks_notes_when_asked(browser_site: str, page: Page):
    owner, work, plans, q3 = _work("folders")
    errors = watch_console(page)
    sign_in(page, browser_site, "folders")
    page.locator(".sidebar").get_by_role("link", name="Work").click()
    expect(page.locator("#count")).to_have_text(re.compile(r"Showing 3 of 3 notes"))
    toggle = page.get_by_label("Include sub-notebooks")
    expect(toggle).not_to_be_checked()

    toggle.check()  # HTMX: the list is replaced, the URL remembers it
    expect(page.locator("#count")).to_have_text(re.compile(r"Showing 6 of 6 notes"))
    expect(page).to_have_url(re.compile(rf"notebook={work.id}&sub=1"))
    expect(page.locator("ol.notes")).to_contain_text("Q3 target.")
    expect(page.locator("ol.notes li.note", has_text="Plan item 0.")).to_contain_text("Plans")

    page.reload()  # the URL is the state: the same list, the box still ticked
    expect(page.get_by_label("Include sub-notebooks")).to_be_checked()
    expect(page.locator("#count")).to_have_text(re.compile(r"Showing 6 of 6 notes"))

    page.get_by_label("Include sub-notebooks").uncheck()
    expect(page.locator("#count")).to_have_text(re.compile(r"Showing 3 of 3 notes"))
    expect(page).not_to_have_url(re.compile(r"sub=1"))
    # A notebook with nothing inside offers no such box.
    page.locator(".sidebar").get_by_role("link", name="Q3").click()
    expect(page.get_by_role("heading", name="Q3")).to_be_visible()
    expect(page.get_by_label("Include sub-notebooks")).to_have_count(0)
    assert errors == []


def test_the_sidebar_counts_notes_and_folds_a_parent_away(browser_site: str, page: Page):
    owner, work, plans, q3 = _work("sidebar")
    errors = watch_console(page)
    sign_in(page, browser_site, "sidebar")
    sidebar = page.locator(".sidebar")
    counts = {name: sidebar.locator(f"li[data-notebook] a:has(.name:text-is('{name}')) .count")
              for name in ("Work", "Plans", "Q3", "Home")}
    for name, count in (("Work", "3 notes"), ("Plans", "2 notes"), ("Q3", "1 note"),
                        ("Home", "0 notes")):
        expect(counts[name]).to_have_text(count)  # the number, and " notes" for readers
    q3_link = sidebar.get_by_role("link", name=re.compile(r"^Q3"))
    expect(q3_link).to_be_visible()

    # Fold Work away: its children are hidden, and stay so on the next page.
    branch = sidebar.locator(f'details.branch[data-notebook="{work.id}"]')
    branch.locator(":scope > summary").click(position={"x": 4, "y": 10})  # the marker
    expect(branch).not_to_have_attribute("open", "")
    expect(q3_link).to_be_hidden()
    page.goto(browser_site + "/")
    expect(page.get_by_role("heading", name="All notes")).to_be_visible()
    expect(branch).not_to_have_attribute("open", "")
    expect(sidebar.get_by_role("link", name=re.compile(r"^Plans"))).to_be_hidden()

    # The notebook shown is never folded away: Q3's page opens its parents.
    page.goto(f"{browser_site}/?notebook={q3.id}")
    expect(q3_link).to_be_visible()
    expect(q3_link).to_have_attribute("aria-current", "page")

    # Unfolded again, it stays open.
    page.goto(browser_site + "/")
    expect(q3_link).to_be_hidden()
    branch.locator(":scope > summary").click(position={"x": 4, "y": 10})
    expect(q3_link).to_be_visible()
    page.reload()
    expect(q3_link).to_be_visible()

    # A new notebook and its note count at once.
    garden = factories.notebook(owner, "Garden")
    factories.note(owner, "Tomatoes in May.", notebook_id=garden.id)
    page.reload()
    expect(sidebar.locator("li[data-notebook] a:has(.name:text-is('Garden')) .count")) \
        .to_have_text("1 note")
    assert errors == []


def test_without_javascript_every_parent_is_open_and_still_folds(browser_site: str, browser):
    owner, work, plans, q3 = _work("nojs")
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        sign_in(page, browser_site, "nojs")
        sidebar = page.locator(".sidebar")
        expect(sidebar.get_by_role("link", name=re.compile(r"^Q3"))).to_be_visible()
        sidebar.locator(f'details.branch[data-notebook="{plans.id}"] > summary') \
            .click(position={"x": 4, "y": 10})
        expect(sidebar.get_by_role("link", name=re.compile(r"^Q3"))).to_be_hidden()
        # The toggle is a plain form field: Apply sends it.
        page.goto(f"{browser_site}/?notebook={work.id}")
        page.get_by_label("Include sub-notebooks").check()
        page.get_by_role("button", name="Apply").click()
        expect(page).to_have_url(re.compile(r"sub=1"))
        expect(page.locator("#count")).to_have_text(re.compile(r"Showing 6 of 6 notes"))
    finally:
        context.close()


HINT = "Granting a notebook does not grant the notebooks inside it"


def _picker_says_and_ticks(page: Page, plans_id) -> None:
    """The picker on `page`: the hint, the tree of bare names, and "also tick its
    sub-notebooks" beside Work ticks Work, Plans and Q3 — and nothing else."""
    picker = page.locator("[data-notebook-tree]")
    expect(page.locator("#id_notebooks_helptext")).to_contain_text(HINT)
    # Bare names, nested: Q3 inside Plans inside Work; Home beside Work.
    work_item = picker.locator(":scope > ul > li", has=page.get_by_label("Work", exact=True))
    expect(work_item.locator(":scope > ul > li > label")).to_have_text(["Plans"])
    expect(work_item.locator(":scope > ul > li > ul > li > label")).to_have_text(["Q3"])
    expect(picker.locator(":scope > ul > li > label")).to_have_text(["Home", "Work"])
    expect(picker.get_by_role("button", name="Also tick the notebooks inside Q3")) \
        .to_have_count(0)  # a notebook with nothing inside has no such button
    work_item.get_by_role("button", name="Also tick the notebooks inside Work").click()
    for name in ("Work", "Plans", "Q3"):
        expect(picker.get_by_label(name, exact=True)).to_be_checked()
    expect(picker.get_by_label("Home", exact=True)).not_to_be_checked()
    # Beside Plans: only its own part of the tree.
    for name in ("Plans", "Q3"):
        picker.get_by_label(name, exact=True).uncheck()
    picker.get_by_role("button", name="Also tick the notebooks inside Plans").click()
    expect(picker.get_by_label("Q3", exact=True)).to_be_checked()
    expect(page.locator(f'input[name=notebooks][value="{plans_id}"]')).to_be_checked()


def test_the_key_and_grant_pickers_say_what_a_grant_covers(browser_site: str, page: Page):
    from grove.identity import selectors as identity

    owner, work, plans, q3 = _work("grants")
    errors = watch_console(page)
    sign_in(page, browser_site, "grants")
    page.goto(browser_site + "/connections/")
    _picker_says_and_ticks(page, plans.id)
    page.get_by_label("Name").fill("laptop")
    page.get_by_label("Only the notebooks ticked below").check()
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_label("New API key")).to_have_value(re.compile(r"^grv_"))
    [key] = identity.connection_overview(actor=owner).connections
    assert set(key.grant.notebooks) == {work.id, plans.id, q3.id}

    # Its grant page: the same tree, ticked as granted.
    page.goto(f"{browser_site}/connections/{key.id}/edit")
    picker = page.locator("[data-notebook-tree]")
    expect(page.locator("#id_notebooks_helptext")).to_contain_text(HINT)
    for name in ("Work", "Plans", "Q3"):
        expect(picker.get_by_label(name, exact=True)).to_be_checked()
    picker.get_by_label("Q3", exact=True).uncheck()
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".flash")).to_contain_text("Saved what laptop may do")
    [key] = identity.connection_overview(actor=owner).connections
    assert set(key.grant.notebooks) == {work.id, plans.id}
    assert errors == []


def test_the_approval_page_says_it_too(browser_site: str, page: Page):
    from urllib.parse import urlsplit

    from django.test import Client

    from grove.models import Account
    from tests.grove.identity.oauth_helpers import register
    from tests.grove.identity.test_oauth_approval import call, token_for
    from tests.mcp.helpers import error_of

    owner, work, plans, q3 = _work("approver")
    owner_web = Client()
    owner_web.force_login(Account.objects.get(username="approver"))
    token = token_for(owner_web, register(name="Claude"))["access_token"]
    url = error_of(call(token, "recall", {}))["approvalUrl"]
    errors = watch_console(page)
    sign_in(page, browser_site, "approver")
    parts = urlsplit(url)
    page.goto(f"{browser_site}{parts.path}?{parts.query}")
    expect(page.get_by_role("heading", name="Approve “Claude”?")).to_be_visible()
    _picker_says_and_ticks(page, plans.id)
    assert errors == []


def test_without_javascript_the_hint_shows_and_the_button_does_not(browser_site: str,
                                                                   browser):
    owner, work, plans, q3 = _work("plainpicker")
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        sign_in(page, browser_site, "plainpicker")
        page.goto(browser_site + "/connections/")
        expect(page.locator("#id_notebooks_helptext")).to_contain_text(HINT)
        expect(page.locator("[data-tick-children]").first).to_be_hidden()
        expect(page.get_by_label("Q3", exact=True)).to_be_visible()
    finally:
        context.close()
