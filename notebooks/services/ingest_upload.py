"""Folder and zip uploads on the website (issue 22 item 1): the same ingest as
`grove ingest`, run by a background job with its progress on a page.

`ingest_upload_start` walks what was uploaded with the folder rules (`walk_zip`: a
folder arrives as a zip the server builds from the browser's relative paths), stores
each file to ingest as a row — its private regions and credentials already gone — and
queues one `ingest_upload` job — in one transaction,
so the request does no ingesting and holds no file in memory past the one it reads.
The job (`_execute`, outside any transaction) takes the rows in order: each file is
ingested in its own transaction (`ingest_file`), then its row is dropped and the
counts added up in another. A worker that dies mid-upload loses nothing: the job's
lease runs out, `recover` queues it again, and the files already done are unchanged
on the ledger, so they cost a hash each.
"""

from __future__ import annotations

import logging
import shutil
import uuid
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import PurePosixPath
from typing import IO, Any

from django.db import OperationalError
from django.db.models import F
from django.utils import timezone

from grove.identity.hygiene import SecretRules, secret_rules
from grove.kernel import jobs
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import GroveError, Invalid, NotFound
from grove.kernel.tenancy import tenant
from grove.models import Job
from notebooks.ingest.files import ZIP_ERRORS, Found, TooManyMembers, open_zip, walk_zip
from notebooks.models import IngestUpload, IngestUploadFile
from notebooks.rules import clean_kind, parse_uuid
from notebooks.services.ingest import (
    FileOutcome,
    Unreadable,
    clean_source,
    ingest_file,
    ingest_root,
)

logger = logging.getLogger(__name__)

INGEST_UPLOAD = "ingest_upload"
UPLOAD_MAX_FILES = 20_000
# Text read from one upload (after private regions and credentials are gone): every
# byte is screened in the request, so a bomb that inflates is stopped here. A bigger
# folder goes in with `grove ingest`, which reads one file at a time.
UPLOAD_MAX_BYTES = 128 * 1024 * 1024
SHOWN_PATHS = 20  # per skip reason, on the progress page
SHOWN_WARNINGS = 50
COUNTS = ("created", "updated", "retagged", "unchanged", "removed")


@dataclass(frozen=True)
class UploadOut:
    id: uuid.UUID
    name: str
    notebook_id: uuid.UUID
    state: str
    total_files: int
    done_files: int
    failed_files: int
    counts: dict[str, int]
    redacted: dict[str, int]
    skipped: dict[str, list[str]]
    warnings: list[str]
    error: str
    created_at: Any
    finished_at: Any

    @classmethod
    def of(cls, row: IngestUpload) -> UploadOut:
        return cls(id=row.id, name=row.name, notebook_id=row.root_id, state=row.state,
                   total_files=row.total_files, done_files=row.done_files,
                   failed_files=row.failed_files, counts=row.counts,
                   redacted=row.redacted, skipped=row.skipped, warnings=row.warnings,
                   error=row.error, created_at=row.created_at, finished_at=row.finished_at)

    @property
    def finished(self) -> bool:
        return self.state in (IngestUpload.State.DONE, IngestUpload.State.FAILED)

    @property
    def percent(self) -> int:
        return 100 if not self.total_files else 100 * self.done_files // self.total_files


def folder_as_zip(files: Iterable[tuple[str, IO[bytes]]], out: IO[bytes]) -> None:
    """A browser's folder upload — (relative path, file) pairs, the chosen folder's own
    name first in each path — as a zip of the folder's contents, so it is walked by
    exactly the rules a zip is."""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as archive:
        for relative, file in files:
            parts = PurePosixPath(relative.replace("\\", "/")).parts
            inner = PurePosixPath(*parts[1:]) if len(parts) > 1 else PurePosixPath(*parts)
            with archive.open(zipfile.ZipInfo(inner.as_posix()), "w") as member:
                shutil.copyfileobj(file, member, 1 << 16)


