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

from django.db import OperationalError, connection
from django.db.models import F
from django.utils import timezone

from grove.embeddings import EmbeddingUnavailable, get_embedder
from grove.kernel import jobs
from grove.models import Job
from notebooks.dates import stated_dates
from notebooks.models import Indexing, Note, NoteEmbedding, Status

EMBED = "embed"
BATCH = 32


def content_fingerprint(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def read_content(note: Note) -> bool:
    """Set what is read from a note's content — its hash, the days it states, its
    indexing state — on the object; True when it needs an embed job."""
    note.content_hash = content_fingerprint(note.content)
    note.stated_dates = stated_dates(note.content)
    embedded = get_embedder() is not None
    # Lexical only: the full-text index is synchronous, so the note is ready at once.
    note.indexing = Indexing.PENDING if embedded else Indexing.READY
    return embedded


def mark_for_indexing(note: Note) -> None:
    """Caller: a service, in its tenant transaction, after saving new content. Also
    writes what else is read from the content: the days it states."""
    if read_content(note):
        jobs.enqueue(account_id=note.account_id, kind=EMBED, target_id=note.id,
                     target_version=note.version, target_hash=note.content_hash)
    Note.objects.filter(id=note.id).update(content_hash=note.content_hash,
                                           indexing=note.indexing,
                                           stated_dates=note.stated_dates)


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


def _complete(batch: list[Job], inputs: dict[uuid.UUID, Any],
              outputs: dict[uuid.UUID, Any]) -> set[uuid.UUID]:
    """Store the vectors whose note still has the content they were made from."""
    current = dict(
        Note.objects.select_for_update(of=("self",))
        .filter(id__in=[job.target_id for job in batch]).exclude(status=Status.DELETED)
        .order_by("id").values_list("id", "content_hash"))
    fresh = [job for job in batch if current.get(job.target_id) == job.target_hash]
    if not fresh:
        return set()
    now = timezone.now()
    with connection.cursor() as cursor:
        rows = []
        for job in fresh:
            profile, dimension, vector = outputs[job.id]
            rows += [job.account_id, job.target_id, profile, dimension, job.target_hash,
                     "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]", now]
        values = ", ".join(["(%s, %s, %s, %s, %s, %s::vector, %s)"] * len(fresh))
        upsert = (
            "INSERT INTO notebooks_noteembedding (account_id, note_id, profile, dimension, "  # noqa: S608 - placeholders only
            f"content_hash, embedding, created_at) VALUES {values} "
            "ON CONFLICT (note_id, profile) DO UPDATE SET dimension = EXCLUDED.dimension, "
            "content_hash = EXCLUDED.content_hash, embedding = EXCLUDED.embedding, "
            "created_at = EXCLUDED.created_at"
        )
        cursor.execute(upsert, rows)
        cursor.execute(
            "UPDATE notebooks_note AS n SET indexing = 'ready' "
            "FROM unnest(%s::uuid[], %s::text[]) AS done(id, hash) "
            "WHERE n.id = done.id AND n.content_hash = done.hash",
            [[job.target_id for job in fresh], [job.target_hash for job in fresh]],
        )
    return {job.id for job in fresh}


def _failed(job: Job) -> None:
    Note.objects.filter(id=job.target_id, content_hash=job.target_hash).update(
        indexing=Indexing.FAILED)


HANDLER = jobs.Handler(
    kind=EMBED, load=_load, execute=_execute, complete=_complete, on_failed=_failed,
    transient=(EmbeddingUnavailable, OperationalError, TimeoutError, ConnectionError),
    batch_size=BATCH,
)


# -- rebuilding every vector for a new embedding profile ------------------------------------


def _notes_without_vector(profile: str) -> Any:
    return (Note.objects.exclude(status=Status.DELETED)
            .exclude(embeddings__profile=profile, embeddings__content_hash=F("content_hash")))


def reindex_progress(profile: str) -> tuple[int, int]:
    """(notes with a current vector for `profile`, all notes) over every account."""
    from grove.kernel.tenancy import active_account_ids, tenant

    done = total = 0
    for account_id in active_account_ids():
        with tenant(account_id):
            all_notes = Note.objects.exclude(status=Status.DELETED).count()
            total += all_notes
            done += all_notes - _notes_without_vector(profile).count()
    return done, total


def reindex_start(profile: str, dimension: int) -> int:
    """Mark `profile` as being built and queue an embed job for every note that has no
    current vector for it. Returns how many were queued."""
    from grove.kernel.tenancy import active_account_ids, tenant
    from grove.models import EmbeddingProfile

    active = EmbeddingProfile.objects.filter(status=EmbeddingProfile.Status.ACTIVE).first()
    if active is None or active.name != profile:
        EmbeddingProfile.objects.filter(status=EmbeddingProfile.Status.BUILDING).exclude(
            name=profile).update(status=EmbeddingProfile.Status.RETIRED)
        EmbeddingProfile.objects.update_or_create(
            name=profile, defaults={"dimension": dimension, "activated_at": None,
                                    "status": EmbeddingProfile.Status.BUILDING})
    queued = 0
    for account_id in active_account_ids():
        with tenant(account_id):
            for note in _notes_without_vector(profile).select_for_update(skip_locked=True):
                mark_for_indexing(note)
                queued += 1
    return queued


def reindex_finish(profile: str) -> None:
    """Every note has a vector for `profile`: make it the active profile and drop the
    vectors of any other profile."""
    from django.db import transaction

    from grove.kernel.tenancy import active_account_ids, tenant
    from grove.models import EmbeddingProfile

    with transaction.atomic():
        EmbeddingProfile.objects.filter(status=EmbeddingProfile.Status.ACTIVE).exclude(
            name=profile).update(status=EmbeddingProfile.Status.RETIRED)
        EmbeddingProfile.objects.filter(name=profile).update(
            status=EmbeddingProfile.Status.ACTIVE, activated_at=timezone.now())
    for account_id in active_account_ids():
        with tenant(account_id):
            NoteEmbedding.objects.exclude(profile=profile).delete()
