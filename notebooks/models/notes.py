"""Notebooks (a folder tree), notes and their revisions (SPEC §3), their vectors and the
lexical arm's term statistics.

Every invariant that can be a database constraint is one; the rest (no cycles in the
notebook tree, grants) lives in `notebooks.services`.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex, GistIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from django.db.models.functions import MD5, Coalesce, Length, Lower
from django.utils import timezone
from pgvector.django import VectorField

models.TextField.register_lookup(Length)

# A memory record's text (the memory contract); a document note (kind `note`) holds up
# to `GROVE_NOTE_MAX_CHARS`, never more than NOTE_MAX_CHARS_CEILING (SPEC §3).
CONTENT_MAX_CHARS = 6000
NOTE_MAX_CHARS_CEILING = 1_000_000
NOTE_MAX_CHARS_DEFAULT = 200_000
NAME_MAX_CHARS = 200
NOTEBOOK_NAME_UNIQUE = "notebook_live_name_unique"
NO_PARENT = uuid.UUID(int=0)  # the top level, in the unique name index (NULLs are distinct)
TASK_ID_MAX_CHARS = 200
SOURCE_AGENT_MAX_CHARS = 100
# Tags: a short list of labels per note (normalised by `notebooks.rules.clean_tags`).
TAGS_MAX = 10
TAG_MAX_CHARS = 32
RETENTION_MAX_DAYS = 365
HANDOFF_DEFAULT_RETENTION_DAYS = 30
EXPIRED_RESTORE_WINDOW_DAYS = 60


class Kind(models.TextChoices):
    NOTE = "note"  # a document; every other kind is a memory record
    PREFERENCE = "preference"
    FACT = "fact"
    DECISION = "decision"
    SOLUTION = "solution"
    HANDOFF = "handoff"


class Capture(models.TextChoices):
    EXPLICIT = "explicit"
    AUTOMATIC = "automatic"


class Status(models.TextChoices):
    ACTIVE = "active"
    ARCHIVED = "archived"
    EXPIRED = "expired"
    DELETED = "deleted"


class Indexing(models.TextChoices):
    """Whether the note's current content has a vector (SPEC §3: never claim `ready`
    before it is). With embeddings disabled notes are `ready` at once (lexical only)."""

    PENDING = "pending"
    READY = "ready"
    FAILED = "failed"


# Full-text configuration: English stemming and stop words.
SEARCH_CONFIG = "english"


class Notebook(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notebooks"
    )
    name = models.CharField(max_length=NAME_MAX_CHARS)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    archived_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # Whether the account-wide ground truth applies here when the notebook declares none
    # (SPEC §10). True for new notebooks; migration 0015 set it false for the notebooks
    # that existed before ground truth did — an upgrade never widens what an agent reads.
    inherit_account_truth = models.BooleanField(default=True, db_default=True)
    # Check connections' writes of facts, decisions and solutions against the declared
    # ground truth before they land (SPEC §10; `notebooks.services.write_check`).
    verify_agent_writes = models.BooleanField(default=False, db_default=False)

    class Meta:
        db_table = "notebooks_notebook"
        indexes = [models.Index(fields=["account", "parent"], name="notebook_account_parent")]
        constraints = [
            models.CheckConstraint(
                condition=Q(name__regex=r"\S"), name="notebook_name_not_blank"
            ),
            models.CheckConstraint(
                condition=~Q(parent=models.F("id")), name="notebook_not_own_parent"
            ),
            # Two live notebooks under one parent cannot share a name (SPEC §3), compared
            # in lower case (names are stored trimmed); archived and deleted ones are not
            # live. `require_name_free` says so first, with a clear code; this is the
            # floor under every write (migration 0020 renamed the duplicates it found).
            models.UniqueConstraint(
                models.F("account"),
                Coalesce(models.F("parent"), models.Value(NO_PARENT),
                         output_field=models.UUIDField()),
                Lower("name"),
                condition=Q(archived_at__isnull=True, deleted_at__isnull=True),
                name=NOTEBOOK_NAME_UNIQUE,
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def typed_id(self) -> str:
        return f"notebook:{self.id}"


class NoteFields(models.Model):
    """The fields a revision snapshots; shared by `Note` and `Revision`."""

    content = models.TextField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    notebook = models.ForeignKey(
        Notebook, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # NULL means "none" here (the API says null), and the handoff unique index and CHECK
    # rely on NULL rather than an empty string.
    task_id = models.CharField(  # noqa: DJ001
        max_length=TASK_ID_MAX_CHARS, null=True, blank=True
    )
    source_agent = models.CharField(  # noqa: DJ001
        max_length=SOURCE_AGENT_MAX_CHARS, null=True, blank=True
    )
    capture = models.CharField(max_length=16, choices=Capture.choices, default=Capture.EXPLICIT)
    pinned = models.BooleanField(default=False)
    tags = ArrayField(models.CharField(max_length=TAG_MAX_CHARS), default=list, blank=True,
                      db_default=models.Value([], output_field=ArrayField(
                          models.CharField(max_length=TAG_MAX_CHARS))))
    importance = models.FloatField(default=0.5)
    retention_days = models.PositiveSmallIntegerField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)

    class Meta:
        abstract = True

    @classmethod
    def snapshot_field_names(cls) -> list[str]:
        return [f.attname for f in NoteFields._meta.concrete_fields]


def _note_field_constraints(prefix: str) -> list[models.BaseConstraint]:
    return [
        models.CheckConstraint(
            # Trimmed (services strip it); a memory record at most 6,000 characters, a
            # document at most the ceiling (the configured limit is the services').
            condition=Q(content__regex=r"^\S")
            & Q(content__regex=r"\S$")
            & Q(content__length__lte=NOTE_MAX_CHARS_CEILING)
            & (Q(kind="note") | Q(content__length__lte=CONTENT_MAX_CHARS)),
            name=f"{prefix}_content_length",
        ),
        models.CheckConstraint(
            condition=Q(kind__in=Kind.values), name=f"{prefix}_kind_valid"
        ),
        models.CheckConstraint(
            condition=Q(capture__in=Capture.values), name=f"{prefix}_capture_valid"
        ),
        models.CheckConstraint(
            condition=Q(status__in=Status.values), name=f"{prefix}_status_valid"
        ),
        models.CheckConstraint(
            condition=Q(importance__gte=0) & Q(importance__lte=1),
            name=f"{prefix}_importance_range",
        ),
        models.CheckConstraint(
            condition=Q(tags__len__lte=TAGS_MAX), name=f"{prefix}_tags_few",
        ),
        models.CheckConstraint(
            condition=Q(retention_days__isnull=True)
            | (Q(retention_days__gte=1) & Q(retention_days__lte=RETENTION_MAX_DAYS)),
            name=f"{prefix}_retention_range",
        ),
        models.CheckConstraint(
            # Spelled with isnull: a regex on NULL is NULL, which a CHECK lets through.
            condition=~Q(kind=Kind.HANDOFF)
            | (Q(task_id__isnull=False) & Q(task_id__regex=r"\S")),
            name=f"{prefix}_handoff_has_task_id",
        ),
        models.CheckConstraint(
            condition=Q(retention_days__isnull=True, expires_at__isnull=True)
            | Q(retention_days__isnull=False, expires_at__isnull=False),
            name=f"{prefix}_expiry_matches_retention",
        ),
    ]


class DateMultirangeField(models.Field):
    """A PostgreSQL `datemultirange`: the days a note states (`notebooks.dates`), as
    `[start, end)` pairs of dates in order. `&&` against a window is what its GiST index
    answers (lookup `overlaps`, with a `(start, end)` pair, either side None = open)."""

    description = "Sets of calendar days"

    def db_type(self, connection: object) -> str:
        return "datemultirange"

    def from_db_value(self, value: object, expression: object, connection: object) -> object:
        return self.to_python(value)

    def to_python(self, value: object) -> object:
        if value is None or isinstance(value, list):
            return value
        return [(r.lower, r.upper) for r in value]  # type: ignore[attr-defined]

    def get_db_prep_value(self, value: object, connection: object,
                          prepared: bool = False) -> object:
        if value is None:
            return None
        return "{" + ",".join(f"[{start.isoformat()},{end.isoformat()})"
                              for start, end in value) + "}"  # type: ignore[attr-defined]


@DateMultirangeField.register_lookup
class Overlaps(models.Lookup):
    lookup_name = "overlaps"

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        start, end = self.rhs
        return f"{lhs} && daterange(%s::date, %s::date)", (*lhs_params, start, end)

    def get_prep_lookup(self) -> Any:
        return self.rhs


def content_key_of(text: models.Expression | models.F) -> MD5:
    """The exact-duplicate key of a text, in SQL: md5 of the text lower-cased with every
    run of whitespace made one space (content is stored trimmed). The generated column
    `Note.content_key` and the lookups of a text not yet saved use this one expression."""
    collapsed = models.Func(text, models.Value(r"\s+"), models.Value(" "), models.Value("g"),
                            function="REGEXP_REPLACE", output_field=models.TextField())
    return MD5(Lower(collapsed))


class Note(NoteFields):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notes"
    )
    version = models.PositiveIntegerField(default=1)
    created_by = models.ForeignKey(
        "grove.Connection", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    archived_at = models.DateTimeField(null=True, blank=True)
    expired_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # Fingerprint of `content` (sha256 hex): what embedding jobs are made for.
    content_hash = models.CharField(max_length=64, default="")
    indexing = models.CharField(max_length=16, choices=Indexing.choices,
                                default=Indexing.PENDING)
    # The `content_hash` the note's passages were cut from (`passages_passage`): written
    # with them (`services.indexing.mark_for_indexing`). Another value means the content
    # changed without them — an older release's write during a rolling upgrade — and the
    # periodic `grove.passages` cuts them again.
    passages_hash = models.CharField(max_length=64, default="", db_default="", blank=True)
    # The file an ingested note came from, relative to the ingested folder (forward
    # slashes; issue 37): its title when it has no heading, and where the export writes
    # it back. Empty for a note written any other way.
    source_path = models.TextField(blank=True, default="", db_default="")
    # The note that replaced this one (`remember` with `supersedes`, issue 39): this one
    # was archived in the same transaction. Restoring it clears the mark.
    superseded_by_id = models.UUIDField(null=True, blank=True)
    search = models.GeneratedField(
        expression=SearchVector("content", config=SEARCH_CONFIG),
        output_field=SearchVectorField(), db_persist=True,
    )
    # The days the content states ("2023-05-03", "May 2023", "in 2019"), written with
    # `content_hash` (`services.indexing.mark_for_indexing`): time-aware recall's window
    # tests them beside the note's own timestamps.
    stated_dates = DateMultirangeField(default=list)
    # Fingerprint of the content up to case and whitespace (md5 hex): notes with the same
    # key are exact duplicates (`notebooks.selectors.duplicates`).
    content_key = models.GeneratedField(
        expression=content_key_of(models.F("content")),
        output_field=models.CharField(max_length=32), db_persist=True,
    )

    class Meta:
        db_table = "notebooks_note"
        indexes = [
            models.Index(fields=["account", "notebook", "status"], name="note_scope"),
            # Keyset order of the library (updated_desc / updated_asc).
            models.Index(fields=["account", "updated_at", "id"], name="note_updated"),
            # The library's "of N" count: an index-only scan instead of reading every
            # note's row (content included).
            models.Index(fields=["account", "status"], name="note_counting",
                         include=["notebook", "expires_at", "created_at", "updated_at"]),
            # The brief: its count of the notes it could carry (kinds and pins, read
            # from the index alone), and each kind's best notes, walked in rank order
            # (notebooks.selectors.brief).
            models.Index(fields=["account", "status"], name="note_brief_counting",
                         include=["notebook", "expires_at", "kind", "pinned"]),
            models.Index(fields=["account", "kind", "-importance", "-updated_at", "id"],
                         name="note_ranked"),
            models.Index(fields=["account", "notebook", "kind", "-importance", "-updated_at",
                                 "id"], name="note_ranked_place"),
            models.Index(fields=["account"], condition=Q(pinned=True), name="note_pinned"),
            models.Index(
                fields=["expires_at"],
                condition=Q(status="active", expires_at__isnull=False),
                name="note_expiry_due",
            ),
            models.Index(
                fields=["expired_at"], condition=Q(status="expired"), name="note_expired_since"
            ),
            GinIndex(fields=["search"], name="note_search"),
            # Notes with a tag (`grove_tagged`, a security-definer lookup as for search).
            GinIndex(fields=["tags"], name="note_tags"),
            # Time-aware recall: notes stating a day of the query's window.
            GistIndex(fields=["stated_dates"], name="note_stated_dates",
                      condition=~Q(stated_dates=[])),
            models.Index(fields=["account"], condition=~Q(tags=[]), name="note_tagged"),
            models.Index(fields=["account", "indexing"], condition=~Q(indexing="ready"),
                         name="note_not_indexed"),
            models.Index(fields=["account", "created_at", "id"], name="note_created"),
            models.Index(fields=["account"], condition=~Q(passages_hash=models.F("content_hash")),
                         name="note_passages_stale"),
            models.Index(fields=["account", "notebook", "content_key"], name="note_content_key"),
            # The library's "Saved by" choices: the distinct agents of the account's notes,
            # read by skipping from one value to the next (notebooks.selectors.source_agents).
            models.Index(fields=["account", "source_agent"],
                         condition=Q(source_agent__isnull=False) & ~Q(status="deleted"),
                         name="note_source_agents"),
        ]
        constraints = [
            *_note_field_constraints("note"),
            models.CheckConstraint(condition=Q(version__gte=1), name="note_version_positive"),
            models.CheckConstraint(condition=Q(indexing__in=Indexing.values),
                                   name="note_indexing_valid"),
            models.CheckConstraint(
                condition=~Q(status="deleted") | Q(deleted_at__isnull=False),
                name="note_deleted_has_time",
            ),
            models.CheckConstraint(
                condition=~Q(status="expired") | Q(expired_at__isnull=False),
                name="note_expired_has_time",
            ),
            # One live handoff per task id per notebook (Personal counts as one notebook).
            models.UniqueConstraint(
                fields=["account", "notebook", "task_id"],
                condition=Q(kind="handoff") & ~Q(status="deleted"),
                nulls_distinct=False,
                name="note_one_live_handoff_per_task",
            ),
        ]

    def __str__(self) -> str:
        return f"note:{self.id}@{self.version}"

    @property
    def typed_id(self) -> str:
        return f"note:{self.id}"

    @property
    def versioned_id(self) -> str:
        return f"note:{self.id}@{self.version}"


class RevisionReason(models.TextChoices):
    CREATE = "create"
    UPDATE = "update"
    RESTORE_REVISION = "restore_revision"
    ARCHIVE = "archive"
    RESTORE = "restore"
    MOVE = "move"
    EXPIRE = "expire"
    DELETE = "delete"


class Revision(NoteFields):
    """A full snapshot of a note after one change. History is never rewritten."""

    Reason = RevisionReason

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="revisions")
    version = models.PositiveIntegerField()
    reason = models.CharField(max_length=24, choices=RevisionReason.choices)
    # PROTECT: revisions are append-only for the runtime role (no UPDATE), and
    # connections are revoked, never deleted.
    connection = models.ForeignKey(
        "grove.Connection", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    operation_id = models.UUIDField(null=True, blank=True)
    restored_from = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "notebooks_revision"
        constraints = [
            *_note_field_constraints("revision"),
            models.UniqueConstraint(fields=["note", "version"], name="revision_unique_version"),
            models.CheckConstraint(
                condition=Q(reason__in=RevisionReason.values),
                name="revision_reason_valid",
            ),
        ]
        ordering = ["note", "-version"]
        indexes = [
            # Recent activity: an account's revisions newest first, since a time.
            models.Index(fields=["account", "created_at", "id"], name="revision_recent"),
        ]

    def __str__(self) -> str:
        return self.versioned_id

    @property
    def versioned_id(self) -> str:
        return f"note:{self.note_id}@{self.version}"


class NoteEmbedding(models.Model):
    """The vector of a note's content under one embedding profile.

    The column has no fixed dimension so profiles of different sizes can coexist during
    `grove reindex`; each dimension gets its own partial HNSW index over
    `embedding::vector(N)` (see migrations and `notebooks.vectors`)."""

    id = models.BigAutoField(primary_key=True)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="embeddings")
    profile = models.CharField(max_length=200)
    dimension = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    embedding = VectorField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "notebooks_noteembedding"
        constraints = [
            models.UniqueConstraint(fields=["note", "profile"], name="one_vector_per_profile"),
        ]

    def __str__(self) -> str:
        return f"{self.note_id} {self.profile}"
