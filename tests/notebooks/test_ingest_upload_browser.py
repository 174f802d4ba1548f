"""Bringing notes in on the website, in real Chromium under the real CSP with a real
Celery worker on Redis (issue 22 item 1; issue 36 items 2.6 and 3.5): the upload answers
with its progress page before any worker has touched it, the page names the notebook,
lists every file it did not bring in with why, and *Open the notebook* shows the notes;
an empty library points to the import."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from grove.kernel.tenancy import tenant
from grove.models import Account
from notebooks.models import IngestUploadFile, Note, Notebook
from tests import factories
from tests.browser import PASSWORD, sign_in, watch_console
from tests.conftest import redis_url_or_skip
from tests.notebooks.test_ingest_upload import vault_zip

pytestmark = pytest.mark.slow


def test_a_zip_is_stored_at_once_then_unpacked_and_its_notes_are_a_click_away(
        browser_site: str, page: Page, celery_worker_on, tmp_path: Path, embedder):
    broker = redis_url_or_skip("redis://127.0.0.1:6379/13")
    account = Account.objects.create_user(username="uploader", password=PASSWORD)
    owner = factories.Actor.for_session(account.id)
    errors = watch_console(page)
    bundle = tmp_path / "vault.zip"
    bundle.write_bytes(vault_zip(**{"blank.md": ""}).getvalue())
    folder = tmp_path / "Field notes"
    (folder / "2026").mkdir(parents=True)
    (folder / "2026" / "june.md").write_text("# June\n\nThe melt started early.")
    (folder / "todo.md").write_text("- [ ] label the cores")
    (folder / ".groundignore").write_text("todo.md\n")
    # No worker yet: the job's wake-up waits in Redis.
    celery_worker_on.use_broker(broker, {})
    sign_in(page, browser_site, "uploader")
    page.goto(browser_site + "/settings/")
    page.get_by_role("link", name="Bring notes in").click()
    page.get_by_label("Into the notebook").fill("Vault")
    page.get_by_label("A zip file").set_input_files(str(bundle))
    page.get_by_role("button", name="Upload and ingest").click()

    # The request stored the upload and answered: its page, naming the notebook, before
    # anything of the zip was read.
    expect(page.get_by_role("heading", level=1)).to_have_text("Bringing notes into Vault")
    progress = page.locator("#progress")
    expect(progress).to_have_attribute("data-state", "queued")
    expect(progress).to_contain_text("Waiting for a worker…")
    with tenant(owner):
        assert not IngestUploadFile.objects.exists() and not Note.objects.exists()

    with celery_worker_on(broker, {}):
        expect(progress).to_have_attribute("data-state", "done", timeout=60_000)
        expect(progress).to_contain_text("4 of 4 files")  # blank.md among them
        expect(progress).to_contain_text("3 files brought in, 3 skipped (listed below)")
        expect(progress.locator('[data-count="created"]')).to_have_text("3")
        expect(progress).to_contain_text("Credentials replaced by markers: 1 aws-access-key")
        expect(progress.locator('[data-reason="hidden"]')).to_contain_text(
            ".obsidian/workspace.md")
        expect(progress.locator('[data-reason="empty: no text to bring in"]')).to_have_text(
            "empty: no text to bring in (1): blank.md")
        # Done, the page loads itself again: the sidebar counts what was brought in.
        expect(page.locator("a.notebook", has_text="Vault").locator(".count")).to_have_text(
            re.compile(r"^1 note"))

        # Open the notebook: the library, filtered to it (its sub-notebook's notes too).
        page.get_by_role("link", name="Open the notebook").click()
        with tenant(owner):
            vault = Notebook.objects.get(name="Vault", parent=None)
        expect(page).to_have_url(re.compile(rf"/\?notebook={vault.id}&sub=1$"))
        expect(page.get_by_role("heading", level=1)).to_have_text("Vault")
        expect(page.locator("li.note")).to_have_count(3)
        expect(page.locator("li.note .title", has_text="Guide")).to_be_visible()

        # A folder, chosen as a folder: its paths come along (grove.js), its
        # .groundignore applies.
        page.goto(browser_site + "/ingest/")
        page.get_by_label("Into the notebook").fill("Field")
        page.get_by_label("…or a folder").set_input_files(str(folder))
        page.get_by_role("button", name="Upload and ingest").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Bringing notes into Field")
        expect(progress).to_have_attribute("data-state", "done", timeout=60_000)
        expect(progress).to_contain_text("1 of 1 files")
        expect(progress).to_contain_text("ignored (1): todo.md")
        page.goto(browser_site + "/ingest/")
        expect(page.get_by_role("link", name="Into Field")).to_be_visible()
        expect(page.get_by_role("link", name="Into Vault")).to_be_visible()
    with tenant(owner):
        field = Notebook.objects.get(name="Field", parent=None)
        subfolder = Notebook.objects.get(parent=field)
        june = Note.objects.get(notebook=subfolder)
    assert subfolder.name == "2026" and june.content.startswith("# June")
    assert errors == []


def test_the_empty_library_points_to_the_import(browser_site: str, page: Page):
    Account.objects.create_user(username="newcomer", password=PASSWORD)
    errors = watch_console(page)
    sign_in(page, browser_site, "newcomer")
    empty = page.locator("li.empty")
    expect(empty).to_contain_text("No notes here yet.")
    empty.get_by_role("link", name="import a folder or a zip").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Bring notes in")
    expect(page.get_by_label("Into the notebook")).to_be_visible()
    assert errors == []
