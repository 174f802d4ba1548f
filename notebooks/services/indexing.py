"""Indexing of notes: their passages and the `embed` job kind (SPEC §6).

A content change cuts the note into passages (`passages.services.passages_sync`: rows
whose text is unchanged stay, with their vectors), marks the note `indexing: pending`
and records an `embed` job for its new content hash, in the same transaction
(`mark_for_indexing`). The job embeds the note's passages that have no vector yet,
outside any transaction, and stores the vectors only if the note still has that content
— an edited or deleted note never gets an old vector back. A job takes at most
PASSAGES_PER_BATCH passages (of all the notes in its batch); what is left is queued
again, so one long document never holds a lease for long.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import Any

from django.db import OperationalError
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from grove.embeddings import EmbeddingUnavailable, get_embedder
from grove.kernel import jobs
from grove.kernel.actor import Actor
from grove.kernel.tenancy import tenant
from grove.models import Job
from links.services import NoteText, links_sync
from notebooks.dates import stated_dates
from notebooks.models import Indexing, Note, Status
from passages.models import Passage
from passages.rules import DOCUMENT_KIND
from passages.selectors import missing_vectors, notes_missing_vectors
from passages.services import passages_sync, vectors_drop_other_profiles, vectors_store

EMBED = "embed"
BATCH = 32
# Passages one batch embeds at most (the local model: ~1 s per 64 on two cores).
PASSAGES_PER_BATCH = 128


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
    """Caller: a service, in its tenant transaction, after saving new content. Cuts the
    note into passages and writes what else is read from the content: the days it
    states, its links and the names it answers to (`links.services.links_sync`)."""
    passages_sync(account_id=note.account_id, note_id=note.id, kind=note.kind,
                  content=note.content)
    links_sync(note.account_id, [NoteText(note.id, note.notebook_id, note.content,
                                          note.source_path)])
    if read_content(note):
        jobs.enqueue(account_id=note.account_id, kind=EMBED, target_id=note.id,
                     target_version=note.version, target_hash=note.content_hash)
    Note.objects.filter(id=note.id).update(content_hash=note.content_hash,
                                           passages_hash=note.content_hash,
                                           indexing=note.indexing,
                                           stated_dates=note.stated_dates)


def index_if_changed(note: Note, *, content: str, kind: str) -> None:
    """After a change of a note that had `content` and `kind`: cut and index it again
    when its text changed, or whether it is a document (which decides how it is cut)."""
    if note.content != content or (note.kind == DOCUMENT_KIND) != (kind == DOCUMENT_KIND):
        mark_for_indexing(note)


HEAL_BATCH = 200


def passages_heal(*, actor: Actor) -> int:
    """Cut again the passages of notes whose content changed without them (an older
    release's write during a rolling upgrade), and queue their vectors; at most
    HEAL_BATCH notes a call. Returns how many."""
    with tenant(actor):
        stale = list(Note.objects.exclude(passages_hash=F("content_hash"))
                     .exclude(status=Status.DELETED).order_by("id")
                     .select_for_update(skip_locked=True)[:HEAL_BATCH])
        for note in stale:
            mark_for_indexing(note)
    return len(stale)


def _profile() -> str:
    """The configured model's profile (during `grove reindex`, the one being built)."""
    embedder = get_embedder()
    if embedder is None:
        raise EmbeddingUnavailable("embeddings are disabled")
    return str(embedder.profile)


def _load(batch: Sequence[Job]) -> dict[uuid.UUID, Any]:
    """Per job whose note still has the content it was made for: (profile, [(passage
    id, text)]) — the note's passages without a vector, within the batch's share."""
    current = dict(Note.objects.filter(id__in=[job.target_id for job in batch])
                   .exclude(status=Status.DELETED).values_list("id", "content_hash"))
    live = [job for job in batch if current.get(job.target_id) == job.target_hash]
    profile = _profile()
    missing = missing_vectors([job.target_id for job in live], profile,
                              limit=PASSAGES_PER_BATCH)
    return {job.id: (profile, missing.get(job.target_id, [])) for job in live}


def _execute(inputs: list[Any]) -> list[Any]:
    """One model call for every passage of the batch."""
    embedder = get_embedder()
    if embedder is None:
        raise EmbeddingUnavailable("embeddings are disabled")
    texts = [text for _, passages in inputs for _, text in passages]
    vectors = iter(embedder.embed(texts).tolist() if texts else [])
    return [(profile, embedder.dimension, [(passage_id, next(vectors))
                                           for passage_id, _ in passages])
            for profile, passages in inputs]


def _complete(batch: list[Job], inputs: dict[uuid.UUID, Any],
              outputs: dict[uuid.UUID, Any]) -> set[uuid.UUID]:
    """Store the vectors of the passages whose note still has the content they were
    made from; a note with none missing is `ready`, one with some left is queued again."""
    current = dict(
        Note.objects.select_for_update(of=("self",))
        .filter(id__in=[job.target_id for job in batch]).exclude(status=Status.DELETED)
        .order_by("id").values_list("id", "content_hash"))
    fresh = [job for job in batch if current.get(job.target_id) == job.target_hash]
    if not fresh:
        return set()
    now = timezone.now()
    for job in fresh:
        profile, dimension, vectors = outputs[job.id]
        vectors_store(account_id=job.account_id, profile=profile, dimension=dimension,
                      vectors=[(passage_id, job.target_id, vector)
                               for passage_id, vector in vectors], now=now)
    profile = outputs[fresh[0].id][0]
    unfinished = notes_missing_vectors([job.target_id for job in fresh], profile)
    for job in fresh:
        if job.target_id in unfinished:
            jobs.enqueue(account_id=job.account_id, kind=EMBED, target_id=job.target_id,
                         target_version=job.target_version, target_hash=job.target_hash)
    done = [job for job in fresh if job.target_id not in unfinished]
    if done:
        Note.objects.filter(id__in=[job.target_id for job in done]).update(
            indexing=Indexing.READY)
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
    """Notes with a passage that has no vector for `profile`."""
    lacking = Passage.objects.filter(note=OuterRef("pk")).exclude(vectors__profile=profile)
    return Note.objects.exclude(status=Status.DELETED).filter(Exists(lacking))


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
            vectors_drop_other_profiles(profile)
