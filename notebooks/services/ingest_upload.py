"""Folder and zip uploads on the website (issue 22 item 1): the same ingest as
`grove ingest`, run by a background job with its progress on a page.

The request only stores (issue 36 item 2.6: parsing a 5,000-file zip in the request
held it 22.7 s). `ingest_upload_start` checks what a zip's end record says without
reading its directory (that it is a zip; how many entries it declares), makes the
notebook if it must, and stores the upload as it came — sealed, in parts
(`notebooks.ingest.sealed`: it still holds private regions and credentials) — with one
`ingest_upload` job, in one transaction. The job (`notebooks.services.ingest_upload_job`)
unpacks it by the folder rules (`walk_zip`), makes each file safe (`clean_source`),
then ingests the files one transaction each; the progress page follows it.

A folder arrives as its files with their relative paths, which the browser — or
whoever posts the form — chose: `folder_as_zip` packs the safe ones into a zip (so a
folder is walked by exactly the rules a zip is) and leaves out, with the reason, a
path that is absolute or climbs out with `..` (`unsafe_path_reason`), which would
otherwise have become notebooks named after the folders it names.
"""

from __future__ import annotations

import shutil
import uuid
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO, Any

from django.db.models import Exists, OuterRef

from grove.kernel import jobs
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import Invalid, NotFound
from grove.kernel.tenancy import tenant
from notebooks.ingest.files import ZIP_MAX_MEMBERS, Skipped, declared_members, unsafe_path_reason
from notebooks.ingest.sealed import PART_BYTES, seal
from notebooks.models import IngestUpload, IngestUploadPart
from notebooks.rules import clean_kind, parse_uuid
from notebooks.services.ingest import ingest_notebook

INGEST_UPLOAD = "ingest_upload"
SHOWN_PATHS = 20  # per skip reason, on the progress page
SHOWN_WARNINGS = 50


@dataclass(frozen=True)
class SkipLine:
    """One line of the summary's Skipped list: why, how many files, the first paths."""

    reason: str
    count: int
    paths: list[str]

    @property
    def more(self) -> int:
        return self.count - len(self.paths)


@dataclass(frozen=True)
class UploadOut:
    id: uuid.UUID
    name: str
    notebook_id: uuid.UUID
    notebook_name: str
    state: str
    unpacking: bool  # stored, not unpacked yet
    total_files: int
    done_files: int
    failed_files: int
    counts: dict[str, int]
    redacted: dict[str, int]
    skipped: list[SkipLine]
    warnings: list[str]
    error: str
    created_at: Any
    finished_at: Any

    @classmethod
    def of(cls, row: IngestUpload, *, unpacking: bool = False) -> UploadOut:
        return cls(id=row.id, name=row.name, notebook_id=row.root_id,
                   notebook_name=row.root.name, state=row.state,
                   unpacking=unpacking and row.state in (IngestUpload.State.QUEUED,
                                                         IngestUpload.State.RUNNING),
                   total_files=row.total_files, done_files=row.done_files,
                   failed_files=row.failed_files, counts=row.counts, redacted=row.redacted,
                   skipped=skip_lines(row.skipped), warnings=row.warnings, error=row.error,
                   created_at=row.created_at, finished_at=row.finished_at)

    @property
    def finished(self) -> bool:
        return self.state in (IngestUpload.State.DONE, IngestUpload.State.FAILED)

    @property
    def percent(self) -> int:
        return 100 if not self.total_files else 100 * self.done_files // self.total_files

    @property
    def brought_in(self) -> int:
        """Files whose notes are in the notebook now (created, changed or unchanged)."""
        return self.counts.get("files", 0)

    @property
    def skipped_files(self) -> int:
        return sum(line.count for line in self.skipped)


def skip_lines(skipped: dict[str, Any]) -> list[SkipLine]:
    """The stored {reason: {"count", "paths"}} as summary lines (an upload of an older
    release stored {reason: [paths]})."""
    lines = []
    for reason, entry in sorted(skipped.items()):
        if isinstance(entry, dict):
            lines.append(SkipLine(reason, int(entry.get("count", 0)), list(entry["paths"])))
        else:
            lines.append(SkipLine(reason, len(entry), list(entry)))
    return lines


