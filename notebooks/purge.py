"""What `grove purge` (grove.kernel.purge) removes of the library, and what account
deletion (grove.identity.deletion) hides. Both run in the account's tenant transaction."""

from __future__ import annotations

import json
import uuid
from datetime import datetime

from django.db import connections, transaction
from django.db.models import ProtectedError, Q

from grove.kernel.operations import PURGED
from notebooks.models import (
    IngestUpload,
    IngestUploadFile,
    IngestUploadPart,
    NegativeClaim,
    Note,
    Notebook,
    Status,
    TruthDeclaration,
    Vision,
)


def hide_notes(account_id: uuid.UUID, now: datetime) -> int:
    return Note.objects.filter(account_id=account_id).exclude(status=Status.DELETED).update(
        status=Status.DELETED, deleted_at=now)


def hide_notebooks(account_id: uuid.UUID, now: datetime) -> int:
    return Notebook.objects.filter(account_id=account_id, deleted_at__isnull=True).update(
        deleted_at=now)


def hide_uploads(account_id: uuid.UUID, now: datetime) -> int:
    """Uploads not finished end `failed`; what they still hold (the sealed upload, files
    waiting with note text) goes at once, not at the purge."""
    IngestUploadPart.objects.filter(account_id=account_id).delete()
    IngestUploadFile.objects.filter(account_id=account_id).delete()
    return IngestUpload.objects.filter(account_id=account_id).exclude(
        state__in=[IngestUpload.State.DONE, IngestUpload.State.FAILED]).update(
        state=IngestUpload.State.FAILED, finished_at=now, error="The account was deleted.")


def purgeable_notes(account_id: uuid.UUID, cutoff: datetime) -> Q:
    """Notes deleted before the cutoff (for a link to one, `sharing` purges first)."""
    return Q(account_id=account_id, status=Status.DELETED, deleted_at__lt=cutoff)


def purge_notes(account_id: uuid.UUID, cutoff: datetime, using: str) -> int:
    """Deleted notes past the window, with their revisions, vectors, ingest ledger rows,
    ground-truth entries and waiting revisions (their foreign keys cascade). Locked
    first: a note restored from the trash meanwhile is no longer deleted, and stays.
    What operations recorded about them (a save's result holds the text, another
    save's `similar` a snippet) is replaced by the `purged` marker: replaying such an
    operation answers `gone`."""
    ids = list(Note.objects.using(using).select_for_update()
               .filter(purgeable_notes(account_id, cutoff)).values_list("id", flat=True))
    if not ids:
        return 0
    _, by_model = Note.objects.using(using).filter(
        purgeable_notes(account_id, cutoff), id__in=ids).delete()
    with connections[using].cursor() as cursor:
        cursor.execute(
            "UPDATE grove_operation SET result = %s::jsonb WHERE account_id = %s "
            "AND (target_note_id = ANY(%s) OR result::text LIKE ANY(%s))",
            [json.dumps(PURGED), account_id, ids, [f"%{note_id}%" for note_id in ids]])
    return by_model.get("notebooks.Note", 0)


def purge_notebooks(account_id: uuid.UUID, cutoff: datetime, using: str) -> int:
    """Deleted notebooks past the window that hold nothing any more (no notebook, no
    note in any state), deepest first, with their vision, ground truth and negative
    claims. One still named by something kept (a conversation asked there) stays."""
    purged = 0
    kept: set[uuid.UUID] = set()
    while True:
        empty = list(
            Notebook.objects.using(using)
            .filter(account_id=account_id, deleted_at__lt=cutoff)
            .exclude(id__in=kept)
            .exclude(id__in=Notebook.objects.using(using).filter(
                account_id=account_id, parent__isnull=False).values("parent_id"))
            .exclude(id__in=Note.objects.using(using).filter(
                account_id=account_id, notebook__isnull=False).values("notebook_id"))
            .values_list("id", flat=True))
        if not empty:
            return purged
        for notebook_id in empty:
            try:
                with transaction.atomic(using=using):
                    for model in (Vision, TruthDeclaration, NegativeClaim):
                        model.objects.using(using).filter(notebook_id=notebook_id).delete()
                    Notebook.objects.using(using).filter(id=notebook_id).delete()
                purged += 1
            except ProtectedError:
                kept.add(notebook_id)
