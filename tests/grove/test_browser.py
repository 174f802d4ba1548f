"""The stack end to end in real Chromium: owner setup, notebooks and notes, sign out."""

import re

import pytest
from playwright.sync_api import Page, expect

from notebooks import selectors
from tests import factories

pytestmark = pytest.mark.slow

PASSWORD = "a long enough passphrase 42"


def test_owner_sets_up_grove_and_keeps_notes(browser_site: str, page: Page):
    page.goto(browser_site + "/")
    expect(page).to_have_url(re.compile(r"/setup/$"))
    page.get_by_label("Username").fill("owner")
    page.locator("#id_password").fill(PASSWORD)
    page.get_by_label("Password again").fill(PASSWORD)
    page.get_by_role("button", name="Create owner account").click()
    expect(page.get_by_role("heading", name="Notebooks")).to_be_visible()

    page.get_by_label("Name").fill("Recipes")
    page.get_by_role("button", name="Create notebook").click()
    expect(page.locator("ul.notebooks")).to_contain_text("Recipes")

    page.get_by_label("Content").fill("Sourdough needs a 12-hour rise.")
    page.get_by_label("Kind").select_option("solution")
    page.get_by_label("Notebook").select_option(label="Recipes")
    page.get_by_role("button", name="Save note").click()
    note = page.locator("li.note").first
    expect(note).to_contain_text("Sourdough needs a 12-hour rise.")
    expect(note).to_contain_text("Recipes")

    # What the page shows is what the service layer stored.
    from grove.models import Account

    actor = factories.Actor.for_session(Account.objects.get(username="owner").id)
    [stored] = selectors.note_list(actor=actor)
    assert (stored.kind, stored.version, stored.source_agent) == ("solution", 1, "website")

    page.reload()
    expect(page.locator("li.note").first).to_contain_text("Sourdough")
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/login/$"))
    page.goto(browser_site + "/setup/")
    assert "Not Found" in page.content()


def test_phone_width_keeps_the_page_usable(browser_site: str, page: Page):
    from grove.models import Account

    Account.objects.create_user(username="phone", password=PASSWORD)
    page.set_viewport_size({"width": 375, "height": 740})
    page.goto(browser_site + "/login/")
    page.get_by_label("Username").fill("phone")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Save note")).to_be_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375


def _sign_in(page: Page, site: str, username: str) -> None:
    page.goto(site + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("button", name="Save note")).to_be_visible()


def test_markdown_renders_and_stored_scripts_never_run(browser_site: str, page: Page):
    from grove.models import Account
    from tests.notebooks.test_rendering import ATTACKS

    account = Account.objects.create_user(username="md", password=PASSWORD)
    owner = factories.Actor.for_session(account.id)
    content = "| step | done |\n|---|---|\n| bake | ~~no~~ |\n\n" + "\n\n".join(ATTACKS)
    note = factories.note(owner, content + '\n\n<img src=x onerror="window.pwned=1">')
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    _sign_in(page, browser_site, "md")
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
    _sign_in(page, browser_site, "keys")
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


def test_two_tabs_edit_conflict_then_restore_and_archive(browser_site: str, page: Page):
    from grove.models import Account

    account = Account.objects.create_user(username="tabs", password=PASSWORD)
    note = factories.note(factories.Actor.for_session(account.id), "Deploy on Fridays.")
    _sign_in(page, browser_site, "tabs")
    other = page.context.new_page()
    url = f"{browser_site}/notes/{note.id}/"
    page.goto(url)
    other.goto(url)

    page.get_by_label("Content").fill("Never deploy on Fridays.")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(".markdown")).to_contain_text("Never deploy on Fridays.")

    other.get_by_label("Content").fill("Deploy on Fridays after noon.")
    other.get_by_role("button", name="Save changes").click()
    expect(other.get_by_role("alert")).to_contain_text("changed this note")
    expect(other.locator(".markdown")).to_contain_text("Never deploy on Fridays.")
    expect(other.get_by_label("Content")).to_have_value("Deploy on Fridays after noon.")

    page.reload()
    page.locator('li[data-version="1"]').get_by_role("button",
                                                     name="Restore this revision").click()
    expect(page.locator(".markdown")).to_contain_text("Deploy on Fridays.")
    expect(page.locator("article")).to_have_attribute("data-version", "3")
    page.get_by_role("button", name="Archive").click()
    expect(page.locator(".status")).to_have_text("archived")
