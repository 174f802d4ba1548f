"""The ingest ledger (issue 22, SPEC §13): which note holds each chunk of each file a
folder brought in, and the hashes that let the next run write only what changed."""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from notebooks.models.notes import Note, Notebook

HASH_CHARS = 64  # sha256, hex


class IngestedChunk(models.Model):
    """One chunk of one file ingested into a notebook (`root`: the notebook named on
    the command line; the note may sit in a sub-notebook of it). `file_hash` is the
    whole file's, on each of its chunks: an unchanged file is known without reading
    its chunks. `gone_at`: when a run with `--prune` found the file gone (its notes
    archived, the reason shown with them)."""

    id = models.BigAutoField(primary_key=True)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    root = models.ForeignKey(Notebook, on_delete=models.CASCADE, related_name="+")
    path = models.TextField()  # relative to the folder, forward slashes
    chunk = models.PositiveIntegerField()  # 0-based, in file order
    headings = ArrayField(models.TextField(), default=list, blank=True)
    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="+")
    file_hash = models.CharField(max_length=HASH_CHARS)
    content_hash = models.CharField(max_length=HASH_CHARS)
    ingested_at = models.DateTimeField()
    gone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "notebooks_ingestedchunk"
        constraints = [
            models.UniqueConstraint(fields=["root", "path", "chunk"],
                                    name="ingestedchunk_once"),
        ]
        indexes = [models.Index(fields=["account", "note"], name="ingestedchunk_by_note")]

    def __str__(self) -> str:
        return f"{self.path}#{self.chunk} → {self.note_id}"