def ingest_upload_start(*, actor: Actor, notebook: str, archive: IO[bytes], name: str,
                        kind: str = "fact", subfolders: bool = False) -> UploadOut:
    """Queue an upload (a zip, or a folder made one by `folder_as_zip`) for ingest into
    `notebook` (an id, or a top-level notebook's name, made if missing). Not a zip →
    `invalid_upload`; nothing to ingest → `nothing_to_ingest`; neither writes anything."""
    actor.require_session()
    actor.require(WRITE)
    kind = clean_kind(kind)
    if not isinstance(notebook, str) or not notebook.strip():
        raise Invalid("Name the notebook the files go into.", code="notebook_required")
    try:
        opened = open_zip(archive)
    except TooManyMembers as exc:
        raise Invalid(f"Too many entries: {exc}.", code="too_many_files") from None
    except (zipfile.BadZipFile, OSError):
        raise Invalid("That is not a zip file; upload a .zip or choose a folder.",
                      code="invalid_upload") from None
    with opened:
        items = list(walk_zip(opened))
        found = [item for item in items if isinstance(item, Found)]
        if not found:
            raise Invalid("Nothing to ingest: no .md, .markdown, .mdx or .txt file that "
                          "is not ignored.", code="nothing_to_ingest")
        if len(found) > UPLOAD_MAX_FILES:
            raise Invalid(f"At most {UPLOAD_MAX_FILES} files an upload; use `grove ingest` "
                          "for more.", code="too_many_files")
        skipped: dict[str, list[str]] = {}
        for item in items:
            if not isinstance(item, Found):
                skipped.setdefault(item.reason, []).append(str(item.path))
        # One transaction: the notebook, the upload and its files, or nothing at all.
        with tenant(actor):
            root = ingest_root(actor, notebook.strip())
            upload = IngestUpload.objects.create(
                account_id=actor.account_id, root=root, name=name[:200] or "upload",
                kind=kind, subfolders=bool(subfolders), total_files=len(found),
                skipped=_shown(skipped))
            rules, read = secret_rules(actor.account_id), 0
            for item in found:
                content = _readied(actor, item, rules, upload)
                if content is None:
                    upload.total_files -= 1
                    continue
                read += len(content)
                if read > UPLOAD_MAX_BYTES:
                    raise Invalid(f"More than {UPLOAD_MAX_BYTES // (1024 * 1024)} MB of text "
                                  "in one upload; use `grove ingest` for a folder this "
                                  "large.", code="upload_too_large")
                IngestUploadFile.objects.create(account_id=actor.account_id, upload=upload,
                                                path=str(item.path), content=content)
            upload.save(update_fields=["skipped", "total_files", "redacted"])
            jobs.enqueue(account_id=actor.account_id, kind=INGEST_UPLOAD, target_id=upload.id)
    return UploadOut.of(upload)


def _readied(actor: Actor, item: Found, rules: SecretRules,
             upload: IngestUpload) -> bytes | None:
    """A file's bytes as they may wait in the database (`clean_source`: nothing private
    or secret is stored even for the minutes a file waits). None: skipped, and why
    noted."""
    try:
        source = clean_source(actor, item.read(), rules)
    except ZIP_ERRORS as exc:
        _add_skipped(upload, f"unreadable: {exc.__class__.__name__}", str(item.path))
        return None
    except Unreadable as exc:
        _add_skipped(upload, exc.reason, str(item.path))
        return None
    for kind, count in source.redacted.items():
        upload.redacted[kind] = upload.redacted.get(kind, 0) + count
    return source.text.encode("utf-8")


def ingest_upload_get(*, actor: Actor, upload_id: uuid.UUID | str) -> UploadOut:
    actor.require_session()
    upload_uuid = parse_uuid(upload_id, what="upload id")
    with tenant(actor):
        row = IngestUpload.objects.filter(id=upload_uuid).first()
    if row is None:
        raise NotFound("No such upload.", code="upload_not_found")
    return UploadOut.of(row)


def ingest_upload_list(*, actor: Actor, limit: int = 10) -> list[UploadOut]:
    actor.require_session()
    with tenant(actor):
        rows = list(IngestUpload.objects.order_by("-created_at")[:limit])
    return [UploadOut.of(row) for row in rows]


