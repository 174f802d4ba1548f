"""The job pipeline (SPEC §6): the job row is the record; claims lease with SKIP LOCKED;
stale completions are discarded; retries are bounded; expired leases are recovered."""

from datetime import timedelta

import pytest
from django.utils import timezone

from grove import jobs
from grove.embeddings import EmbeddingUnavailable
from grove.models import Job
from notebooks import services
from notebooks.indexing import EMBED, HANDLER
from notebooks.models import NoteEmbedding
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


def job_rows(actor, **filters):
    with factories.tenant(actor):
        return list(Job.objects.filter(**filters).order_by("created_at"))


def vectors(actor, note_id):
    with factories.tenant(actor):
        return list(NoteEmbedding.objects.filter(note_id=note_id))


@pytest.fixture
def actor():
    return factories.owner()


def test_a_save_writes_its_job_in_the_same_transaction_and_wakes_a_worker_on_commit(
        actor, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        note = factories.note(actor, "Index me")
    [job] = job_rows(actor)
    assert (job.kind, job.target_id, job.target_version, job.status) == (
        EMBED, note.id, 1, "queued")
    assert note.indexing == "pending"
    assert len(callbacks) == 1  # the Celery wake-up, sent only once committed


def test_a_job_run_stores_the_vector_and_marks_the_note_ready(actor):
    note = factories.note(actor, "Sourdough needs a long rise")
    assert jobs.run_batch(account_id=actor.account_id, kind=EMBED) == 1
    [vector] = vectors(actor, note.id)
    assert (vector.profile, vector.dimension) == ("fake-hash/384", 384)
    assert factories.note_row(actor, note.id).indexing == "ready"
    assert job_rows(actor)[0].status == "done"
    # A duplicate wake-up finds nothing to do.
    assert jobs.run_batch(account_id=actor.account_id, kind=EMBED) == 0


def test_metadata_changes_do_not_reindex(actor):
    nb = factories.notebook(actor)
    note = factories.note(actor, "stable content")
    jobs.run_batch(account_id=actor.account_id, kind=EMBED)
    services.note_move(actor=actor, operation_id=op(), note_ids=[note.id], notebook_id=nb.id)
    services.note_update(actor=actor, operation_id=op(), note_id=note.id, pinned=True)
    assert len(job_rows(actor)) == 1
    assert factories.note_row(actor, note.id).indexing == "ready"


def test_an_edit_supersedes_the_queued_job(actor):
    note = factories.note(actor, "first words")
    services.note_update(actor=actor, operation_id=op(), note_id=note.id, content="second")
    first, second = job_rows(actor)
    assert (first.status, second.status) == ("discarded", "queued")
    jobs.run_batch(account_id=actor.account_id, kind=EMBED)
    [vector] = vectors(actor, note.id)
    assert vector.content_hash == factories.note_row(actor, note.id).content_hash


def test_a_completion_for_an_outdated_revision_is_discarded(actor):
    note = factories.note(actor, "old content")
    leased = jobs.claim(account_id=actor.account_id, kind=EMBED, limit=10)
    with factories.tenant(actor):
        inputs = HANDLER.load(leased.jobs)
    outputs = HANDLER.execute([inputs[j.id] for j in leased.jobs])
    # The note is edited while the worker computes.
    services.note_update(actor=actor, operation_id=op(), note_id=note.id, content="new content")
    done = jobs._complete(HANDLER, actor.account_id, leased.token, leased.jobs, inputs, outputs)
    assert done == 0
    assert vectors(actor, note.id) == []  # no old vector
    assert job_rows(actor, id=leased.jobs[0].id)[0].status == "discarded"
    assert factories.note_row(actor, note.id).indexing == "pending"
    jobs.run_batch(account_id=actor.account_id, kind=EMBED)  # the new job
    assert factories.note_row(actor, note.id).indexing == "ready"


def test_a_deleted_note_gets_no_vector(actor):
    note = factories.note(actor, "soon gone")
    services.note_forget(actor=actor, operation_id=op(), items=[note.id])
    assert jobs.run_batch(account_id=actor.account_id, kind=EMBED) == 0
    assert vectors(actor, note.id) == []
    assert job_rows(actor)[0].status == "discarded"


class Flaky:
    """An embedder that is down for the first `failures` calls."""

    profile, dimension = "fake-hash/384", 384

    def __init__(self, failures, error=EmbeddingUnavailable):
        self.failures, self.error = failures, error

    def embed(self, texts):
        from tests.fake_embedder import FakeEmbedder

        if self.failures:
            self.failures -= 1
            raise self.error("provider down")
        return FakeEmbedder().embed(texts)


def _run_due(actor):
    """Run whatever is due now, pretending the backoff has elapsed."""
    with factories.tenant(actor):
        Job.objects.filter(status="queued").update(run_after=timezone.now())
    return jobs.run_batch(account_id=actor.account_id, kind=EMBED)


def test_transient_failures_retry_with_backoff_then_fail_visibly(actor, monkeypatch):
    monkeypatch.setattr("notebooks.indexing.get_embedder", lambda: Flaky(failures=99))
    note = factories.note(actor, "unlucky")
    before = timezone.now()
    jobs.run_batch(account_id=actor.account_id, kind=EMBED)
    [job] = job_rows(actor)
    assert (job.status, job.attempts) == ("queued", 1)
    assert job.run_after >= before + timedelta(seconds=2)  # backoff
    assert "provider down" in job.last_error
    for expected_attempts in range(2, job.max_attempts + 1):
        _run_due(actor)
        assert job_rows(actor)[0].attempts == expected_attempts
    [job] = job_rows(actor)
    assert job.status == "failed" and job.finished_at is not None
    assert factories.note_row(actor, note.id).indexing == "failed"
    assert services.note_retry_indexing(actor=actor, note_id=note.id).indexing == "pending"
    monkeypatch.setattr("notebooks.indexing.get_embedder", lambda: Flaky(failures=0))
    assert jobs.run_batch(account_id=actor.account_id, kind=EMBED) == 1
    assert factories.note_row(actor, note.id).indexing == "ready"


def test_a_transient_failure_then_success(actor, monkeypatch):
    monkeypatch.setattr("notebooks.indexing.get_embedder", lambda: flaky)
    flaky = Flaky(failures=1)
    note = factories.note(actor, "second time lucky")
    jobs.run_batch(account_id=actor.account_id, kind=EMBED)
    assert _run_due(actor) == 1
    assert factories.note_row(actor, note.id).indexing == "ready"
    assert job_rows(actor)[0].attempts == 2


def test_an_undeclared_error_fails_at_once(actor, monkeypatch):
    monkeypatch.setattr("notebooks.indexing.get_embedder", lambda: Flaky(99, ValueError))
    note = factories.note(actor, "bug")
    jobs.run_batch(account_id=actor.account_id, kind=EMBED)
    [job] = job_rows(actor)
    assert (job.status, job.attempts) == ("failed", 1)
    assert factories.note_row(actor, note.id).indexing == "failed"


def test_an_expired_lease_is_recovered_and_the_late_worker_is_ignored(actor):
    note = factories.note(actor, "worker dies")
    dead = jobs.claim(account_id=actor.account_id, kind=EMBED, limit=1)
    with factories.tenant(actor):
        inputs = HANDLER.load(dead.jobs)
        Job.objects.filter(id=dead.jobs[0].id).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1))
    counts = jobs.recover()
    assert counts["expired"] == 1
    [job] = job_rows(actor)
    assert (job.status, job.attempts, job.lease_token) == ("queued", 1, None)
    assert _run_due(actor) == 1
    # The worker that "died" wakes up and tries to complete: its lease is gone.
    outputs = HANDLER.execute([inputs[j.id] for j in dead.jobs])
    assert jobs._complete(HANDLER, actor.account_id, dead.token, dead.jobs, inputs,
                          outputs) == 0
    assert len(vectors(actor, note.id)) == 1
    assert job_rows(actor)[0].attempts == 2


def test_recover_resends_jobs_whose_wake_up_was_lost(actor, django_capture_on_commit_callbacks):
    factories.note(actor, "lost message")
    with factories.tenant(actor):
        Job.objects.update(enqueued_at=timezone.now() - timedelta(minutes=5))
    with django_capture_on_commit_callbacks() as callbacks:
        counts = jobs.recover()
    assert counts["resent"] == 1 and len(callbacks) == 1


def test_embeddings_disabled_means_ready_at_once_without_jobs(actor, settings):
    from grove.embeddings import get_embedder

    settings.GROVE_EMBEDDER_FACTORY = None
    settings.GROVE_EMBEDDINGS = "disabled"
    get_embedder.cache_clear()
    try:
        note = factories.note(actor, "lexical only")
        assert note.indexing == "ready"
        assert job_rows(actor) == []
    finally:
        get_embedder.cache_clear()
