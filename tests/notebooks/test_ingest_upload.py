"""Folder and zip uploads ingested by a background job (issue 22 item 1,
`notebooks.services.ingest_upload`, issue 36 items 2.6 and 3.5): the service and its job
on real PostgreSQL — the request stores, the job unpacks —, bad uploads refused with
nothing written, unsafe paths and empty files skipped with why, another account's upload
invisible. The page in Chromium: test_ingest_upload_browser.py."""

from __future__ import annotations

import io
import json
import random
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from grove.kernel import jobs
from grove.kernel.errors import Forbidden, Invalid, NotFound
from grove.kernel.tenancy import tenant
from grove.models import Job
from notebooks.models import IngestUpload, IngestUploadFile, IngestUploadPart, Note, Notebook
from notebooks.services.ingest_upload import (
    INGEST_UPLOAD,
    ingest_upload_get,
    ingest_upload_start,
)
from tests import factories
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


def parts_text(actor) -> bytes:
    """Everything the stored upload's parts hold, as the database has it."""
    with tenant(actor):
        return b"".join(bytes(data) for data in
                        IngestUploadPart.objects.values_list("data", flat=True))


@pytest.mark.django_db
def test_an_upload_is_ingested_by_its_job_and_a_second_one_writes_nothing(embedder):
    owner = factories.owner("alice")
    started = ingest_upload_start(
        actor=owner, notebook="Vault", name="vault.zip", subfolders=True,
        archive=vault_zip(**{"diary.md": "Public part.<private>PIN 4821</private>"}))
    assert (started.state, started.unpacking, started.notebook_name) == ("queued", True,
                                                                          "Vault")
    # What waits for the job is sealed: no file's text, no private region, no credential.
    stored = parts_text(owner)
    assert stored and not any(needle in stored for needle in (
        b"Public part", b"4821", KEY.encode(), b"Keep the samples dry"))
    run_jobs(owner)
    done = ingest_upload_get(actor=owner, upload_id=started.id)
    assert (done.state, done.unpacking, done.done_files, done.failed_files) == (
        "done", False, 4, 0)
    assert done.counts["created"] == 4 and done.redacted == {"aws-access-key": 1}
    assert [(line.reason, line.count, line.paths) for line in done.skipped] == [
        ("hidden", 1, [".obsidian/workspace.md"]), ("not a text note", 1, ["photo.jpg"])]
    assert (done.brought_in, done.skipped_files) == (4, 2)
    assert parts_text(owner) == b""
    with tenant(owner):
        assert IngestUploadFile.objects.count() == 0
        contents = set(Note.objects.values_list("content", flat=True))
        assert set(Notebook.objects.values_list("name", flat=True)) == {"Vault", "notes"}
    assert "The CI key is [redacted: aws-access-key]." in contents
    assert "Public part." in contents and not any("4821" in text for text in contents)
    index_all(owner)
    assert embedder.seen and not any(KEY in text for text in [*contents, *embedder.seen])
    again = ingest_upload_start(actor=owner, notebook="Vault", archive=vault_zip(),
                                name="vault.zip", subfolders=True)
    run_jobs(owner)
    second = ingest_upload_get(actor=owner, upload_id=again.id)
    assert {k: v for k, v in second.counts.items() if k != "files"} == {
        "created": 0, "updated": 0, "retagged": 0, "unchanged": 3,
        "folded": 0}  # diary.md is not in this zip: not touched


@pytest.mark.django_db
def test_the_request_stores_the_upload_and_the_job_unpacks_it(embedder):
    """Issue 36 item 2.6: a zip of many files was read, screened and stored file by file
    inside the web request. Now the request returns before anything of it is read; the
    job does the unpacking."""
    owner = factories.owner("erin")
    many = {f"area-{i % 9}/note-{i:04}.md": f"# Note {i}\n\nMoraine sample {i}."
            for i in range(300)}
    started = ingest_upload_start(actor=owner, notebook="Field", name="field.zip",
                                  archive=vault_zip(**many))
    assert (started.state, started.unpacking, started.total_files) == ("queued", True, 0)
    with tenant(owner):
        assert not IngestUploadFile.objects.exists() and not Note.objects.exists()
        assert IngestUploadPart.objects.exists()
        assert Job.objects.filter(kind=INGEST_UPLOAD, target_id=started.id,
                                  status="queued").exists()
    waiting = ingest_upload_get(actor=owner, upload_id=started.id)
    assert (waiting.unpacking, waiting.total_files, waiting.skipped) == (True, 0, [])

    run_jobs(owner)

    done = ingest_upload_get(actor=owner, upload_id=started.id)
    assert (done.state, done.total_files, done.done_files) == ("done", 303, 303)
    with tenant(owner):
        assert Note.objects.count() == 303
        assert not IngestUploadPart.objects.exists()


