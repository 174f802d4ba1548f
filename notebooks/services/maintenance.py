"""Upkeep the system runs for an account: retention (expire), indexing retries and back-fill."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.utils import timezone

from grove.kernel.actor import WRITE, Actor
from grove.kernel.tenancy import tenant
from notebooks.models import (
    EXPIRED_RESTORE_WINDOW_DAYS,
    Indexing,
    Note,
    RevisionReason,
    Status,
)
from notebooks.schemas.notes import ExpireOut, NoteOut
from notebooks.selectors.access import (
    access_note,
)
from notebooks.services.indexing import mark_for_indexing
from notebooks.services.revisions import save_new_version


def note_expire_due(*, actor: Actor, now: datetime | None = None) -> ExpireOut:
    """Retention for one account (the periodic `expire` job calls this per account):
    active notes past `expires_at` become expired; notes expired for more than 60 days
    are soft-deleted. Each change writes a revision."""
    now = now or timezone.now()
    expired = deleted = 0
    with tenant(actor):
        actor.require(WRITE)
        due = (Note.objects.select_for_update(skip_locked=True)
               .filter(account_id=actor.account_id, status=Status.ACTIVE, expires_at__lte=now))
        for note in due:
            note.status, note.expired_at = Status.EXPIRED, note.expires_at
            save_new_version(note, reason=RevisionReason.EXPIRE, actor=actor,
                             operation_id=None, now=now)
            expired += 1
        cutoff = now - timedelta(days=EXPIRED_RESTORE_WINDOW_DAYS)
        stale = (Note.objects.select_for_update(skip_locked=True)
                 .filter(account_id=actor.account_id, status=Status.EXPIRED,
                         expired_at__lte=cutoff))
        for note in stale:
            note.status, note.deleted_at = Status.DELETED, now
            save_new_version(note, reason=RevisionReason.DELETE, actor=actor,
                             operation_id=None, now=now)
            deleted += 1
    return ExpireOut(expired=expired, deleted=deleted)


def note_retry_indexing(*, actor: Actor, note_id: uuid.UUID | str) -> NoteOut:
    """Queue semantic indexing again for a note whose indexing failed (the retry action
    of the note page). Idempotent: a note that is not `failed` is returned unchanged."""
    with tenant(actor):
        note = access_note(actor, note_id, need=WRITE, for_update=True)
        if note.indexing == Indexing.FAILED:
            mark_for_indexing(note)
        return NoteOut.of(note)


def note_index_missing(*, actor: Actor) -> int:
    """Queue indexing for notes that are `pending` without a live job (notes written
    before embeddings were enabled, or by an older version). Returns how many."""
    from grove.models import Job

    with tenant(actor):
        live_targets = Job.objects.filter(
            kind="embed", status__in=[Job.Status.QUEUED, Job.Status.RUNNING]
        ).values("target_id")
        waiting = (Note.objects.select_for_update(skip_locked=True)
                   .filter(account_id=actor.account_id, indexing=Indexing.PENDING)
                   .exclude(status=Status.DELETED).exclude(id__in=live_targets))
        count = 0
        for note in waiting:
            mark_for_indexing(note)
            count += 1
        return count
