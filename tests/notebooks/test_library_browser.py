"""The website end to end in real Chromium (headless, Debian's package): the library
flow, keyboard and infinite scroll, notebook management, markdown safety, API keys,
phone width. Chromium reports CSP violations as console errors, which fail the flow."""

import re

import pytest
from playwright.sync_api import Page, expect

from notebooks import selectors
from tests import factories
from tests.browser import PASSWORD, sign_in, watch_console

pytestmark = pytest.mark.slow


FLOW_NOTE = ("## Oven calibration\n\n| setting | real |\n|:--|--:|\n| 200 °C | 212 °C |\n"
             "| 240 °C | 251 °C |\n\nSet the dial 10 °C low.")


def test_the_whole_library_flow(browser_site: str, page: Page):
    """Owner setup → notebook → a note with a markdown table → search finds it → a
    conflicting edit from a second tab → restore an old revision → archive → the archived
    filter shows it → an API key — with no console error (CSP violations included)."""
    from grove.models import Account

    errors = watch_console(page)
    first = page.goto(browser_site + "/")
    expect(page).to_have_url(re.compile(r"/setup/$"))
    assert "script-src 'self'" in first.all_headers()["content-security-policy"]
    page.get_by_label("Username").fill("owner")
    page.locator("#id_password").fill(PASSWORD)
    page.get_by_label("Password again").fill(PASSWORD)
    page.get_by_role("button", name="Create owner account").click()
    expect(page.get_by_role("heading", name="All notes")).to_be_visible()

    page.get_by_role("link", name="+ New notebook").click()
    page.get_by_label("Name").fill("Kitchen")
    page.get_by_role("button", name="Create notebook").click()
    expect(page.get_by_role("heading", name="Kitchen")).to_be_visible()
    expect(page.locator(".sidebar")).to_contain_text("Kitchen")

    page.get_by_role("link", name="New note").first.click()
    expect(page.locator("#id_notebook option:checked")).to_have_text("Kitchen")
    page.get_by_label("Content").fill(FLOW_NOTE)
    page.get_by_label("Kind").select_option("fact")
    page.get_by_role("button", name="Save note").click()
    expect(page.locator(".markdown table")).to_contain_text("251 °C")
    expect(page.locator(".markdown td.align-right").first).to_have_text("212 °C")
    note_url = page.url

    actor = factories.Actor.for_session(Account.objects.get(username="owner").id)
    [stored] = selectors.note_list(actor=actor)
    assert (stored.kind, stored.version, stored.source_agent) == ("fact", 1, "website")

    # Search as you type: the list is replaced in place (HTMX), the URL follows.
    factories.note(actor, "Bread needs a long cold rise.")
    page.goto(browser_site + "/")
    expect(page.locator("#count")).to_have_text(re.compile(r"Showing 2 of 2 notes"))
    page.keyboard.press("/")
    expect(page.locator("#q")).to_be_focused()
    page.keyboard.type("calibration")
    expect(page.locator("#count")).to_contain_text("Showing 1 of 1 note matching “calibration”")
    expect(page).to_have_url(re.compile(r"q=calibration"))
    expect(page.locator("li.note mark").first).to_have_text(re.compile("calibration", re.I))
    page.locator("li.note a.title").first.click()
    expect(page).to_have_url(note_url)

    # Two tabs: the second, stale edit is a conflict that keeps its draft. The editor
    # holds the first line as the title and the rest below it.
    other = page.context.new_page()
    other_errors = watch_console(other)
    other.goto(note_url)
    title, body = FLOW_NOTE.split("\n", 1)
    page.get_by_role("link", name="Edit").click()
    expect(page.get_by_label("Title")).to_have_value(title)
    page.get_by_label("Content").fill(body.replace("10 °C low", "11 °C low"))
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(".markdown")).to_contain_text("11 °C low")
    other.get_by_role("link", name="Edit").click()
    other.get_by_label("Content").fill(body.replace("10 °C low", "12 °C low"))
    other.get_by_role("button", name="Save changes").click()
    expect(other.get_by_role("alert")).to_contain_text("changed this note")
    expect(other.locator(".markdown")).to_contain_text("11 °C low")
    expect(other.get_by_label("Content")).to_have_value(re.compile("12 °C low"))
    other.close()

    # The diff between v1 and v2, then restore v1.
    page.get_by_role("link", name="History").click()
    page.get_by_label("From version").fill("1")
    page.get_by_label("To version").fill("2")
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("pre.diff .del")).to_contain_text("10 °C low")
    expect(page.locator("pre.diff .add")).to_contain_text("11 °C low")
    page.locator('li[data-version="1"]').get_by_role("button",
                                                     name="Restore this revision").click()
    expect(page.locator(".markdown")).to_contain_text("10 °C low")
    expect(page.locator("article")).to_have_attribute("data-version", "3")

    page.get_by_role("button", name="Archive").click()
    expect(page.locator(".status")).to_have_text("archived")
    page.goto(browser_site + "/")
    expect(page.locator("#count")).to_have_text(re.compile(r"Showing 1 of 1 note\b"))
    page.get_by_label("Status").select_option("archived")
    expect(page.locator("#count")).to_contain_text("Showing 1 of 1 archived note")
    expect(page.locator("li.note")).to_contain_text("Oven calibration")
    expect(page).to_have_url(re.compile(r"status=archived"))

    page.get_by_role("link", name="Connections").click()
    page.get_by_label("Name").fill("kitchen agent")
    page.get_by_label("Only the notebooks ticked below").check()
    page.get_by_label("Kitchen").check()
    page.get_by_role("button", name="Create key").click()
    assert page.get_by_label("New API key").input_value().startswith("grv_")
    expect(page.locator("table.connections")).to_contain_text("Kitchen")
    assert errors == []
    # The stale tab's only complaint is the intended 409 answer to its save.
    assert other_errors == ["Failed to load resource: the server responded with a status "
                            "of 409 (Conflict)"]

    page.locator("details.account summary").click()
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/login/$"))
    assert page.goto(browser_site + "/setup/").status == 404