@pytest.mark.django_db
def test_bad_uploads_are_refused_and_write_nothing():
    owner = factories.owner("bob")
    agent = factories.connection(owner, all_notebooks=True)
    before = factories.table_counts(owner.account_id)
    for archive in (io.BytesIO(b"not a zip at all"), io.BytesIO(b"")):
        with pytest.raises(Invalid) as refused:
            ingest_upload_start(actor=owner, notebook="Vault", archive=archive, name="x")
        assert refused.value.code == "invalid_upload"
    with pytest.raises(Invalid) as refused:
        ingest_upload_start(actor=owner, notebook=" ", archive=vault_zip(), name="x")
    assert refused.value.code == "notebook_required"
    with pytest.raises(Forbidden):  # the website's upload: the owner, signed in
        ingest_upload_start(actor=agent, notebook="Vault", archive=vault_zip(), name="x")
    assert factories.table_counts(owner.account_id) == before
    with tenant(owner):
        assert not IngestUpload.objects.exists() and not IngestUploadPart.objects.exists()


@pytest.mark.django_db
def test_what_only_unpacking_shows_ends_the_upload_failed_with_why():
    owner = factories.owner("frank")
    started = ingest_upload_start(actor=owner, notebook="Vault", archive=_only_ignored(),
                                  name="ignored.zip")
    run_jobs(owner)
    failed = ingest_upload_get(actor=owner, upload_id=started.id)
    assert failed.state == "failed" and failed.error.startswith("Nothing to ingest")
    with tenant(owner):
        assert not IngestUploadPart.objects.exists() and not Note.objects.exists()


