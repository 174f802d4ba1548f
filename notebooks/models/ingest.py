"""The ingest ledger (issue 22, SPEC §13): which note holds each chunk of each file a
folder brought in, and the hashes that let the next run write only what changed."""

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from notebooks.models.notes import Note, Notebook

HASH_CHARS = 64  # sha256, hex


class IngestedChunk(models.Model):
    """One file ingested into a notebook (`root`: the notebook named on the command
    line, None: the account's top level; the note may sit in a sub-notebook of it) and
    the note that holds it (issue 37: one note per file, `chunk` 0). Before issue 37 a
    file was many notes, one row per chunk; the next ingest of such a file folds them
    (`notebooks.services.ingest`). `file_hash`: the file's bytes and the rules they were
    read by — an unchanged file is known without reading it. `lead`/`tail`: the
    whitespace around the file's text, which the note's trimmed content does not hold
    and the export puts back. `gone_at`: when a run with `--prune` found the file gone
    (its note archived, the reason shown with it)."""

    id = models.BigAutoField(primary_key=True)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    root = models.ForeignKey(Notebook, on_delete=models.CASCADE, related_name="+",
                             null=True, blank=True)
    path = models.TextField()  # relative to the folder, forward slashes
    chunk = models.PositiveIntegerField()  # 0-based, in file order
    headings = ArrayField(models.TextField(), default=list, blank=True)
    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="+")
    file_hash = models.CharField(max_length=HASH_CHARS)
    content_hash = models.CharField(max_length=HASH_CHARS)
    ingested_at = models.DateTimeField()
    gone_at = models.DateTimeField(null=True, blank=True)
    lead = models.TextField(blank=True, default="", db_default="")
    tail = models.TextField(blank=True, default="", db_default="")
    subfolders = models.BooleanField(default=False, db_default=False)  # folders → notebooks

    class Meta:
        db_table = "notebooks_ingestedchunk"
        constraints = [
            models.UniqueConstraint(fields=["root", "path", "chunk"],
                                    name="ingestedchunk_once"),
            models.UniqueConstraint(fields=["account", "path", "chunk"],
                                    condition=models.Q(root__isnull=True),
                                    name="ingestedchunk_top_once"),
        ]
        indexes = [models.Index(fields=["account", "note"], name="ingestedchunk_by_note")]

    def __str__(self) -> str:
        return f"{self.path}#{self.chunk} → {self.note_id}"


class IngestUpload(models.Model):
    """A folder or zip uploaded on the website, unpacked and ingested by a background
    job (`notebooks.services.ingest_upload`). What was uploaded waits as
    `IngestUploadPart` rows until the job unpacks it; then its files wait as
    `IngestUploadFile` rows until the job has ingested each (then the row is dropped),
    so the progress is what is left, and a job that dies is finished by the next
    attempt (the ledger makes the files already done cost nothing)."""

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    root = models.ForeignKey(Notebook, on_delete=models.CASCADE, related_name="+")
    name = models.TextField()  # what was uploaded: the zip's or the folder's name
    kind = models.CharField(max_length=16)
    subfolders = models.BooleanField(default=False)
    state = models.CharField(max_length=8, choices=State.choices, default=State.QUEUED)
    total_files = models.PositiveIntegerField(default=0)
    done_files = models.PositiveIntegerField(default=0)
    failed_files = models.PositiveIntegerField(default=0)
    # created / updated / retagged / unchanged / removed chunk counts, credentials
    # redacted by kind, {reason: [paths…]} skipped (at most SHOWN_PATHS each), warnings.
    counts = models.JSONField(default=dict)
    redacted = models.JSONField(default=dict)
    skipped = models.JSONField(default=dict)
    warnings = models.JSONField(default=list)
    error = models.TextField(blank=True, default="")
    # The job attempt working on it (a later attempt takes over; see ingest_upload._run).
    runner = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "notebooks_ingestupload"
        indexes = [models.Index(fields=["account", "-created_at"], name="ingestupload_recent")]

    def __str__(self) -> str:
        return f"{self.name}: {self.state}, {self.done_files}/{self.total_files}"


class IngestUploadFile(models.Model):
    """One file of an upload, waiting to be ingested (dropped once it is)."""

    id = models.BigAutoField(primary_key=True)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    upload = models.ForeignKey(IngestUpload, on_delete=models.CASCADE, related_name="files")
    path = models.TextField()
    content = models.BinaryField()

    class Meta:
        db_table = "notebooks_ingestuploadfile"
        indexes = [models.Index(fields=["upload", "id"], name="ingestuploadfile_next")]

    def __str__(self) -> str:
        return self.path


class IngestUploadPart(models.Model):
    """A piece of an uploaded zip as the request stored it (a folder arrives as a zip
    the request builds), read back in order by the upload's job, which unpacks it and
    drops the parts in the same transaction as it stores the files."""

    id = models.BigAutoField(primary_key=True)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    upload = models.ForeignKey(IngestUpload, on_delete=models.CASCADE, related_name="parts")
    data = models.BinaryField()

    class Meta:
        db_table = "notebooks_ingestuploadpart"
        indexes = [models.Index(fields=["upload", "id"], name="ingestuploadpart_next")]

    def __str__(self) -> str:
        return f"part {self.id} of {self.upload_id}"
