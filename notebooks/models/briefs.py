"""What agents read first and are held to (SPEC §10): visions, ground-truth declarations,
negative claims, and revisions of declared notes held for the owner."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import VectorField

from notebooks.models.notes import CONTENT_MAX_CHARS, Note, Notebook

VISION_MAX_CHARS = CONTENT_MAX_CHARS


class Vision(models.Model):
    """What the work is for, in the owner's words: one narrative per notebook and one for
    the account (`notebook` NULL). Edited in place, each change a `VisionRevision`. Never
    embedded and never searched: the brief places it, verbatim, at the top (SPEC §10).
    Empty content means "no vision" (clearing it is a revision too)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    notebook = models.ForeignKey(Notebook, null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="+")
    content = models.TextField(blank=True, default="")
    version = models.PositiveIntegerField(default=1)
    updated_by = models.ForeignKey("grove.Connection", null=True, blank=True,
                                   on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "notebooks_vision"
        constraints = [
            # One per notebook, and one for the account (NULL counts as one place).
            models.UniqueConstraint(fields=["account", "notebook"], nulls_distinct=False,
                                    name="vision_one_per_place"),
            models.CheckConstraint(
                # Trimmed (the service strips it), or empty.
                condition=Q(content="") | (Q(content__regex=r"^\S") & Q(content__regex=r"\S$")
                                           & Q(content__length__lte=VISION_MAX_CHARS)),
                name="vision_content_length"),
            models.CheckConstraint(condition=Q(version__gte=1), name="vision_version_positive"),
        ]

    def __str__(self) -> str:
        return f"vision of {self.notebook_id or 'the account'} v{self.version}"


class VisionRevision(models.Model):
    """A vision as it was after one change (append-only for the runtime role, like
    `Revision`)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    vision = models.ForeignKey(Vision, on_delete=models.CASCADE, related_name="revisions")
    version = models.PositiveIntegerField()
    content = models.TextField(blank=True, default="")
    connection = models.ForeignKey("grove.Connection", null=True, blank=True,
                                   on_delete=models.PROTECT, related_name="+")
    operation_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "notebooks_visionrevision"
        constraints = [
            models.UniqueConstraint(fields=["vision", "version"],
                                    name="visionrevision_unique_version"),
        ]

    def __str__(self) -> str:
        return f"vision {self.vision_id} v{self.version}"


class TruthPolicy(models.TextChoices):
    PRIORITIZE = "prioritize"  # declared notes rank first; the rest still answer
    RESTRICT = "restrict"  # only declared notes answer for facts, decisions, solutions


TRUTH_MAX_NOTES = 100
NEGATIVE_MAX_CHARS = 1000
NEGATIVES_MAX = 200


class TruthDeclaration(models.Model):
    """A place's ground truth (SPEC §10): the notes declared authoritative there — a
    notebook's, or the account's (`notebook` NULL) — and its policy. Replaced whole by
    each declaration; an empty set is no row at all (cleared)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    notebook = models.ForeignKey(Notebook, null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="+")
    policy = models.CharField(max_length=16, choices=TruthPolicy.choices)
    declared_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "notebooks_truthdeclaration"
        constraints = [
            models.UniqueConstraint(fields=["account", "notebook"], nulls_distinct=False,
                                    name="truth_one_per_place"),
            models.CheckConstraint(condition=Q(policy__in=TruthPolicy.values),
                                   name="truth_policy_valid"),
        ]

    def __str__(self) -> str:
        return f"truth of {self.notebook_id or 'the account'} ({self.policy})"


class TruthNote(models.Model):
    """One declared note, with its version when declared: reads follow the note's
    revisions forward (the current accepted version), the page shows both."""

    id = models.BigAutoField(primary_key=True)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    declaration = models.ForeignKey(TruthDeclaration, on_delete=models.CASCADE,
                                    related_name="entries")
    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="+")
    declared_version = models.PositiveIntegerField()
    position = models.PositiveIntegerField()

    class Meta:
        db_table = "notebooks_truthnote"
        constraints = [
            models.UniqueConstraint(fields=["declaration", "note"], name="truthnote_once"),
        ]
        indexes = [models.Index(fields=["account", "note"], name="truthnote_by_note")]

    def __str__(self) -> str:
        return f"{self.note_id} declared at v{self.declared_version}"