def add_skipped(skipped: dict[str, Any], reason: str, path: str) -> None:
    """Count one skipped file under its reason, keeping the first SHOWN_PATHS paths."""
    entry = skipped.get(reason)
    if not isinstance(entry, dict):
        old = list(entry or [])
        entry = skipped[reason] = {"count": len(old), "paths": old[:SHOWN_PATHS]}
    entry["count"] += 1
    if len(entry["paths"]) < SHOWN_PATHS:
        entry["paths"].append(path)


def folder_as_zip(files: Iterable[tuple[str, IO[bytes]]], out: IO[bytes]) -> list[Skipped]:
    """A browser's folder upload — (relative path, file) pairs, the chosen folder's own
    name first in each path — as a zip of the folder's contents, so it is walked by
    exactly the rules a zip is. A path that is absolute or climbs with `..` is not
    packed: it comes back as `Skipped` with the reason."""
    left_out: list[Skipped] = []
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as archive:
        for relative, file in files:
            path = PurePosixPath(relative.replace("\\", "/"))
            reason = unsafe_path_reason(path)
            if reason is not None:
                left_out.append(Skipped(path, reason))
                continue
            inner = PurePosixPath(*path.parts[1:]) if len(path.parts) > 1 else path
            with archive.open(zipfile.ZipInfo(inner.as_posix()), "w") as member:
                shutil.copyfileobj(file, member, 1 << 16)
    return left_out


def ingest_upload_start(*, actor: Actor, notebook: str, archive: IO[bytes], name: str,
                        kind: str = "note", subfolders: bool = False,
                        skipped: Iterable[Skipped] = ()) -> UploadOut:
    """Store an upload (a seekable zip, or a folder made one by `folder_as_zip`, whose
    left-out paths are `skipped`) for its job to unpack and ingest into `notebook` (an
    id, or a top-level notebook's name, made if missing). Reads no member: not a zip →
    `invalid_upload`; more entries declared than ZIP_MAX_MEMBERS → `too_many_files`;
    neither writes anything. Queues the job on commit."""
    actor.require_session()
    actor.require(WRITE)
    kind = clean_kind(kind)
    if not isinstance(notebook, str) or not notebook.strip():
        raise Invalid("Name the notebook the files go into.", code="notebook_required")
    declared = declared_members(archive)
    if declared is None:
        raise Invalid("That is not a zip file; upload a .zip or choose a folder.",
                      code="invalid_upload")
    if declared > ZIP_MAX_MEMBERS:
        raise Invalid(f"Too many entries: the zip declares {declared}; at most "
                      f"{ZIP_MAX_MEMBERS}.", code="too_many_files")
    left_out: dict[str, Any] = {}
    for item in skipped:
        add_skipped(left_out, item.reason, str(item.path))
    # One transaction: the notebook, the upload, its parts and its job, or nothing.
    with tenant(actor):
        root = ingest_notebook(actor, notebook.strip())
        upload = IngestUpload.objects.create(
            account_id=actor.account_id, root=root, name=name[:200] or "upload", kind=kind,
            subfolders=bool(subfolders), skipped=left_out)
        index = 0
        archive.seek(0)
        while block := archive.read(PART_BYTES):
            IngestUploadPart.objects.create(account_id=actor.account_id, upload=upload,
                                            data=seal(upload.id, index, block))
            index += 1
        jobs.enqueue(account_id=actor.account_id, kind=INGEST_UPLOAD, target_id=upload.id)
    return UploadOut.of(upload, unpacking=True)


def _with_unpacking() -> Any:
    return IngestUpload.objects.select_related("root").annotate(unpacking=Exists(
        IngestUploadPart.objects.filter(upload_id=OuterRef("id"))))


def ingest_upload_get(*, actor: Actor, upload_id: uuid.UUID | str) -> UploadOut:
    actor.require_session()
    upload_uuid = parse_uuid(upload_id, what="upload id")
    with tenant(actor):
        row = _with_unpacking().filter(id=upload_uuid).first()
    if row is None:
        raise NotFound("No such upload.", code="upload_not_found")
    return UploadOut.of(row, unpacking=row.unpacking)


def ingest_upload_list(*, actor: Actor, limit: int = 10) -> list[UploadOut]:
    actor.require_session()
    with tenant(actor):
        rows = list(_with_unpacking().order_by("-created_at")[:limit])
    return [UploadOut.of(row, unpacking=row.unpacking) for row in rows]
