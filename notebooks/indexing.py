"""Semantic indexing of notes: the `embed` job kind (SPEC §6).

A content change marks the note `indexing: pending` and records an `embed` job for its
new content hash, in the same transaction (`mark_for_indexing`). The job embeds the
content outside any transaction and stores the vector only if the note still has that
content — an edited or deleted note never gets an old vector back.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import Any

from django.db import OperationalError
from django.utils import timezone

from grove import jobs
from grove.embeddings import EmbeddingUnavailable, get_embedder
from grove.models import Job
from notebooks.models import Indexing, Note, NoteEmbedding, Status

EMBED = "embed"
BATCH = 32


def content_fingerprint(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def mark_for_indexing(note: Note) -> None:
    """Caller: a service, in its tenant transaction, after saving new content."""
    note.content_hash = content_fingerprint(note.content)
    if get_embedder() is None:
        note.indexing = Indexing.READY  # lexical only: the full-text index is synchronous
    else:
        note.indexing = Indexing.PENDING
        jobs.enqueue(account_id=note.account_id, kind=EMBED, target_id=note.id,
                     target_version=note.version, target_hash=note.content_hash)
    Note.objects.filter(id=note.id).update(content_hash=note.content_hash,
                                           indexing=note.indexing)


def _load(batch: Sequence[Job]) -> dict[uuid.UUID, Any]:
    notes = {
        note.id: note
        for note in Note.objects.filter(id__in=[job.target_id for job in batch])
        .exclude(status=Status.DELETED)
        .only("id", "content", "content_hash")
    }
    return {
        job.id: notes[job.target_id].content
        for job in batch
        if job.target_id in notes and notes[job.target_id].content_hash == job.target_hash
    }


def _execute(texts: list[str]) -> list[Any]:
    embedder = get_embedder()
    if embedder is None:
        raise EmbeddingUnavailable("embeddings are disabled")
    return [(embedder.profile, embedder.dimension, vector) for vector in embedder.embed(texts)]


def _complete(job: Job, content: str, output: Any) -> bool:
    profile, dimension, vector = output
    note = (Note.objects.select_for_update(of=("self",)).filter(id=job.target_id)
            .exclude(status=Status.DELETED).only("id", "account_id", "content_hash").first())
    if note is None or note.content_hash != job.target_hash:
        return False
    NoteEmbedding.objects.update_or_create(
        note_id=note.id, profile=profile,
        defaults={"account_id": note.account_id, "dimension": dimension,
                  "content_hash": job.target_hash, "embedding": vector.tolist(),
                  "created_at": timezone.now()},
    )
    Note.objects.filter(id=note.id, content_hash=job.target_hash).update(
        indexing=Indexing.READY)
    return True


def _failed(job: Job) -> None:
    Note.objects.filter(id=job.target_id, content_hash=job.target_hash).update(
        indexing=Indexing.FAILED)


HANDLER = jobs.Handler(
    kind=EMBED, load=_load, execute=_execute, complete=_complete, on_failed=_failed,
    transient=(EmbeddingUnavailable, OperationalError, TimeoutError, ConnectionError),
    batch_size=BATCH,
)
