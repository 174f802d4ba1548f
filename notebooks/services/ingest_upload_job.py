"""The `ingest_upload` job: unpack an upload the website stored, then ingest its files
(`notebooks.services.ingest_upload` is the request's side).

`_run` takes the upload over with its own `runner` token, then

1. **unpacks** it, if its parts are still there: they are read back in order and
   opened (`notebooks.ingest.sealed`) into a temporary file, the zip is walked by the
   folder rules (`walk_zip`) and each file made safe (`clean_source`: private regions
   and credentials gone) before it is stored as an `IngestUploadFile` row, in batches;
   the last transaction records the totals and what was skipped and drops the parts.
   An unpack cut short (the worker died; parts still there) is done again from the
   start: the files stored so far are dropped first. A zip that cannot be opened, holds
   nothing to ingest, or too much, ends the upload `failed` with the reason.
2. **ingests** the waiting files, oldest first: each in its own transaction
   (`ingest_file`), then its row is dropped and the counts added up in another. A
   worker that dies mid-upload loses nothing: the job's lease runs out, `recover`
   queues it again, and the files already done are unchanged on the ledger, so they
   cost a hash each.

Every write checks, under the upload's row lock, that this attempt is still the
upload's runner: an earlier attempt that is still going stops at its next step.
"""

from __future__ import annotations

import logging
import tempfile
import uuid
import zipfile
from collections.abc import Sequence
from datetime import timedelta
from pathlib import PurePosixPath
from typing import Any

from django.db import OperationalError
from django.db.models import F
from django.utils import timezone

from grove.identity.hygiene import SecretRules, secret_rules
from grove.kernel import jobs
from grove.kernel.actor import Actor
from grove.kernel.errors import GroveError
from grove.kernel.tenancy import tenant
from grove.models import Job
from notebooks.ingest.files import ZIP_ERRORS, Found, TooManyMembers, open_zip, walk_zip
from notebooks.ingest.sealed import Unsealable, unseal
from notebooks.models import IngestUpload, IngestUploadFile, IngestUploadPart
from notebooks.services.ingest import FileOutcome, Unreadable, clean_source, ingest_file
from notebooks.services.ingest_upload import (
    INGEST_UPLOAD,
    SHOWN_WARNINGS,
    add_skipped,
)

logger = logging.getLogger(__name__)

UPLOAD_MAX_FILES = 20_000
# Text kept of one upload (after private regions and credentials are gone); a bigger
# folder goes in with `grove ingest`, which reads one file at a time.
UPLOAD_MAX_BYTES = 128 * 1024 * 1024
SPOOL_BYTES = 16 * 1024 * 1024  # the unpacked zip spills to disk past this
STORE_BATCH = 200  # files stored per transaction while unpacking
COUNTS = ("created", "updated", "retagged", "unchanged", "folded")


class Refused(Exception):
    """What ends an upload `failed` while unpacking, with the words the page shows."""


def _load(batch: Sequence[Job]) -> dict[uuid.UUID, Any]:
    found = IngestUpload.objects.filter(id__in=[job.target_id for job in batch]).exclude(
        state__in=[IngestUpload.State.DONE, IngestUpload.State.FAILED]).values_list(
        "id", "account_id")
    by_upload = dict(found)
    return {job.id: (job.target_id, by_upload[job.target_id])
            for job in batch if job.target_id in by_upload}


def _execute(inputs: list[Any]) -> list[Any]:
    return [_run(upload_id, account_id) for upload_id, account_id in inputs]


def _run(upload_id: uuid.UUID, account_id: uuid.UUID) -> str:
    actor, runner = Actor.for_session(account_id), uuid.uuid4()
    with tenant(actor):
        upload = IngestUpload.objects.select_related("root").get(id=upload_id)
        upload.state, upload.runner = IngestUpload.State.RUNNING, runner
        upload.save(update_fields=["state", "runner"])
    rules = secret_rules(account_id)
    try:
        if not _unpack(actor, upload, runner, rules):
            return "taken over"
    except Refused as exc:
        with tenant(actor):
            if _ours(upload_id, runner):
                IngestUploadPart.objects.filter(upload_id=upload_id).delete()
                IngestUploadFile.objects.filter(upload_id=upload_id).delete()
                IngestUpload.objects.filter(id=upload_id).update(
                    state=IngestUpload.State.FAILED, finished_at=timezone.now(),
                    error=str(exc))
        return "refused"
    return _ingest(actor, upload, runner, rules)


