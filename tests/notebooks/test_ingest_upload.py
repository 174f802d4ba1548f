"""Folder and zip uploads ingested by a background job (issue 22 item 1,
`notebooks.services.ingest_upload`): the service and its job on real PostgreSQL, bad
uploads refused with nothing written, another account's upload invisible; and the page
in real Chromium under the real CSP with a real Celery worker on Redis."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from grove.kernel import jobs
from grove.kernel.errors import Forbidden, Invalid, NotFound
from grove.kernel.tenancy import tenant
from grove.models import Account
from notebooks.models import IngestUpload, IngestUploadFile, Note, Notebook
from notebooks.services.ingest_upload import (
    INGEST_UPLOAD,
    ingest_upload_get,
    ingest_upload_start,
)
from tests import factories
from tests.browser import PASSWORD, sign_in, watch_console
from tests.conftest import redis_url_or_skip
from tests.notebooks.test_ingest import index_all

KEY = "AKIA" + "P2LX9QW4TM7RZ3KD"


def vault_zip(**extra: str) -> io.BytesIO:
    files = {"guide.md": "---\ntags: [field]\n---\n# Guide\n\nKeep the samples dry.",
             "notes/day-1.md": "Day one on the glacier.",
             "notes/keys.md": f"The CI key is {KEY}.",
             ".obsidian/workspace.md": "layout", "photo.jpg": "jpeg", **extra}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    buffer.seek(0)
    return buffer


def run_jobs(actor) -> None:
    while jobs.run_batch(account_id=actor.account_id, kind=INGEST_UPLOAD):
        pass


@pytest.mark.django_db
def test_an_upload_is_ingested_by_its_job_and_a_second_one_writes_nothing(embedder):
    owner = factories.owner("alice")
    started = ingest_upload_start(
        actor=owner, notebook="Vault", name="vault.zip", subfolders=True,
        archive=vault_zip(**{"diary.md": "Public part.<private>PIN 4821</private>"}))
    assert (started.state, started.total_files, started.done_files) == ("queued", 4, 0)
    with tenant(owner):  # what waits for the job holds nothing private, no credential
        waiting = [bytes(c).decode() for c in
                   IngestUploadFile.objects.values_list("content", flat=True)]
    assert "Public part." in waiting and not any("4821" in t or KEY in t for t in waiting)
    assert started.skipped == {"hidden": [".obsidian/workspace.md"],
                               "not a text note": ["photo.jpg"]}
    with tenant(owner):
        assert IngestUploadFile.objects.count() == 4 and Note.objects.count() == 0
    run_jobs(owner)
    done = ingest_upload_get(actor=owner, upload_id=started.id)
    assert (done.state, done.done_files, done.failed_files) == ("done", 4, 0)
    assert done.counts["created"] == 4 and done.redacted == {"aws-access-key": 1}
    with tenant(owner):
        assert IngestUploadFile.objects.count() == 0
        contents = set(Note.objects.values_list("content", flat=True))
        assert set(Notebook.objects.values_list("name", flat=True)) == {"Vault", "notes"}
    assert "The CI key is [redacted: aws-access-key]." in contents
    index_all(owner)
    assert embedder.seen and not any(KEY in text for text in [*contents, *embedder.seen])
    again = ingest_upload_start(actor=owner, notebook="Vault", archive=vault_zip(),
                                name="vault.zip", subfolders=True)
    run_jobs(owner)
    second = ingest_upload_get(actor=owner, upload_id=again.id)
    assert second.counts == {"created": 0, "updated": 0, "retagged": 0, "unchanged": 3,
                             "removed": 0}  # diary.md is not in this zip: not touched


@pytest.mark.django_db
def test_bad_uploads_are_refused_and_write_nothing():
    owner = factories.owner("bob")
    agent = factories.connection(owner, all_notebooks=True)
    before = factories.table_counts(owner.account_id)
    for archive, code in ((io.BytesIO(b"not a zip at all"), "invalid_upload"),
                          (_only_ignored(), "nothing_to_ingest")):
        with pytest.raises(Invalid) as refused:
            ingest_upload_start(actor=owner, notebook="Vault", archive=archive, name="x")
        assert refused.value.code == code
    with pytest.raises(Invalid) as refused:
        ingest_upload_start(actor=owner, notebook=" ", archive=vault_zip(), name="x")
    assert refused.value.code == "notebook_required"
    with pytest.raises(Forbidden):  # the website's upload: the owner, signed in
        ingest_upload_start(actor=agent, notebook="Vault", archive=vault_zip(), name="x")
    assert factories.table_counts(owner.account_id) == before


def _only_ignored() -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(".groundignore", "*.md\n")
        archive.writestr("a.md", "ignored")
        archive.writestr("b.png", "not text")
    buffer.seek(0)
    return buffer


@pytest.mark.django_db
def test_another_accounts_upload_cannot_be_seen(embedder):
    owner = factories.owner("carol")
    started = ingest_upload_start(actor=owner, notebook="Vault", archive=vault_zip(),
                                  name="vault.zip")
    other = factories.owner("mallory")
    with pytest.raises(NotFound):
        ingest_upload_get(actor=other, upload_id=started.id)
    with tenant(other):
        assert not IngestUpload.objects.exists() and not IngestUploadFile.objects.exists()


@pytest.mark.slow
def test_the_upload_page_in_chromium_with_a_real_worker(browser_site: str, page: Page,
                                                        celery_worker_on, tmp_path: Path,
                                                        embedder):
    broker = redis_url_or_skip("redis://127.0.0.1:6379/13")
    account = Account.objects.create_user(username="uploader", password=PASSWORD)
    owner = factories.Actor.for_session(account.id)
    errors = watch_console(page)
    bundle = tmp_path / "vault.zip"
    bundle.write_bytes(vault_zip().getvalue())
    folder = tmp_path / "Field notes"
    (folder / "2026").mkdir(parents=True)
    (folder / "2026" / "june.md").write_text("# June\n\nThe melt started early.")
    (folder / "todo.md").write_text("- [ ] label the cores")
    (folder / ".groundignore").write_text("todo.md\n")
    with celery_worker_on(broker, {}):
        sign_in(page, browser_site, "uploader")
        page.goto(browser_site + "/settings/")
        page.get_by_role("link", name="Bring notes in").click()
        page.get_by_label("Into the notebook").fill("Vault")
        page.get_by_label("A zip file").set_input_files(str(bundle))
        page.get_by_role("button", name="Upload and ingest").click()
        progress = page.locator("#progress")
        expect(progress).to_have_attribute("data-state", "done", timeout=60_000)
        expect(progress).to_contain_text("3 of 3 files")
        expect(progress.locator('[data-count="created"]')).to_have_text("3")
        expect(progress).to_contain_text("Credentials replaced by markers: 1 aws-access-key")
        expect(progress).to_contain_text("hidden: .obsidian/workspace.md")

        # A folder, chosen as a folder: its paths come along (grove.js), its
        # .groundignore applies.
        page.goto(browser_site + "/ingest/")
        page.get_by_label("Into the notebook").fill("Field")
        page.get_by_label("…or a folder").set_input_files(str(folder))
        page.get_by_role("button", name="Upload and ingest").click()
        expect(progress).to_have_attribute("data-state", "done", timeout=60_000)
        expect(progress).to_contain_text("1 of 1 files")
        expect(progress).to_contain_text("ignored: todo.md")
    with tenant(owner):
        field = Notebook.objects.get(name="Field", parent=None)
        subfolder = Notebook.objects.get(parent=field)
        june = Note.objects.get(notebook=subfolder)
    assert subfolder.name == "2026" and june.content.startswith("# June")
    assert errors == []


@pytest.mark.django_db
def test_zip_bombs_and_broken_members_are_refused_or_skipped_never_a_500():
    owner = factories.owner("dave")
    # One large entry repeated in the directory: read once.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        info = zipfile.ZipInfo("a.md")
        archive.writestr(info, "# A\n\n" + "moraine " * 1000)
        record = archive.infolist()[0]
        for _ in range(500):
            archive.filelist.append(record)  # the same entry, listed again
    buffer.seek(0)
    started = ingest_upload_start(actor=owner, notebook="Bomb", archive=buffer, name="b.zip")
    assert started.total_files == 1
    # A zip that declares more entries than allowed is refused before it is parsed.
    many = io.BytesIO()
    with zipfile.ZipFile(many, "w") as archive:
        for i in range(50_001):
            archive.writestr(f"{i}.png", b"")
    many.seek(0)
    before = factories.table_counts(owner.account_id)
    with pytest.raises(Invalid) as refused:
        ingest_upload_start(actor=owner, notebook="Many", archive=many, name="m.zip")
    assert refused.value.code == "too_many_files"
    assert factories.table_counts(owner.account_id) == before
    # A member whose data is damaged is skipped with why; the rest goes in.
    damaged = io.BytesIO()
    with zipfile.ZipFile(damaged, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("good.md", "Good text.")
        rng = random.Random(7)
        archive.writestr("bad.md", "".join(rng.choice("abcdefgh ") for _ in range(5000)))
    data = bytearray(damaged.getvalue())
    offset = data.find(b"bad.md") + len("bad.md")  # the local header's name, then data
    data[offset + 100:offset + 140] = b"\xff" * 40  # inside its compressed stream
    started = ingest_upload_start(actor=owner, notebook="Damaged", archive=io.BytesIO(data),
                                  name="d.zip")
    assert started.total_files == 1
    assert any(reason.startswith("unreadable") for reason in started.skipped)
