"""Conversations (SPEC §8): durable Ask threads and their turns.

A conversation and a turn are named by the client's UUID (`client_id`, unique within
the account — another account using the same UUID is a different row, so ids can be
neither taken nor probed across accounts), so a retried create or submit finds the row
it made; the primary key is Grove's own. `Conversation.version` counts the turns
submitted (it is also the turn count): a turn names the version it expects, and a turn
refused for any reason leaves it unchanged. A turn is `pending` until its generation
job stores an answer (`completed`) or gives up (`failed`, retryable). Deleting a
conversation hides it; its rows are retained.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

TITLE_MAX_CHARS = 200
PROPOSAL_SUMMARY_MAX_CHARS = 300


class Conversation(models.Model):
    class Scope(models.TextChoices):
        EVERYWHERE = "everywhere"  # every granted notebook (and Personal if included)
        PERSONAL = "personal"
        NOTEBOOK = "notebook"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # The UUID the client named it by: unique within the account only, so another
    # account's ids can be neither taken nor probed for.
    client_id = models.UUIDField(editable=False)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    # Who started it: None = the owner in the website; a connection sees only its own.
    connection = models.ForeignKey("grove.Connection", null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    title = models.CharField(max_length=TITLE_MAX_CHARS, blank=True)
    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.EVERYWHERE)
    notebook = models.ForeignKey("notebooks.Notebook", null=True, blank=True,
                                 on_delete=models.PROTECT, related_name="+")
    include_personal = models.BooleanField(default=True)
    version = models.PositiveIntegerField(default=0)
    request_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "ask_conversation"
        indexes = [models.Index(fields=["account", "-created_at", "-id"],
                                name="conversation_history",
                                condition=Q(deleted_at__isnull=True))]
        constraints = [
            models.UniqueConstraint(fields=["account", "client_id"],
                                    name="conversation_client_id_unique"),
            models.CheckConstraint(
                condition=Q(scope="notebook", notebook__isnull=False)
                | (~Q(scope="notebook") & Q(notebook__isnull=True)),
                name="conversation_notebook_iff_scope"),
            models.CheckConstraint(condition=Q(version__lte=100),
                                   name="conversation_turn_limit"),
        ]

    def __str__(self) -> str:
        return self.title or str(self.client_id)


class Turn(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        COMPLETED = "completed"
        FAILED = "failed"

    class Format(models.TextChoices):
        PLAIN = "plain"
        MARKDOWN = "markdown"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    client_id = models.UUIDField(editable=False)  # the client's UUID, unique per account
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE,
                                     related_name="turns")
    connection = models.ForeignKey("grove.Connection", null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    position = models.PositiveSmallIntegerField()  # 1-based
    query = models.TextField()
    format = models.CharField(max_length=16, choices=Format.choices, default=Format.PLAIN)
    # Strict source selection as submitted: {"notes": [...], "notebooks": [...], "only": b}.
    context = models.JSONField(null=True, blank=True)
    # A tidy-up of one place as submitted: {"notebookId": "<uuid>" | None (Personal)}.
    tidy = models.JSONField(null=True, blank=True)
    request_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # The provider the turn is generated with (a fingerprint of the settings).
    provider = models.CharField(max_length=64, blank=True)
    # Completed: {status, blocks, sources, contextCoverage, proposalsDropped} (see
    # ask.services and ask.generation); its proposals are `Proposal` rows.
    result = models.JSONField(null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "ask_turn"
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["account", "client_id"],
                                    name="turn_client_id_unique"),
            models.UniqueConstraint(fields=["conversation", "position"],
                                    name="turn_position_unique"),
            models.CheckConstraint(condition=Q(position__gte=1, position__lte=100),
                                   name="turn_position_range"),
            models.CheckConstraint(condition=Q(status__in=["pending", "completed", "failed"]),
                                   name="turn_status_valid"),
            models.CheckConstraint(
                condition=~Q(status="completed") | Q(result__isnull=False),
                name="turn_completed_has_result"),
        ]

    def __str__(self) -> str:
        return f"{self.conversation_id} #{self.position}"


class Proposal(models.Model):
    """A change an answer proposes to the library (SPEC §8 "Proposals"), checked against
    what the model was shown and the conversation's grant before it is stored.

    `change` is the checked instruction; `preview` what the owner is shown (the exact
    notes and versions, diffs, subtree counts, what undo will do); `fingerprint` the state
    the preview was made from — every affected note's version and every affected
    notebook's state. Apply and undo recompute it under row locks and refuse (409
    `proposal_stale`) when it differs. `applied` is what undo needs: the prior versions,
    what was made, and the fingerprint right after the apply (undo's own fence).
    A dropped proposal is kept with its reason and never shown.
    """

    class Kind(models.TextChoices):
        EDIT = "edit"
        CREATE = "create"
        MERGE = "merge"
        ORGANISE = "organise"
        ARCHIVE = "archive"
        RESTORE = "restore"
        DELETE = "delete"

    class State(models.TextChoices):
        PROPOSED = "proposed"
        APPLIED = "applied"
        UNDONE = "undone"
        DROPPED = "dropped"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="+")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="proposals")
    position = models.PositiveSmallIntegerField()  # 1-based, in the answer's order
    kind = models.CharField(max_length=16, choices=Kind.choices, blank=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PROPOSED)
    summary = models.CharField(max_length=PROPOSAL_SUMMARY_MAX_CHARS, blank=True)
    change = models.JSONField(default=dict)
    preview = models.JSONField(default=dict)
    fingerprint = models.JSONField(default=dict)
    applied = models.JSONField(null=True, blank=True)
    drop_reason = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    applied_at = models.DateTimeField(null=True, blank=True)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "ask_proposal"
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["turn", "position"],
                                    name="proposal_position_unique"),
            models.CheckConstraint(
                condition=Q(state__in=["proposed", "applied", "undone", "dropped"]),
                name="proposal_state_valid"),
            models.CheckConstraint(  # a dropped one keeps what the model said, if anything
                condition=Q(kind__in=["edit", "create", "merge", "organise", "archive",
                                      "restore", "delete"]) | Q(state="dropped"),
                name="proposal_kind_valid"),
            models.CheckConstraint(
                condition=(Q(state="dropped") & ~Q(drop_reason=""))
                | (~Q(state="dropped") & Q(drop_reason="")),
                name="proposal_dropped_iff_reason"),
            models.CheckConstraint(condition=~Q(state__in=["applied", "undone"])
                                   | Q(applied__isnull=False, applied_at__isnull=False),
                                   name="proposal_applied_has_record"),
        ]

    def __str__(self) -> str:
        return f"{self.turn_id} proposal {self.position} ({self.kind}, {self.state})"
