"""A note's passages and their vectors (docs/architecture.md, "Documents and passages").

A passage is a span of a note's current content: `text` is `content[start:end]`, stored
so that an excerpt or a lexical match never reads a whole document. Rows whose text is
unchanged survive an edit (matched by `hash`), their vectors with them.

Deletes cascade in the database (the same-account keys of migration 0001 are `ON DELETE
CASCADE`), not in Django (`DO_NOTHING`): a note deleted with its account takes its
passages in the same statement, so the term-statistics trigger on passages (migration
0002) finds no active note to write a change for.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import VectorField

# Full-text configuration, as for notes (`notebooks.models.SEARCH_CONFIG`).
SEARCH_CONFIG = "english"


class Passage(models.Model):
    id = models.BigAutoField(primary_key=True)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.DO_NOTHING,
                                related_name="+")
    note = models.ForeignKey("notebooks.Note", on_delete=models.DO_NOTHING,
                             related_name="passages")
    position = models.PositiveIntegerField()  # 1-based, in document order
    start = models.PositiveIntegerField()  # offsets into the note's content
    end = models.PositiveIntegerField()
    # The headings the passage sits under, outermost first; `trail` is them as one line
    # (what the lexical vector and the embedding read above the text).
    headings = ArrayField(models.TextField(), default=list, blank=True)
    trail = models.TextField(default="", blank=True)
    text = models.TextField()
    hash = models.CharField(max_length=64)  # sha256 of trail and text (`rules.passage_hash`)
    search = models.GeneratedField(
        expression=SearchVector("trail", "text", config=SEARCH_CONFIG),
        output_field=SearchVectorField(), db_persist=True,
    )

    class Meta:
        db_table = "passages_passage"
        constraints = [
            # Deferred: an edit moves kept rows to new positions in one statement.
            models.UniqueConstraint(fields=["note", "position"], name="passage_position_once",
                                    deferrable=models.Deferrable.DEFERRED),
            models.CheckConstraint(condition=Q(position__gte=1), name="passage_position_positive"),
            models.CheckConstraint(condition=Q(start__lt=models.F("end")),
                                   name="passage_span_not_empty"),
        ]
        indexes = [
            models.Index(fields=["note", "hash"], name="passage_by_hash"),
            GinIndex(fields=["search"], name="passage_search"),
        ]

    def __str__(self) -> str:
        return f"note:{self.note_id}#{self.position}"


class PassageVector(models.Model):
    """A passage's vector under one embedding profile. No fixed dimension, so profiles of
    different sizes coexist during `grove reindex`; each dimension has its own partial
    HNSW index over `embedding::vector(N)` (`passages.vectors`)."""

    id = models.BigAutoField(primary_key=True)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.DO_NOTHING,
                                related_name="+")
    passage = models.ForeignKey(Passage, on_delete=models.DO_NOTHING, related_name="vectors")
    # The passage's note, kept here so the nearest-vector walk filters notes without
    # a second join (a passage never changes note).
    note = models.ForeignKey("notebooks.Note", on_delete=models.DO_NOTHING, related_name="+")
    profile = models.CharField(max_length=200)
    dimension = models.PositiveIntegerField()
    embedding = VectorField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "passages_passagevector"
        constraints = [
            models.UniqueConstraint(fields=["passage", "profile"],
                                    name="passage_vector_per_profile"),
        ]
        indexes = [models.Index(fields=["note", "profile"], name="passage_vector_note")]

    def __str__(self) -> str:
        return f"{self.passage_id} {self.profile}"