class NegativeClaim(models.Model):
    """A claim known to be false, for a notebook or the whole account (`notebook` NULL).
    Its own table, apart from notes and declarations: no read of declared truth can reach
    one by missing a filter. The account's always apply; a notebook's add to them."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    notebook = models.ForeignKey(Notebook, null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="+")
    claim = models.TextField()
    # The claim's vector under `profile` (made when it is added, before the transaction
    # opens), for the semantic half of matching answers and notes against it; empty
    # profile: embeddings were off, or the provider failed — lexical matching still runs.
    profile = models.CharField(max_length=200, blank=True, default="")
    embedding = VectorField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "notebooks_negativeclaim"
        constraints = [
            models.CheckConstraint(
                condition=Q(claim__regex=r"^\S") & Q(claim__regex=r"\S$")
                & Q(claim__length__lte=NEGATIVE_MAX_CHARS),
                name="negative_claim_length"),
        ]
        indexes = [models.Index(fields=["account", "notebook"], name="negative_place")]

    def __str__(self) -> str:
        return self.claim[:60]


class PendingStatus(models.TextChoices):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    SUPERSEDED = "superseded"  # the note changed another way first


class Verdict(models.TextChoices):
    SUPPORTED = "supported"
    CONTRADICTS = "contradicts"
    UNVERIFIABLE = "unverifiable"
    NEEDS_REVIEW = "needs_review"  # no model, or no usable answer from it


class PendingOrigin(models.TextChoices):
    DECLARED = "declared"  # a change to a declared note: every connection's is held
    CHECKED = "checked"  # a write checked against the declared set, which it failed


class PendingRevision(models.Model):
    """A connection's write held until the owner accepts it on the website (SPEC §10):
    readers keep the accepted head meanwhile (or, for a new note, see nothing). Either a
    change to a declared note (`origin` declared), or a write into a notebook that checks
    agents' writes and that failed the check (`origin` checked: `notebook` set; `note`
    NULL when it would have created a note, `changes` then holding its fields).
    `base_version` is the head it was proposed against (the prior head a verdict checks
    it with; 0 for a new note)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    origin = models.CharField(max_length=16, choices=PendingOrigin.choices,
                              default=PendingOrigin.DECLARED, db_default=PendingOrigin.DECLARED)
    note = models.ForeignKey(Note, null=True, blank=True, on_delete=models.CASCADE,
                             related_name="+")
    notebook = models.ForeignKey(Notebook, null=True, blank=True, on_delete=models.CASCADE,
                                 related_name="+")
    base_version = models.PositiveIntegerField()
    changes = models.JSONField()  # the fields the connection gave, cleaned
    connection = models.ForeignKey("grove.Connection", on_delete=models.PROTECT,
                                   related_name="+")
    operation_id = models.UUIDField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=PendingStatus.choices,
                              default=PendingStatus.PENDING)
    verdict = models.CharField(max_length=16, choices=Verdict.choices,
                               default=Verdict.NEEDS_REVIEW)
    findings = models.JSONField(default=list)  # per-claim: {claim, finding, noteId, why}
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=200, blank=True, default="")
    accepted_version = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        db_table = "notebooks_pendingrevision"
        constraints = [
            models.CheckConstraint(condition=Q(status__in=PendingStatus.values),
                                   name="pending_status_valid"),
            models.CheckConstraint(condition=Q(verdict__in=Verdict.values),
                                   name="pending_verdict_valid"),
            models.CheckConstraint(
                condition=Q(status="pending") | Q(decided_at__isnull=False),
                name="pending_decided_has_time"),
            models.CheckConstraint(condition=Q(origin__in=PendingOrigin.values),
                                   name="pending_origin_valid"),
            # A declared note's change names its note; a checked write, its notebook.
            models.CheckConstraint(
                condition=(Q(origin="declared", note__isnull=False)
                           | Q(origin="checked", notebook__isnull=False)),
                name="pending_names_its_target"),
        ]
        indexes = [models.Index(fields=["account", "status", "created_at"],
                                name="pending_open")]

    def __str__(self) -> str:
        if self.note_id is None:
            return f"pending new note in {self.notebook_id}"
        return f"pending change of {self.note_id} on v{self.base_version}"
