"""Core tables: the account, connections (API keys / OAuth clients with grants) and
operation records (idempotency). Every account-owned table carries `account_id` and
is protected by row-level security (see migrations and `grove.tenancy`)."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractUser
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

CAPABILITIES = ("memory:read", "memory:write")


class Account(AbstractUser):
    """A website user. Everything else belongs to exactly one account."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # While set, saves with capture="automatic" are refused (SPEC §3).
    capture_paused_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "grove_account"


class Connection(models.Model):
    """How anything other than the website reaches data: an API key or an OAuth client.

    The grant is `grant_personal` (personal notes) plus either every notebook, current
    and future (`grant_all`), or exactly the notebooks in `grant_notebooks`. Grants never
    inherit down the notebook tree.
    """

    class Kind(models.TextChoices):
        API_KEY = "api_key"
        OAUTH = "oauth"

    class Status(models.TextChoices):
        PENDING = "pending"
        ACTIVE = "active"
        REVOKED = "revoked"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="connections")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    capabilities = ArrayField(models.CharField(max_length=32), default=list)
    grant_personal = models.BooleanField(default=False)
    grant_all = models.BooleanField(default=False)
    grant_notebooks = ArrayField(models.UUIDField(), default=list, blank=True)
    key_prefix = models.CharField(max_length=32, blank=True, default="")
    key_hash = models.CharField(max_length=128, null=True, blank=True, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "grove_connection"
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["api_key", "oauth"]), name="connection_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "active", "revoked"]),
                name="connection_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(capabilities__contained_by=list(CAPABILITIES)),
                name="connection_capabilities_known",
            ),
            models.CheckConstraint(
                condition=Q(status="revoked", revoked_at__isnull=False)
                | (~Q(status="revoked") & Q(revoked_at__isnull=True)),
                name="connection_revoked_at_matches_status",
            ),
            models.CheckConstraint(
                condition=Q(name__regex=r"\S"), name="connection_name_not_blank"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class Operation(models.Model):
    """Idempotency record of one mutation (SPEC §3 "Writes").

    Written in the same transaction as the mutation it records; `(account, operation_id)`
    is unique, so of concurrent requests with one id exactly one does the work and the
    others wait for it and replay its `result`.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    operation_id = models.UUIDField()
    action = models.CharField(max_length=64)
    request_hash = models.CharField(max_length=64)
    result = models.JSONField(null=True)
    # The note the operation produced or changed, for "replay of a deleted note → gone".
    target_note_id = models.UUIDField(null=True)
    connection = models.ForeignKey(
        Connection, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "grove_operation"
        constraints = [
            models.UniqueConstraint(
                fields=["account", "operation_id"], name="operation_unique_per_account"
            ),
            models.CheckConstraint(
                condition=Q(request_hash__regex=r"^[0-9a-f]{64}$"),
                name="operation_request_hash_sha256",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.operation_id}"
