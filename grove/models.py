"""Core tables: the account, connections (API keys / OAuth clients with grants) and
operation records (idempotency). Every account-owned table carries `account_id` and
is protected by row-level security (see migrations and `grove.kernel.tenancy`)."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractUser
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.utils import timezone

from grove.kernel.validation import TIME_ZONE_MAX_CHARS

CAPABILITIES = ("memory:read", "memory:write")


class SecretAction(models.TextChoices):
    # Replace each credential with a marker naming its kind; the save goes on and its
    # result says what was replaced (`redacted`).
    REDACT = "redact"
    # Nothing is saved: `secret_detected`, naming the kinds found.
    REFUSE = "refuse"


class Account(AbstractUser):
    """A website user. Everything else belongs to exactly one account."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # While set, saves with capture="automatic" are refused (SPEC §3).
    capture_paused_at = models.DateTimeField(null=True, blank=True)
    # The IANA zone the website shows times in (SPEC §11 Settings). Checked against the
    # zone database by its one writer, `account_set_time_zone`; stored instants stay UTC.
    time_zone = models.CharField(max_length=TIME_ZONE_MAX_CHARS, default="UTC",
                                 db_default="UTC")
    # What a save does with a credential it holds (SPEC §5, grove.kernel.credentials),
    # by where the text comes from; set on the Settings page (`account_set_secret_rules`).
    secrets_on_ingest = models.CharField(max_length=8, choices=SecretAction.choices,
                                         default=SecretAction.REDACT,
                                         db_default=SecretAction.REDACT)
    secrets_on_automatic = models.CharField(max_length=8, choices=SecretAction.choices,
                                            default=SecretAction.REFUSE,
                                            db_default=SecretAction.REFUSE)
    secrets_on_explicit = models.CharField(max_length=8, choices=SecretAction.choices,
                                           default=SecretAction.REDACT,
                                           db_default=SecretAction.REDACT)
    # The owner's own credential patterns: [{"name", "pattern"}], RE2 syntax.
    secret_patterns = models.JSONField(default=list, db_default=[], blank=True)
    # The tombstone (`grove.identity.deletion`): set once, never cleared. From then on the
    # tenant context of this account opens nothing (grove 0014), so no late job, retried
    # operation or OAuth callback can write to it; `grove purge` removes its content.
    deleted_at = models.DateTimeField(null=True, blank=True)
    # Set with the revoke, the first step of a deletion: a deletion cut short after it
    # is finished by `finish_deletions` (beat), never left half done.
    deletion_requested_at = models.DateTimeField(null=True, blank=True)

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
    # Where its writes go and what its reads cover by default (with Personal), while the
    # grant holds it (`Actor.home`); the owner picks it on Connections.
    home_notebook_id = models.UUIDField(null=True, blank=True)
    key_prefix = models.CharField(max_length=32, blank=True, default="")
    key_hash = models.CharField(max_length=128, null=True, blank=True, unique=True)
    # OAuth clients: the client id (django-oauth-toolkit Application.client_id); while
    # pending, the outstanding approval request ({id, expiresAt, clientName,
    # redirectHost} — bounded, replaced on each new request, cleared by approval, grant
    # edits and revocation); and the request whose approval made it active.
    oauth_client_id = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    pending_request = models.JSONField(null=True, blank=True)
    approved_request_id = models.UUIDField(null=True, blank=True)
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
            # One live connection per OAuth client and account (a revoked one stays as
            # history; the client's next token after the cutoff starts a new one).
            models.UniqueConstraint(
                fields=["account", "oauth_client_id"],
                condition=Q(kind="oauth") & ~Q(status="revoked"),
                name="connection_one_live_per_oauth_client",
            ),
            models.CheckConstraint(
                condition=Q(kind="api_key") | Q(oauth_client_id__isnull=False),
                name="connection_oauth_has_client_id",
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


class Job(models.Model):
    """The record of one piece of background work (SPEC §6). Written in the same
    transaction as the change that needs it; the Celery message is only a wake-up call
    sent on commit, so a lost message or a dead worker loses nothing (`recover`)."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        DISCARDED = "discarded"  # stale: its target changed or vanished meanwhile

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=32)
    target_id = models.UUIDField()
    # What the job was made for: the target's version and a fingerprint of its input.
    target_version = models.PositiveIntegerField(default=0)
    target_hash = models.CharField(max_length=64, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    attempts = models.PositiveSmallIntegerField(default=0)
    max_attempts = models.PositiveSmallIntegerField(default=5)
    run_after = models.DateTimeField(default=timezone.now)
    lease_token = models.UUIDField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(default=timezone.now)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "grove_job"
        indexes = [
            models.Index(fields=["kind", "run_after"], condition=Q(status="queued"),
                         name="job_ready"),
            models.Index(fields=["lease_expires_at"], condition=Q(status="running"),
                         name="job_leases"),
            models.Index(fields=["account", "target_id"], name="job_target"),
            # "Has this kind of work been taken lately?" (grove.kernel.jobs.recover).
            models.Index(fields=["account", "kind", "finished_at"],
                         condition=Q(finished_at__isnull=False), name="job_finished"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "done", "failed", "discarded"]),
                name="job_status_valid",
            ),
            models.CheckConstraint(
                condition=~Q(status="running")
                | Q(lease_token__isnull=False, lease_expires_at__isnull=False),
                name="job_running_has_lease",
            ),
            models.CheckConstraint(condition=Q(attempts__lte=models.F("max_attempts")),
                                   name="job_attempts_bounded"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.target_id}@{self.target_version} ({self.status})"


class EmbeddingProfile(models.Model):
    """Which embedding model (id + dimension) the stored vectors were made with.

    Installation-wide, not account-owned. Start-up refuses a configured profile that is
    neither the active one nor being built; `grove reindex` builds a new one in the
    background and switches to it when every note has a vector.
    """

    class Status(models.TextChoices):
        ACTIVE = "active"
        BUILDING = "building"
        RETIRED = "retired"

    name = models.CharField(max_length=200, primary_key=True)
    dimension = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices)
    created_at = models.DateTimeField(default=timezone.now)
    activated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "grove_embedding_profile"
        constraints = [
            models.UniqueConstraint(fields=["status"], condition=Q(status="active"),
                                    name="one_active_embedding_profile"),
            models.UniqueConstraint(fields=["status"], condition=Q(status="building"),
                                    name="one_embedding_profile_building"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"


class RedeemedCode(models.Model):
    """An OAuth authorization code that has been exchanged, and what it bought.

    RFC 6749 §4.1.2: a code used twice must be refused and the tokens issued from it
    revoked — the second use means it leaked. The toolkit deletes a code once used, so
    this remembers it (by digest) with the refresh-token family and access token issued.
    Not account-scoped by row-level security, like the toolkit's own token tables: the
    token endpoint runs before any account is known."""

    id = models.BigAutoField(primary_key=True)
    code_digest = models.CharField(max_length=64, unique=True)
    client_id = models.CharField(max_length=255)
    token_family = models.UUIDField(null=True)
    access_token_digest = models.CharField(max_length=64)
    redeemed_at = models.DateTimeField(default=timezone.now, db_index=True)
    revoked_at = models.DateTimeField(null=True)

    class Meta:
        db_table = "grove_redeemedcode"

    def __str__(self) -> str:
        return f"code for {self.client_id} at {self.redeemed_at:%Y-%m-%d %H:%M}"


class Heartbeat(models.Model):
    """The last sign of life of a background part (`worker`: written every
    `GROVE_HEARTBEAT_SECONDS` by a beat-scheduled task a worker runs, so a fresh one
    proves beat, broker and a worker together). Not account data: no RLS."""

    name = models.CharField(max_length=32, primary_key=True)
    at = models.DateTimeField()
    detail = models.JSONField(default=dict)

    class Meta:
        db_table = "grove_heartbeat"

    def __str__(self) -> str:
        return f"{self.name} at {self.at:%Y-%m-%d %H:%M:%S}"
