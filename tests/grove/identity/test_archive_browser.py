"""Moving an account on the website, in real Chromium under the real CSP (issue 22 item
4): download the archive on Settings as one account, import it as another (empty)
account, find the notes, their history and the conversation there; a second import
into the now full account is refused and changes nothing."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import Browser, Page, expect

from ask.services import conversation_create
from grove.kernel.tenancy import tenant
from notebooks import services
from notebooks.models import Note, Revision
from tests import factories
from tests.browser import sign_in, watch_console
from tests.factories import op
from tests.notebooks.test_agents_browser import _owner

pytestmark = pytest.mark.slow


def test_download_an_archive_and_import_it_as_another_account(browser_site: str, page: Page,
                                                               browser: Browser, tmp_path):
    alice = _owner("mover")
    garden = factories.notebook(alice, "Garden")
    note = factories.note(alice, "Beans by the fence.", notebook_id=garden.id)
    services.note_update(actor=alice, operation_id=op(), note_id=note.id,
                         content="Beans by the south fence.")
    conversation_create(actor=alice, conversation_id=uuid.uuid4(), title="Planting")
    errors = watch_console(page)
    sign_in(page, browser_site, "mover")
    page.goto(browser_site + "/settings/")
    expect(page).to_have_title("Settings · Grove")
    with page.expect_download() as downloading:
        page.locator("#archive").get_by_role("link", name="Download archive").click()
    archive = tmp_path / downloading.value.suggested_filename
    downloading.value.save_as(archive)
    assert archive.name.startswith("grove-archive-") and archive.stat().st_size > 0

    bob = _owner("receiver")
    other = browser.new_context()
    there = other.new_page()
    there_errors = watch_console(there)
    sign_in(there, browser_site, "receiver")
    there.goto(browser_site + "/settings/")
    card = there.locator("#archive")
    card.get_by_label("Archive file").set_input_files(str(archive))
    card.get_by_role("button", name="Import archive").click()
    expect(there.locator(".flash")).to_contain_text(
        "Imported the archive: 1 notebooks, 1 notes, 2 revisions, 1 conversations")
    with tenant(bob):
        moved = Note.objects.get()
        assert moved.content == "Beans by the south fence." and moved.id != note.id
        assert Revision.objects.filter(note=moved).count() == 2
    there.goto(browser_site + f"/notes/{moved.id}/")
    expect(there.locator("body")).to_contain_text("Beans by the south fence.")
    there.get_by_role("link", name="Ask").first.click()
    expect(there.locator("body")).to_contain_text("Planting")

    # Into an account that has notes now: refused, nothing changes.
    there.goto(browser_site + "/settings/")
    card.get_by_label("Archive file").set_input_files(str(archive))
    card.get_by_role("button", name="Import archive").click()
    expect(there.locator(".flash")).to_contain_text(
        "Nothing was imported: An archive goes into an account with no notebooks, notes")
    with tenant(bob):
        assert Note.objects.count() == 1
    assert errors == [] and there_errors == []
    other.close()
