"""Account deletion racing a bulk ingest (issue 36 item 2.2): the real `grove ingest`
in a thread, caught by a lock the test holds in the middle of a file's transaction —
its notes inserted, its ledger rows not yet — while the owner deletes the account.
Afterwards no row of the account is live: every note deleted, every notebook deleted,
no job waiting."""

from __future__ import annotations

import io
import threading
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connections

from grove.identity import deletion
from grove.kernel.tenancy import tenant
from grove.models import Account, Job
from notebooks.models import IngestedChunk, IngestUpload, IngestUploadPart, Note, Notebook
from notebooks.services.ingest_upload import ingest_upload_start
from tests import factories

pytestmark = pytest.mark.usefixtures("committed")

PASSWORD = "correct horse battery"  # factories.account's


def owner_connection() -> psycopg.Connection:
    """The schema owner on the test database, outside Django: its own transaction,
    and a context the database takes at its word (no lock of the account taken)."""
    owner, name = settings.DATABASES["owner"], settings.DATABASES["default"]["NAME"]
    return psycopg.connect(host=owner["HOST"], port=owner["PORT"], user=owner["USER"],
                           password=owner["PASSWORD"] or None, dbname=name)


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(0.02)


def in_thread(work: Callable[[], object]) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


def test_an_ingest_racing_the_deletion_leaves_no_live_row(tmp_path: Path):
    actor = factories.owner("racer")
    root = factories.notebook(actor, "Vault")
    anchor = factories.note(actor, "Already here before the ingest.")
    vault = tmp_path / "vault"
    vault.mkdir()
    for name in ("a", "b", "c", "d"):
        (vault / f"{name}.md").write_text(f"# {name}\n\nField note {name}: the ice is "
                                          "thinner than last year.")

    with owner_connection() as held:
        # The ledger row a.md's transaction will insert last, taken first and held: the
        # ingest inserts a.md's notes, then waits for this transaction.
        held.execute("SELECT set_config('grove.account_id', %s, true)",
                     [str(actor.account_id)])
        held.execute(
            "INSERT INTO notebooks_ingestedchunk (account_id, root_id, path, chunk, headings,"
            " note_id, file_hash, content_hash, ingested_at) "
            "VALUES (%s, %s, 'a.md', 0, '{}', %s, '', '', now())",
            [actor.account_id, root.id, anchor.id])
        xid = held.execute("SELECT pg_current_xact_id()::text::bigint").fetchone()[0]

        def waiting(locktype: str, transaction: int | None = None) -> bool:
            """Whether a backend waits for a lock of that type (of that transaction)."""
            with owner_connection() as probe:
                return probe.execute(
                    "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = %s "
                    "AND (%s::bigint IS NULL OR transactionid::text::bigint = %s)",
                    [locktype, transaction, transaction]).fetchone()[0] > 0

        ingest, ingest_errors = in_thread(lambda: call_command(
            "ingest", str(vault), notebook=str(root.id), user="racer"))
        wait_for(lambda: waiting("transactionid", xid),
                 "the ingest to reach a.md's ledger rows")
        with tenant(actor.account_id, using="owner"):  # a.md's notes: in, not committed
            assert not Note.objects.using("owner").filter(
                content__contains="Field note").exists()

        deleting, deletion_errors = in_thread(
            lambda: deletion.account_delete(actor=actor, password=PASSWORD))
        # The deletion either waits for the ingest's file or (the defect) runs past it.
        wait_for(lambda: not deleting.is_alive() or waiting("advisory"),
                 "the deletion to finish or to wait for the ingest")
        held.rollback()  # the ingest goes on: a.md commits, then the other files
        deleting.join(60)
        ingest.join(60)

    assert not deleting.is_alive() and not ingest.is_alive()
    assert deletion_errors == []
    # The files after the deletion were refused: the command says they failed.
    assert len(ingest_errors) == 1 and isinstance(ingest_errors[0], CommandError)
    assert Account.objects.get(id=actor.account_id).deleted_at is not None
    with tenant(actor.account_id, using="owner"):
        notes = Note.objects.using("owner").filter(account_id=actor.account_id)
        ingested = notes.filter(content__contains="Field note")
        assert ingested.exists()  # a.md made it in before the deletion hid everything
        assert sorted(notes.values_list("status", flat=True).distinct()) == ["deleted"]
        assert not Notebook.objects.using("owner").filter(
            account_id=actor.account_id, deleted_at__isnull=True).exists()
        assert not Job.objects.using("owner").filter(
            account_id=actor.account_id, status__in=["queued", "running"]).exists()
        assert IngestedChunk.objects.using("owner").filter(
            account_id=actor.account_id, note__in=ingested).exists()


def test_an_upload_waiting_for_its_job_goes_with_the_account():
    """What an upload holds until its job is done (the sealed zip, files with note text)
    is dropped by the deletion, and the upload ends `failed`."""
    actor = factories.owner("uploader")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.md", "Waiting to be unpacked.")
    started = ingest_upload_start(actor=actor, notebook="Vault", archive=buffer, name="a.zip")

    deletion.account_delete(actor=actor, password=PASSWORD)

    with tenant(actor.account_id, using="owner"):
        assert not IngestUploadPart.objects.using("owner").filter(
            account_id=actor.account_id).exists()
        upload = IngestUpload.objects.using("owner").get(id=started.id)
    assert (upload.state, upload.error) == ("failed", "The account was deleted.")