def test_phone_width_keeps_the_pages_usable(browser_site: str, page: Page):
    from grove.models import Account

    account = Account.objects.create_user(username="phone", password=PASSWORD)
    note = factories.note(factories.Actor.for_session(account.id),
                          "| a | very | wide | table | with | many | columns |\n"
                          "|---|---|---|---|---|---|---|\n| 1 | 2 | 3 | 4 | 5 | 6 | 7 |")
    page.set_viewport_size({"width": 375, "height": 740})
    sign_in(page, browser_site, "phone")
    for path in ("/", f"/notes/{note.id}/", "/connections/", "/settings/", "/notes/new"):
        page.goto(browser_site + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, path


def test_keyboard_shortcuts_and_infinite_scroll(browser_site: str, page: Page):
    from grove.models import Account

    account = Account.objects.create_user(username="keys-nav", password=PASSWORD)
    actor = factories.Actor.for_session(account.id)
    for number in range(1, 31):
        factories.note(actor, f"Note number {number:02d}")
    sign_in(page, browser_site, "keys-nav")
    expect(page.locator("#count")).to_have_text(re.compile(r"Showing 25 of 30 notes"))
    page.locator("li.more").scroll_into_view_if_needed()
    expect(page.locator("#count")).to_have_text(re.compile(r"Showing 30 of 30 notes"))
    expect(page.locator("li.note")).to_have_count(30)
    expect(page.locator("li.more")).to_have_count(0)

    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    expect(page.locator("li.note.selected")).to_contain_text("Note number 30")
    page.keyboard.press("j")
    expect(page.locator("li.note.selected")).to_contain_text("Note number 29")
    page.keyboard.press("Enter")
    expect(page.locator(".markdown")).to_have_text("Note number 29")
    page.keyboard.press("e")
    expect(page.get_by_label("Content")).to_be_focused()
    page.get_by_label("Content").press("Escape")
    page.locator("h2").first.click()
    page.keyboard.press("n")
    expect(page).to_have_url(re.compile(r"/notes/new"))
    # "e" on the list opens the selected note's editor, focused.
    page.goto(browser_site + "/")
    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("j")
    page.keyboard.press("e")
    expect(page).to_have_url(re.compile(r"/notes/[0-9a-f-]{36}/#edit$"))
    expect(page.get_by_label("Title")).to_have_value("Note number 30")
    expect(page.get_by_label("Content")).to_be_focused()


def test_notebooks_are_renamed_moved_archived_restored_and_deleted(browser_site: str,
                                                                   page: Page):
    from grove.models import Account

    account = Account.objects.create_user(username="shelves", password=PASSWORD)
    actor = factories.Actor.for_session(account.id)
    work = factories.notebook(actor, "Work")
    trips = factories.notebook(actor, "Trips")
    for text in ("Flight at 9.", "Hotel booked."):
        factories.note(actor, text, notebook_id=trips.id)
    sign_in(page, browser_site, "shelves")
    page.goto(f"{browser_site}/notebooks/{trips.id}/")
    page.get_by_label("Name").fill("Travel")
    page.get_by_label("Inside").select_option(label="Work")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".flash")).to_have_text("Notebook saved.")
    expect(page.locator('.sidebar li[data-depth="1"] .name')).to_have_text("Travel")
    # A notebook cannot be moved inside its own subtree: Travel is not offered for Work.
    page.goto(f"{browser_site}/notebooks/{work.id}/")
    expect(page.locator("#id_parent option")).to_have_text(["(top level)"])
    expect(page.locator("[data-count=notebooks]")).to_have_text("2")
    expect(page.locator("[data-count=notes]")).to_have_text("2")
    page.locator("form[action$='/archive'] input[name=confirm]").check()
    page.get_by_role("button", name="Archive notebook").click()
    expect(page.locator(".flash")).to_have_text("Archived 2 notebooks and 2 notes. Undo")
    expect(page.locator(".sidebar details.archived")).to_contain_text("Work")
    page.locator("section form[action$='/restore'] input[name=confirm]").check()
    page.get_by_role("button", name="Restore notebook").click()
    expect(page.locator(".flash")).to_have_text("Restored 2 notebooks and 2 notes.")
    page.locator("form[action$='/delete'] input[name=confirm]").check()
    page.get_by_role("button", name="Delete notebook").click()
    expect(page.locator(".flash")).to_have_text(
        "Deleted 2 notebooks and 2 notes. Undo · Recently deleted")
    expect(page.locator(".sidebar")).not_to_contain_text("Work")
    expect(page.locator("#count")).to_have_text(re.compile("Showing 0 of 0 notes"))