def _shown(skipped: dict[str, list[str]]) -> dict[str, list[str]]:
    return {reason: paths[:SHOWN_PATHS] + ([f"… and {len(paths) - SHOWN_PATHS} more"]
                                           if len(paths) > SHOWN_PATHS else [])
            for reason, paths in sorted(skipped.items())}


def _add_skipped(upload: IngestUpload, reason: str, path: str) -> None:
    paths = upload.skipped.setdefault(reason, [])
    if len(paths) < SHOWN_PATHS:
        paths.append(path)


# -- the job --------------------------------------------------------------------------------


def _load(batch: Sequence[Job]) -> dict[uuid.UUID, Any]:
    found = IngestUpload.objects.filter(id__in=[job.target_id for job in batch]).exclude(
        state=IngestUpload.State.DONE).values_list("id", "account_id")
    by_upload = dict(found)
    return {job.id: (job.target_id, by_upload[job.target_id])
            for job in batch if job.target_id in by_upload}


def _execute(inputs: list[Any]) -> list[Any]:
    return [_run(upload_id, account_id) for upload_id, account_id in inputs]


def _run(upload_id: uuid.UUID, account_id: uuid.UUID) -> str:
    """Ingest the upload's waiting files, oldest first. A later attempt (the lease ran
    out, `recover` queued the job again) takes the upload over with its own `runner`
    token; an earlier one still going notices at its next file and stops."""
    actor, runner = Actor.for_session(account_id), uuid.uuid4()
    with tenant(actor):
        upload = IngestUpload.objects.select_related("root").get(id=upload_id)
        upload.state, upload.runner = IngestUpload.State.RUNNING, runner
        upload.save(update_fields=["state", "runner"])
    rules = secret_rules(account_id)
    made: dict[tuple[str, ...], uuid.UUID] = {}
    while True:
        with tenant(actor):
            if not IngestUpload.objects.filter(id=upload_id, runner=runner).exists():
                return "taken over"
            row = IngestUploadFile.objects.filter(upload_id=upload_id).order_by("id").first()
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
            logger.warning("ingest upload %s: %s failed (%s)", upload_id, row.id,
                           exc.__class__.__name__)
            outcome = FileOutcome(path=row.path, skipped=f"failed: {exc.__class__.__name__}")
        with tenant(actor):
            IngestUploadFile.objects.filter(id=row.id).delete()
            _record(upload_id, outcome, failed)
    with tenant(actor):
        IngestUpload.objects.filter(id=upload_id, runner=runner).update(
            state=IngestUpload.State.DONE, finished_at=timezone.now())
    return "done"


def _record(upload_id: uuid.UUID, outcome: FileOutcome, failed: bool) -> None:
    upload = IngestUpload.objects.select_for_update().get(id=upload_id)
    for name in COUNTS:
        upload.counts[name] = upload.counts.get(name, 0) + getattr(outcome, name)
    for kind, count in outcome.redacted.items():
        upload.redacted[kind] = upload.redacted.get(kind, 0) + count
    if outcome.skipped:
        _add_skipped(upload, outcome.skipped, outcome.path)
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
    """Given up on: the files still waiting are dropped (they hold note text), and the
    page says so."""
    IngestUploadFile.objects.filter(upload_id=job.target_id).delete()
    IngestUpload.objects.filter(id=job.target_id).update(
        state=IngestUpload.State.FAILED, finished_at=timezone.now(),
        error="The ingest stopped after repeated database errors; the files not yet "
              "ingested were dropped — upload the folder again to finish (what is done "
              "stays done).")


HANDLER = jobs.Handler(
    kind=INGEST_UPLOAD, load=_load, execute=_execute, complete=_complete, on_failed=_failed,
    transient=(OperationalError,), max_attempts=5,
    # One attempt ingests the whole upload; past this `recover` takes the job back and
    # the next attempt finishes what is left.
    lease=timedelta(hours=2))