def _ours(upload_id: uuid.UUID, runner: uuid.UUID) -> bool:
    """Whether this attempt still runs the upload; holds the upload's row to the end of
    the caller's transaction, so a takeover waits for what this attempt writes."""
    return IngestUpload.objects.select_for_update().filter(id=upload_id,
                                                           runner=runner).exists()


# -- 1. unpacking ---------------------------------------------------------------------------


def _unpack(actor: Actor, upload: IngestUpload, runner: uuid.UUID,
            rules: SecretRules) -> bool:
    """Store the upload's files as rows (see the module's docstring). False: another
    attempt took the upload over. Nothing to unpack (done already, or stored by an
    older release as files): True at once."""
    with tenant(actor):
        parts = list(IngestUploadPart.objects.filter(upload_id=upload.id).order_by("id")
                     .values_list("id", flat=True))
        if not parts:
            return True
        if not _ours(upload.id, runner):
            return False
        IngestUploadFile.objects.filter(upload_id=upload.id).delete()  # a cut-short unpack
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
        for index, part_id in enumerate(parts):
            with tenant(actor):
                sealed = IngestUploadPart.objects.filter(id=part_id).values_list(
                    "data", flat=True).first()
            if sealed is None:
                return False  # dropped by the attempt that took over
            try:
                spool.write(unseal(upload.id, index, bytes(sealed)))
            except Unsealable:
                raise Refused("The upload could not be read back (the server's secret key "
                              "changed since it was stored, or it was altered); upload it "
                              "again.") from None
        spool.seek(0)
        try:
            with open_zip(spool) as archive:
                return _store_files(actor, upload, runner, rules, archive)
        except TooManyMembers as exc:
            raise Refused(f"Too many entries: {exc}.") from None
        except (zipfile.BadZipFile, OSError):
            raise Refused("That is not a zip file that can be read; upload a .zip or "
                          "choose a folder.") from None


def _store_files(actor: Actor, upload: IngestUpload, runner: uuid.UUID, rules: SecretRules,
                 archive: zipfile.ZipFile) -> bool:
    items = list(walk_zip(archive))
    found = [item for item in items if isinstance(item, Found)]
    skipped, redacted = dict(upload.skipped), dict(upload.redacted)
    for item in items:
        if not isinstance(item, Found):
            add_skipped(skipped, item.reason, str(item.path))
    if not found:
        if skipped:  # say what was skipped, and why, beside the refusal
            with tenant(actor):
                IngestUpload.objects.filter(id=upload.id).update(skipped=skipped)
            upload.skipped = skipped
        raise Refused("Nothing to ingest: no .md, .markdown, .mdx or .txt file that is not "
                      "ignored" + (" — every file was skipped (listed below)." if skipped
                                   else "."))
    if len(found) > UPLOAD_MAX_FILES:
        raise Refused(f"At most {UPLOAD_MAX_FILES} files an upload; use `grove ingest` for "
                      "more.")
    stored, read, batch = 0, 0, []
    for number, item in enumerate(found, 1):
        content = _readied(actor, item, rules, skipped, redacted)
        if content is not None:
            read += len(content)
            if read > UPLOAD_MAX_BYTES:
                raise Refused(f"More than {UPLOAD_MAX_BYTES // (1024 * 1024)} MB of text in "
                              "one upload; use `grove ingest` for a folder this large.")
            batch.append(IngestUploadFile(account_id=actor.account_id, upload_id=upload.id,
                                          path=str(item.path), content=content))
        if len(batch) >= STORE_BATCH or number == len(found):
            with tenant(actor):
                if not _ours(upload.id, runner):
                    return False
                IngestUploadFile.objects.bulk_create(batch)
                stored += len(batch)
                batch = []
                if number < len(found):  # the page counts the files found so far
                    IngestUpload.objects.filter(id=upload.id).update(total_files=stored)
                    continue
                IngestUpload.objects.filter(id=upload.id).update(
                    total_files=stored, skipped=skipped, redacted=redacted)
                IngestUploadPart.objects.filter(upload_id=upload.id).delete()
    upload.skipped, upload.redacted, upload.total_files = skipped, redacted, stored
    return True