def test_markdown_renders_and_stored_scripts_never_run(browser_site: str, page: Page):
    from grove.models import Account
    from tests.notebooks.test_rendering import ATTACKS

    account = Account.objects.create_user(username="md", password=PASSWORD)
    owner = factories.Actor.for_session(account.id)
    content = "| step | done |\n|---|---|\n| bake | ~~no~~ |\n\n" + "\n\n".join(ATTACKS)
    note = factories.note(owner, content + '\n\n<img src=x onerror="window.pwned=1">')
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    sign_in(page, browser_site, "md")
    page.goto(f"{browser_site}/notes/{note.id}/")
    expect(page.locator(".markdown table")).to_contain_text("bake")
    expect(page.locator(".markdown s")).to_have_text("no")
    for link in page.locator(".markdown a").all():
        link.click(no_wait_after=True)
    page.wait_for_timeout(300)
    assert dialogs == []
    assert page.evaluate("window.pwned === undefined")
    assert page.locator(".markdown script, .markdown iframe, .markdown svg").count() == 0


def test_an_api_key_is_made_on_the_connections_page(browser_site: str, page: Page):
    from django.test import Client

    from grove.models import Account
    from tests.api.conftest import Caller, data

    Account.objects.create_user(username="keys", password=PASSWORD)
    sign_in(page, browser_site, "keys")
    page.get_by_role("link", name="Connections").click()
    page.get_by_label("Name").fill("laptop agent")
    page.get_by_label("Every notebook, current and future").check()
    page.get_by_label("Personal notes").check()
    page.get_by_role("button", name="Create key").click()
    key = page.get_by_label("New API key").input_value()
    assert key.startswith("grv_")
    saved = Caller(Client(), key).post("/notes", {"content": "from the new key", "kind": "fact"})
    assert data(saved)["content"] == "from the new key"
    page.goto(browser_site + "/connections/")  # shown once: gone on the next visit
    expect(page.locator("table.connections")).to_contain_text("laptop agent")
    assert key not in page.content()


def test_without_javascript_reading_searching_paging_and_editing_work(browser_site: str,
                                                                      browser):
    from grove.models import Account

    account = Account.objects.create_user(username="nojs", password=PASSWORD)
    actor = factories.Actor.for_session(account.id)
    for number in range(1, 31):
        factories.note(actor, f"Plain note {number:02d} about walnuts")
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    sign_in(page, browser_site, "nojs")
    page.locator("#q").fill("walnuts")
    page.locator("#q").press("Enter")
    expect(page).to_have_url(re.compile(r"q=walnuts"))
    expect(page.locator("#count")).to_contain_text("Showing 25 of 30 notes matching")
    page.get_by_role("link", name="Load more").click()
    expect(page.locator("#count")).to_contain_text("Showing 30 of 30 notes matching")
    page.locator("li.note a.title").first.click()
    page.get_by_role("link", name="Edit").click()  # its panel opens by :target
    page.get_by_label("Title").fill("Walnuts keep for a year in the freezer.")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(".markdown")).to_have_text("Walnuts keep for a year in the freezer.")
    expect(page.locator(".flash")).to_have_text("Saved.")
    context.close()
