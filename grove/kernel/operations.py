"""Operation ids: every mutation is idempotent per (account, operation id) (SPEC §3).

A service calls `claim()` first thing inside its tenant transaction:

* first use of the id → returns None; the service does its work and calls `record()`;
* same id, same action and arguments → returns the stored `Operation` (the caller
  replays its result); if a concurrent request with that id is still running, the
  unique index makes us wait for it to commit first;
* same id, anything different (action, arguments or calling connection) →
  `Conflict("operation_conflict")`, nothing changes.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from django.db import connection
from django.db.models import Q

from grove.kernel.actor import Actor
from grove.kernel.errors import Conflict, Invalid
from grove.models import Operation

# What `grove purge` leaves of an operation's result that named purged content.
PURGED = {"purged": True}


def coerce_operation_id(value: uuid.UUID | str | None) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    if not value:
        raise Invalid("Every change needs an operationId (a UUID).", code="operation_id_required")
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise Invalid("operationId must be a UUID.", code="invalid_operation_id") from None


def request_hash(action: str, arguments: dict[str, Any], caller: uuid.UUID | None) -> str:
    """Bound to the action, its arguments and the calling connection (None = website):
    the same id from another connection is a different request, not a replay."""
    canonical = json.dumps(
        {"action": action, "arguments": arguments, "caller": caller}, sort_keys=True,
        default=str, separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def claim(
    *, actor: Actor, operation_id: uuid.UUID, action: str, arguments: dict[str, Any]
) -> Operation | None:
    """Reserve the id inside the caller's tenant transaction. See module docstring."""
    digest = request_hash(action, arguments, actor.connection_id)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO grove_operation
                (id, account_id, operation_id, action, request_hash, connection_id, created_at)
            VALUES (%s, %s, %s, %s, %s, %s, now())
            ON CONFLICT (account_id, operation_id) DO NOTHING
            RETURNING id
            """,
            [uuid.uuid4(), actor.account_id, operation_id, action, digest, actor.connection_id],
        )
        inserted = cursor.fetchone()
    if inserted:
        return None
    existing = Operation.objects.get(account_id=actor.account_id, operation_id=operation_id)
    if existing.action != action or existing.request_hash != digest:
        raise Conflict(
            "This operationId was already used for a different request.",
            code="operation_conflict",
        )
    return existing


def seen(actor: Actor, operation_id: uuid.UUID) -> bool:
    """Whether the operation id was used already (a write about to be replayed, or
    refused as a different request): work done before the write's frame can skip it."""
    return Operation.objects.filter(account_id=actor.account_id,
                                    operation_id=operation_id).exists()


def record(
    *, actor: Actor, operation_id: uuid.UUID, result: Any, target_note_id: uuid.UUID | None
) -> None:
    Operation.objects.filter(account_id=actor.account_id, operation_id=operation_id).update(
        result=result, target_note_id=target_note_id
    )


def recorded(actor: Actor, operation_id: uuid.UUID) -> Operation | None:
    """The record of an operation this caller made — the same connection, or the website
    (None) — with its action and stored result; None if there is none. Caller holds the
    tenant transaction."""
    caller = Q(connection__isnull=True) if actor.connection_id is None \
        else Q(connection_id=actor.connection_id)
    return Operation.objects.filter(caller, account_id=actor.account_id,
                                    operation_id=operation_id).first()