@pytest.mark.django_db
def test_an_upload_whose_every_file_is_skipped_says_which_and_why(web, owner):
    """A zip whose one note is too large is refused — and its Skipped list names the
    file and the reason, rather than "0 skipped"."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("huge.md", "moraine " * 800_000)  # 6.4 MB
        archive.writestr(".obsidian/app.json", "{}")
    buffer.seek(0)
    started = ingest_upload_start(actor=owner, notebook="Vault", archive=buffer,
                                  name="huge.zip")
    run_jobs(owner)
    failed = ingest_upload_get(actor=owner, upload_id=started.id)
    assert failed.state == "failed" and "every file was skipped" in failed.error
    lines = {line.reason: line.paths for line in failed.skipped}
    assert any(paths == ["huge.md"] for paths in lines.values()), lines
    assert failed.skipped_files == 2
    page = web.get(f"/ingest/{failed.id}/").content.decode()
    assert "0 files brought in, 2 skipped (listed below), of the 2 in the upload" in page
    assert "huge.md" in page


@pytest.mark.django_db
def test_another_accounts_upload_cannot_be_seen(embedder):
    owner = factories.owner("carol")
    started = ingest_upload_start(actor=owner, notebook="Vault", archive=vault_zip(),
                                  name="vault.zip")
    other = factories.owner("mallory")
    with pytest.raises(NotFound):
        ingest_upload_get(actor=other, upload_id=started.id)
    with tenant(other):
        assert not IngestUpload.objects.exists() and not IngestUploadPart.objects.exists()
    run_jobs(other)  # the other account's jobs: this upload is not among them
    with tenant(owner):
        assert IngestUploadPart.objects.exists() and not Note.objects.exists()


def _only_ignored() -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(".groundignore", "*.md\n")
        archive.writestr("a.md", "ignored")
        archive.writestr("b.png", "not text")
    buffer.seek(0)
    return buffer


@pytest.mark.django_db
def test_absolute_and_climbing_paths_are_skipped_with_their_reasons(embedder, web, owner):
    """Issue 36 item 2.6: `/etc/hosts.md` in a folder upload made a notebook `etc`."""
    # A zip whose members name places outside it.
    zipped = ingest_upload_start(
        actor=owner, notebook="Zipped", name="z.zip", subfolders=True,
        archive=vault_zip(**{"/etc/passwd.md": "root", "../up.md": "up",
                             "notes/../../out.md": "out"}))
    # A folder whose relative paths (the browser's, or whoever posts the form) do.
    files = {"Vault/ok.md": "# Fine\n\nStays.", "/etc/hosts.md": "hosts",
             "../escape.md": "escape", "Vault/../../x.md": "x"}
    posted = web.post("/ingest/", {
        "notebook": "Folder", "kind": "fact", "subfolders": "on",
        "paths": json.dumps(list(files)),
        "folder": [SimpleUploadedFile(name.rsplit("/", 1)[-1], text.encode())
                   for name, text in files.items()]})
    assert posted.status_code == 302
    run_jobs(owner)
    with tenant(owner):
        folder_upload = IngestUpload.objects.get(root__name="Folder")
        names = set(Notebook.objects.values_list("name", flat=True))
        contents = set(Note.objects.values_list("content", flat=True))
    assert "etc" not in names and names >= {"Zipped", "Folder"}
    assert not contents & {"root", "up", "out", "hosts", "escape", "x"}
    zip_lines = {line.reason: line.paths for line in
                 ingest_upload_get(actor=owner, upload_id=zipped.id).skipped}
    assert zip_lines["absolute path"] == ["/etc/passwd.md"]
    assert sorted(zip_lines["leaves the folder (..)"]) == ["../up.md", "notes/../../out.md"]
    folder = ingest_upload_get(actor=owner, upload_id=folder_upload.id)
    lines = {line.reason: line.paths for line in folder.skipped}
    assert lines["absolute path"] == ["/etc/hosts.md"]
    assert sorted(lines["leaves the folder (..)"]) == ["../escape.md", "Vault/../../x.md"]
    assert (folder.brought_in, folder.skipped_files) == (1, 3)
    page = web.get(f"/ingest/{folder.id}/").content.decode()
    assert "absolute path</strong> (1): /etc/hosts.md" in page


@pytest.mark.django_db
def test_an_empty_file_is_listed_as_skipped_and_the_counts_agree(embedder, web, owner):
    """Issue 36 item 3.5: an empty `.md` was counted in "4 of 4 files" and shown nowhere.
    (A file of front matter alone is a note since issue 37: files are kept whole.)"""
    started = ingest_upload_start(actor=owner, notebook="Vault", name="v.zip",
                                  archive=vault_zip(**{"blank.md": "",
                                                       "only-front.md": "---\ntags: [x]\n---\n"}))
    run_jobs(owner)
    done = ingest_upload_get(actor=owner, upload_id=started.id)
    lines = {line.reason: line.paths for line in done.skipped}
    assert lines["empty: no text to bring in"] == ["blank.md"]
    # Every file of the zip is brought in or on a Skipped line.
    assert done.brought_in + done.skipped_files == 7
    assert done.done_files == done.total_files == 5
    page = web.get(f"/ingest/{done.id}/").content.decode()
    assert "4 files brought in, 3 skipped" in page
    assert "empty: no text to bring in</strong> (1)" in page
    # The page's last poll loads it again, so its sidebar counts the notes brought in.
    polled = web.get(f"/ingest/{done.id}/", headers={"HX-Request": "true"})
    assert polled.status_code == 204 and polled["HX-Refresh"] == "true"


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
    run_jobs(owner)
    assert ingest_upload_get(actor=owner, upload_id=started.id).total_files == 1
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
    run_jobs(owner)
    done = ingest_upload_get(actor=owner, upload_id=started.id)
    assert (done.state, done.total_files) == ("done", 1)
    assert any(line.reason.startswith("unreadable") for line in done.skipped)


@pytest.mark.django_db
def test_an_unpack_cut_short_is_done_again_without_doubles(embedder):
    """A worker that died while unpacking left some files stored and the parts still
    there: the next attempt drops those files and unpacks the whole upload again."""
    owner = factories.owner("gina")
    started = ingest_upload_start(actor=owner, notebook="Vault", name="v.zip",
                                  archive=vault_zip())
    with tenant(owner):  # what the dead attempt had stored of it
        IngestUploadFile.objects.create(account_id=owner.account_id, upload_id=started.id,
                                        path="guide.md", content=b"half of an unpack")
    run_jobs(owner)
    done = ingest_upload_get(actor=owner, upload_id=started.id)
    assert (done.state, done.total_files, done.done_files, done.counts["created"]) == (
        "done", 3, 3, 3)
    with tenant(owner):
        assert not Note.objects.filter(content="half of an unpack").exists()


@pytest.mark.django_db
def test_a_part_that_does_not_open_ends_the_upload_failed(embedder):
    owner = factories.owner("hal")
    started = ingest_upload_start(actor=owner, notebook="Vault", name="v.zip",
                                  archive=vault_zip())
    with tenant(owner):  # one byte of the sealed upload changed in the database
        part = IngestUploadPart.objects.get(upload_id=started.id)
        sealed = bytearray(bytes(part.data))
        sealed[10] ^= 1
        IngestUploadPart.objects.filter(id=part.id).update(data=bytes(sealed))
    run_jobs(owner)
    failed = ingest_upload_get(actor=owner, upload_id=started.id)
    assert failed.state == "failed" and "could not be read back" in failed.error
    with tenant(owner):
        assert not Note.objects.exists() and not IngestUploadPart.objects.exists()


@pytest.mark.django_db
def test_the_upload_page_suggests_the_top_level_notebooks_by_name(web, owner):
    """The notebook field's suggestions are names it takes: the top-level notebooks (a
    nested one is not found by its name alone)."""
    garden = factories.notebook(owner, "Garden")
    factories.notebook(owner, "Beds", parent=garden.id)
    page = web.get("/ingest/").content.decode()
    options = page.split('<datalist id="ingest-notebooks">', 1)[1].split("</datalist>")[0]
    assert options == '<option value="Garden">'
