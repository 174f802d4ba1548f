"""The owner gives a connection its home notebook on Connections (issue 39 item 3), in
real Chromium under the real CSP; the key then saves there without naming it."""

from __future__ import annotations

import pytest
from django.test import Client
from playwright.sync_api import Page, expect

from grove.kernel.tenancy import tenant
from notebooks.models import Note
from tests import factories
from tests.api.conftest import Caller, data, new_key
from tests.browser import sign_in, watch_console
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow


def test_the_owner_picks_a_home_and_the_key_saves_there(browser_site: str, page: Page):
    owner = _owner("homemaker")
    garden = factories.notebook(owner, "Garden")
    factories.notebook(owner, "Kitchen")
    key, actor = new_key(owner)
    errors = watch_console(page)
    sign_in(page, browser_site, "homemaker")
    page.goto(f"{browser_site}/connections/{actor.connection_id}/edit")
    page.get_by_label("Home notebook").select_option(label="Garden")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("main")).to_contain_text("Saved what test key may do")
    page.goto(f"{browser_site}/connections/{actor.connection_id}/edit")
    expect(page.get_by_label("Home notebook")).to_have_value(str(garden.id))
    page.screenshot(path="docs/screenshots/connection-home.png", full_page=True)
    saved = data(Caller(Client(), key).post("/notes", {"content": "Sow beans in May.",
                                                       "kind": "fact"}))
    with tenant(owner):
        assert Note.objects.get(id=saved["id"]).notebook_id == garden.id
    assert errors == []