def _readied(actor: Actor, item: Found, rules: SecretRules, skipped: dict[str, Any],
             redacted: dict[str, int]) -> bytes | None:
    """A file's bytes as they may wait in the database (`clean_source`: nothing private
    or secret is stored in the clear even for the minutes a file waits). None: skipped,
    and why noted."""
    try:
        source = clean_source(actor, item.read(), rules)
    except ZIP_ERRORS as exc:
        add_skipped(skipped, f"unreadable: {exc.__class__.__name__}", str(item.path))
        return None
    except Unreadable as exc:
        add_skipped(skipped, exc.reason, str(item.path))
        return None
    for kind, count in source.redacted.items():
        redacted[kind] = redacted.get(kind, 0) + count
    return source.text.encode("utf-8")


# -- 2. ingesting ---------------------------------------------------------------------------


def _ingest(actor: Actor, upload: IngestUpload, runner: uuid.UUID,
            rules: SecretRules) -> str:
    """Ingest the upload's waiting files, oldest first."""
    made: dict[tuple[str, ...], uuid.UUID] = {}
    while True:
        with tenant(actor):
            if not IngestUpload.objects.filter(id=upload.id, runner=runner).exists():
                return "taken over"
            row = IngestUploadFile.objects.filter(upload_id=upload.id).order_by("id").first()
        if row is None:
            break
        failed = True
        try:
            outcome = ingest_file(actor=actor, root=upload.root, path=PurePosixPath(row.path),
                                  raw=bytes(row.content), kind=upload.kind,
                                  subfolders=upload.subfolders, made=made, rules=rules)
            failed = False
        except OperationalError:
            raise  # the database went away: the job is retried, the file with it
        except GroveError as exc:
            outcome = FileOutcome(path=row.path, skipped=f"failed: {exc.message}")
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the upload
            # The class only: a database error's text can quote the row it refused.
            logger.warning("ingest upload %s: %s failed (%s)", upload.id, row.id,
                           exc.__class__.__name__)
            outcome = FileOutcome(path=row.path, skipped=f"failed: {exc.__class__.__name__}")
        with tenant(actor):
            IngestUploadFile.objects.filter(id=row.id).delete()
            _record(upload.id, outcome, failed)
    with tenant(actor):
        IngestUpload.objects.filter(id=upload.id, runner=runner).update(
            state=IngestUpload.State.DONE, finished_at=timezone.now())
    return "done"


def _record(upload_id: uuid.UUID, outcome: FileOutcome, failed: bool) -> None:
    upload = IngestUpload.objects.select_for_update().get(id=upload_id)
    for name in COUNTS:
        upload.counts[name] = upload.counts.get(name, 0) + getattr(outcome, name)
    for kind, count in outcome.redacted.items():
        upload.redacted[kind] = upload.redacted.get(kind, 0) + count
    if outcome.skipped:
        add_skipped(upload.skipped, outcome.skipped, outcome.path)
    else:  # its notes are in the notebook now: made, changed or found unchanged
        upload.counts["files"] = upload.counts.get("files", 0) + 1
    room = SHOWN_WARNINGS - len(upload.warnings)
    upload.warnings += [f"{outcome.path}: {w}" for w in outcome.warnings][:max(0, room)]
    upload.done_files = F("done_files") + 1
    if failed:
        upload.failed_files = F("failed_files") + 1
    upload.save()


def _complete(batch: list[Job], inputs: dict[uuid.UUID, Any],
              outputs: dict[uuid.UUID, Any]) -> set[uuid.UUID]:
    return {job.id for job in batch if job.id in outputs}


def _failed(job: Job) -> None:
    """Given up on: what still waits is dropped (it holds note text), and the page says
    so."""
    IngestUploadPart.objects.filter(upload_id=job.target_id).delete()
    IngestUploadFile.objects.filter(upload_id=job.target_id).delete()
    IngestUpload.objects.filter(id=job.target_id).update(
        state=IngestUpload.State.FAILED, finished_at=timezone.now(),
        error="The ingest stopped after repeated database errors; the files not yet "
              "ingested were dropped — upload the folder again to finish (what is done "
              "stays done).")


HANDLER = jobs.Handler(
    kind=INGEST_UPLOAD, load=_load, execute=_execute, complete=_complete, on_failed=_failed,
    transient=(OperationalError,), max_attempts=5,
    # One attempt unpacks and ingests the whole upload; past this `recover` takes the
    # job back and the next attempt finishes what is left.
    lease=timedelta(hours=2))
