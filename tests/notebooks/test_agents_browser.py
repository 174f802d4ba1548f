"""What agents read first, in real Chromium under the real CSP (SPEC §10, §11): visions
edited on the notebook page and on Settings, "What your agents read" for a connection,
the Activity page with its filter and infinite scroll — and hostile text in a vision or
a note that makes the browser fetch nothing remote and run nothing."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from notebooks import selectors, services
from tests import factories
from tests.browser import PASSWORD, sign_in, watch_console
from tests.factories import op

pytestmark = pytest.mark.slow

HOSTILE = ("# Plan\n\n<script>window.pwned = 1</script> <img src=https://evil.example/x "
           "onerror=\"window.pwned = 2\"> ![chart](https://evil.example/chart.png)\n\n"
           "[click](javascript:window.pwned=3)")


def _owner(username: str):
    from grove.models import Account

    account = Account.objects.create_user(username=username, password=PASSWORD)
    return factories.Actor.for_session(account.id)


def _off_site(page: Page, site: str) -> list[str]:
    """Every request the page makes to anywhere but Grove itself."""
    ours = urlsplit(site).netloc
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url)
            if urlsplit(r.url).netloc != ours and not r.url.startswith("data:") else None)
    return seen


def test_visions_are_written_and_edited_on_the_notebook_page_and_settings(
        browser_site: str, page: Page):
    owner = _owner("visions")
    garden = factories.notebook(owner, "Garden")
    errors = watch_console(page)
    sign_in(page, browser_site, "visions")

    page.goto(f"{browser_site}/notebooks/{garden.id}/")
    card = page.locator("#vision")
    expect(card).to_contain_text("No vision yet.")
    card.get_by_label("Vision (markdown)").fill("## Feed four people\n\nBy **2027**.")
    card.get_by_role("button", name="Save vision").click()
    expect(page.locator(".flash")).to_have_text("Vision saved.")
    expect(card.locator(".vision-text h2")).to_have_text("Feed four people")
    expect(card.locator(".card-head .meta")).to_contain_text("v1")
    expect(card.locator(".card-head .meta")).to_contain_text("by you")

    # A second tab saves first; this one's stale save keeps its draft beside the news.
    other = page.context.new_page()
    other_errors = watch_console(other)
    other.goto(f"{browser_site}/notebooks/{garden.id}/")
    card.locator("summary", has_text="Edit").click()
    card.get_by_label("Vision (markdown)").fill("Feed six people.")
    card.get_by_role("button", name="Save vision").click()
    expect(card.locator(".vision-text")).to_have_text("Feed six people.")
    other_card = other.locator("#vision")
    other_card.locator("summary", has_text="Edit").click()
    other_card.get_by_label("Vision (markdown)").fill("Feed five people.")
    other_card.get_by_role("button", name="Save vision").click()
    expect(other_card.get_by_role("alert")).to_contain_text("changed this vision")
    expect(other_card.locator(".vision-text")).to_have_text("Feed six people.")
    expect(other_card.get_by_label("Your draft")).to_have_value("Feed five people.")
    other_card.get_by_role("button", name="Save vision").click()
    expect(other_card.locator(".vision-text")).to_have_text("Feed five people.")
    other.close()
    assert other_errors == ["Failed to load resource: the server responded with a status "
                            "of 409 (Conflict)"]
    page.reload()
    history = card.locator(".vision-history")
    expect(history.locator("li")).to_have_count(3)
    history.locator('li[data-version="1"] summary').click()
    expect(history.locator('li[data-version="1"] pre')).to_contain_text("Feed four people")

    page.locator("details.account summary").click()
    page.get_by_role("link", name="Settings").click()
    account_card = page.locator("#vision")
    expect(account_card.get_by_role("heading", name="Account vision")).to_be_visible()
    account_card.get_by_label("Vision (markdown)").fill("Grow food, *not* lawns.")
    account_card.get_by_role("button", name="Save vision").click()
    expect(page).to_have_url(re.compile(r"/settings/#vision$"))
    expect(account_card.locator(".vision-text em")).to_have_text("not")
    assert selectors.vision_get(actor=owner).content == "Grow food, *not* lawns."
    assert errors == []


def test_what_your_agents_read_shows_a_connections_brief(browser_site: str, page: Page,
                                                         browser):
    from tests.api.conftest import new_key

    owner = _owner("briefs")
    garden = factories.notebook(owner, "Garden")
    taxes = factories.notebook(owner, "Taxes")
    services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                           content="The garden feeds four people.")
    factories.note(owner, "Tomatoes need eight hours of sun.", notebook_id=garden.id)
    factories.note(owner, "The tax return is due in January.", notebook_id=taxes.id)
    new_key(owner, personal=False, all_notebooks=False, notebooks=[garden.id])
    errors = watch_console(page)
    sign_in(page, browser_site, "briefs")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Activity").click()
    page.get_by_role("link", name="What your agents read").click()
    expect(page.get_by_role("heading", name="What your agents read")).to_be_visible()
    form = page.locator("#brief-form")
    expect(form.get_by_label("Connection")).to_have_value(re.compile(r"^[0-9a-f-]{36}$"))
    brief = page.locator("pre.brief-text")
    expect(brief).to_contain_text("# Brief for test key")
    expect(brief).to_contain_text("Tomatoes need eight hours of sun.")
    expect(brief).not_to_contain_text("tax return")
    form.get_by_label("Notebook").select_option(label="Garden")  # HTMX: the brief only
    expect(brief).to_contain_text("## Vision — Garden")
    expect(page).to_have_url(re.compile(f"notebook={garden.id}"))
    form.get_by_label("Notebook").select_option(label="Taxes")
    expect(page.locator("[data-refusal]")).to_contain_text("cannot read that notebook")
    form.get_by_label("Connection").select_option(label="You (website)")
    expect(brief).to_contain_text("The tax return is due in January.")
    assert errors == []

    # The browser's time zone fills the field nobody chose, and the brief follows it.
    tokyo = browser.new_context(timezone_id="Asia/Tokyo",
                                storage_state=page.context.storage_state())
    there = tokyo.new_page()
    tokyo_errors = watch_console(there)
    there.goto(browser_site + "/agents/brief/")
    expect(there.locator("pre.brief-text")).to_contain_text("(Asia/Tokyo)")
    expect(there.get_by_label("Time zone")).to_have_value("Asia/Tokyo")
    expect(there).to_have_url(re.compile(r"tz=Asia%2FTokyo"))
    there.goto(browser_site + "/agents/brief/?tz=UTC")  # a chosen zone stays
    expect(there.locator("pre.brief-text")).to_contain_text("(UTC)")
    tokyo.close()
    assert tokyo_errors == []


def test_activity_lists_an_agents_change_and_filters_by_connection(browser_site: str,
                                                                   page: Page):
    from grove.kernel.tenancy import tenant
    from grove.models import Connection

    owner = _owner("activity")
    agent = factories.connection(owner, all_notebooks=True, personal=True)
    with tenant(owner):
        Connection.objects.filter(id=agent.connection_id).update(name="Claude")
    garden = factories.notebook(owner, "Garden")
    for number in range(3):
        factories.note(owner, f"My note {number}", notebook_id=garden.id)
    written = factories.note(agent, "Claude wrote this today.", notebook_id=garden.id,
                             kind="decision")
    errors = watch_console(page)
    sign_in(page, browser_site, "activity")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Activity").click()
    expect(page.locator("#count")).to_contain_text("Showing 4 of 4 changes")
    filters = page.locator("#activity-filters")
    first = page.locator("li.change").first
    expect(first).to_contain_text("Claude wrote this today.")
    expect(first.locator(".who")).to_have_text("Claude")
    expect(first).to_contain_text("decision")
    filters.get_by_label("Who").select_option(label="Claude")
    expect(page.locator("#count")).to_contain_text("Showing 1 of 1 change")
    expect(page).to_have_url(re.compile(f"connection={agent.connection_id}"))
    filters.get_by_label("Who").select_option(label="Website (you)")
    expect(page.locator("li.change")).to_have_count(3)
    expect(page.locator("li.change")).not_to_contain_text(["Claude"])
    page.get_by_role("link", name="My note 2").click()
    expect(page.locator("[data-viewing]").first).to_have_attribute("data-viewing", "1")

    # Infinite scroll by the signed cursor: two pages of two (the "Load more" row is in
    # view at once, so the second page comes by itself).
    page.goto(browser_site + "/activity/?limit=2")
    page.locator("li.changes, ol.changes").scroll_into_view_if_needed()
    expect(page.locator("li.change")).to_have_count(4)
    expect(page.locator("li.more")).to_have_count(0)
    expect(page.locator("#count")).to_contain_text("Showing 4 of 4 changes")
    page.locator("li.change", has_text="Claude wrote this").get_by_role("link").click()
    expect(page).to_have_url(re.compile(f"/notes/{written.id}/\\?v=1$"))
    assert errors == []


def test_hostile_visions_and_notes_fetch_nothing_and_run_nothing(browser_site: str,
                                                                 page: Page):
    owner = _owner("hostile")
    garden = factories.notebook(owner, "Garden")
    services.vision_update(actor=owner, operation_id=op(), content=HOSTILE)
    services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                           content=HOSTILE)
    services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                           content=HOSTILE + "\n\nv2", expected_version=1)
    factories.note(owner, HOSTILE, notebook_id=garden.id)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    errors = watch_console(page)
    leaks = _off_site(page, browser_site)
    sign_in(page, browser_site, "hostile")
    for path in (f"/notebooks/{garden.id}/", "/settings/", "/agents/brief/?connection=website",
                 f"/agents/brief/?connection=website&notebook={garden.id}", "/activity/"):
        page.goto(browser_site + path)
        page.wait_for_load_state("networkidle")
        for link in page.locator("main .markdown a").all():
            if not (link.get_attribute("href") or "").startswith("http"):
                link.click(no_wait_after=True)  # what is left of javascript: links
        page.wait_for_timeout(200)
        assert page.evaluate("window.pwned === undefined"), path
        assert page.locator("main script, main img, main iframe").count() == 0, path
    page.goto(f"{browser_site}/notebooks/{garden.id}/")
    page.locator('#vision li[data-version="1"] summary').click()
    expect(page.locator('#vision li[data-version="1"] pre')).to_contain_text("<script>")
    page.goto(browser_site + "/agents/brief/?connection=website")
    expect(page.locator("pre.brief-text")).to_contain_text("<script>window.pwned = 1</script>")
    assert leaks == [] and dialogs == [] and errors == []


def test_phone_width_keeps_the_new_pages_usable(browser_site: str, page: Page):
    owner = _owner("phone-agents")
    garden = factories.notebook(owner, "Garden")
    services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                           content="| a | very | wide | table | with | many | columns |\n"
                                   "|---|---|---|---|---|---|---|\n| 1 | 2 | 3 | 4 | 5 | 6 | 7 |")
    factories.note(owner, "A-very-long-word-" * 12, notebook_id=garden.id)
    factories.connection(owner, all_notebooks=True)
    errors = watch_console(page)
    page.set_viewport_size({"width": 375, "height": 740})
    sign_in(page, browser_site, "phone-agents")
    for path in (f"/notebooks/{garden.id}/", "/settings/", "/agents/brief/",
                 "/agents/brief/?connection=website", "/activity/"):
        page.goto(browser_site + path)
        page.wait_for_load_state("networkidle")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, path
    assert errors == []
