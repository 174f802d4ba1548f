"""The job pipeline (SPEC §6): the job row is the record; claims lease with SKIP LOCKED;
stale completions are discarded; retries are bounded; expired leases are recovered."""

import uuid
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from grove.embeddings import EmbeddingUnavailable
from grove.kernel import jobs
from grove.models import Account, Job
from notebooks import services
from notebooks.services.indexing import EMBED, HANDLER
from notebooks.services.portability import account_import
from passages.models import PassageVector
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


def job_rows(actor, **filters):
    with factories.tenant(actor):
        return list(Job.objects.filter(**filters).order_by("created_at"))


def vectors(actor, note_id):
    with factories.tenant(actor):
        return list(PassageVector.objects.filter(note_id=note_id))


@pytest.fixture
def actor():
    return factories.owner()


@pytest.fixture(autouse=True)
def empty_broker(celery_worker_on, tmp_path):
    """A broker of the test's own (the embedded default's), empty: `recover` and the
    follow-up wake-ups ask it whether a wake-up already waits."""
    folder = tmp_path / "broker"
    options = {"data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
               "processed_folder": str(folder / "processed"),
               "control_folder": str(folder / "control"), "store_processed": False,
               "polling_interval": 0.05}
    celery_worker_on.use_broker("grovefs://", options)
    return folder / "queue"


def wake_ups(callbacks):
    return [c for c in callbacks if isinstance(c, jobs._WakeUp)]  # noqa: SLF001


def test_a_save_writes_its_job_in_the_same_transaction_and_wakes_a_worker_on_commit(
        actor, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        note = factories.note(actor, "Index me")
    [job] = job_rows(actor)
    assert (job.kind, job.target_id, job.target_version, job.status) == (
        EMBED, note.id, 1, "queued")
    assert note.indexing == "pending"
    assert len(callbacks) == 1  # the Celery wake-up, sent only once committed


def test_a_transaction_of_many_jobs_sends_one_wake_up(actor, django_capture_on_commit_callbacks):
    """An import or a bulk save: one wake-up per transaction (and kind), not per job; it
    leads with the first job. A savepoint rolled back takes its wake-up with it."""
    with django_capture_on_commit_callbacks() as callbacks, transaction.atomic():
        with pytest.raises(RuntimeError), transaction.atomic():
            factories.note(actor, "rolled back")
            raise RuntimeError
        notes = [factories.note(actor, f"bulk {i}") for i in range(50)]
    [wake] = wake_ups(callbacks)
    first = job_rows(actor, target_id=notes[0].id)[0]
    assert (wake.job_id, wake.account_id, wake.kind) == (first.id, actor.account_id, EMBED)
    assert len(job_rows(actor, status="queued")) == 50


def test_an_import_sends_one_wake_up(actor, django_capture_on_commit_callbacks):
    records = factories.export_records((f"imported {i}" for i in range(40)),
                                       "2026-12-01T00:00:00Z")
    with django_capture_on_commit_callbacks() as callbacks:
        assert account_import(actor=actor, records=records).notes == 40
    assert len(wake_ups(callbacks)) == 1
    assert len(job_rows(actor, status="queued")) == 40


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
    with factories.tenant(actor):
        assert vector.passage.text == "second"


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
    monkeypatch.setattr("notebooks.services.indexing.get_embedder", lambda: Flaky(failures=99))
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
    monkeypatch.setattr("notebooks.services.indexing.get_embedder", lambda: Flaky(failures=0))
    assert jobs.run_batch(account_id=actor.account_id, kind=EMBED) == 1
    assert factories.note_row(actor, note.id).indexing == "ready"


def test_a_transient_failure_then_success(actor, monkeypatch):
    monkeypatch.setattr("notebooks.services.indexing.get_embedder", lambda: flaky)
    flaky = Flaky(failures=1)
    note = factories.note(actor, "second time lucky")
    jobs.run_batch(account_id=actor.account_id, kind=EMBED)
    assert _run_due(actor) == 1
    assert factories.note_row(actor, note.id).indexing == "ready"
    assert job_rows(actor)[0].attempts == 2


def test_an_undeclared_error_fails_at_once(actor, monkeypatch):
    monkeypatch.setattr("notebooks.services.indexing.get_embedder", lambda: Flaky(99, ValueError))
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


# -- wake-ups: a stale one takes whatever work is waiting; recover never multiplies ----------


def queued(actor, kind=EMBED):
    with factories.tenant(actor):
        return Job.objects.filter(kind=kind, status="queued").count()


def test_a_stale_wake_up_runs_the_oldest_ready_work_of_any_account(actor):
    first = factories.note(actor, "indexed long ago")
    assert jobs.run_batch(account_id=actor.account_id, kind=EMBED) == 1
    [done] = job_rows(actor)
    other = factories.owner()
    notes = [factories.note(other, f"another account's note {i}") for i in range(3)]
    # The wake-up of a job that is done: one batch of the other account's waiting work.
    assert jobs.run(done.id, actor.account_id) == 3
    assert all(factories.note_row(other, n.id).indexing == "ready" for n in notes)
    assert queued(other) == 0
    # A wake-up of an older Grove ([job id, account id] of a job no longer there) too.
    late = factories.note(other, "saved after")
    assert jobs.run(uuid.uuid4(), actor.account_id) == 1
    assert factories.note_row(other, late.id).indexing == "ready"
    # Nothing ready anywhere: a few reads, nothing done.
    assert jobs.run(done.id, actor.account_id) == 0
    assert factories.note_row(actor, first.id).indexing == "ready"


def test_a_wake_up_takes_its_own_account_and_kind_first(actor):
    other = factories.owner()
    theirs = factories.note(other, "older, another account")
    mine = [factories.note(actor, f"mine {i}") for i in range(2)]
    [my_job, _] = job_rows(actor)
    assert jobs.run(my_job.id, actor.account_id) == 2
    assert all(factories.note_row(actor, n.id).indexing == "ready" for n in mine)
    assert factories.note_row(other, theirs.id).indexing == "pending"


def test_stale_wake_ups_leave_an_inactive_accounts_work_alone(actor):
    other = factories.owner()
    factories.note(other, "account about to be deactivated")
    Account.objects.filter(id=other.account_id).update(is_active=False)
    assert jobs.run(uuid.uuid4(), actor.account_id) == 0
    assert queued(other) == 1


def _lose_wake_ups(actor, count):
    """`count` notes whose wake-ups never reach the broker (the on-commit callbacks are
    captured, not run), waiting for 5 minutes."""
    notes = [factories.note(actor, f"lost wake-up {i}") for i in range(count)]
    with factories.tenant(actor):
        Job.objects.update(enqueued_at=timezone.now() - timedelta(minutes=5))
    return notes


def test_recover_wakes_lost_work_once_per_account_and_kind_not_once_per_job(
        actor, django_capture_on_commit_callbacks):
    _lose_wake_ups(actor, 100)
    other = factories.owner()
    _lose_wake_ups(other, 3)
    with django_capture_on_commit_callbacks() as callbacks:
        counts = jobs.recover()
    assert counts["resent"] == 2 and len(callbacks) == 2  # one per account (one kind)
    # Woken: the next runs (every 30 s) send nothing more for the same work…
    with django_capture_on_commit_callbacks() as callbacks:
        assert jobs.recover()["resent"] == 0
        assert jobs.recover(now=timezone.now() + timedelta(seconds=30))["resent"] == 0
    assert callbacks == []
    # …and if nothing at all was claimed for a minute, one more each, not 103.
    with django_capture_on_commit_callbacks() as callbacks:
        assert jobs.recover(now=timezone.now() + timedelta(seconds=61))["resent"] == 2
    assert len(callbacks) == 2


def test_recover_sends_nothing_while_the_work_is_being_claimed(
        actor, django_capture_on_commit_callbacks):
    _lose_wake_ups(actor, 40)
    # A worker is getting through the backlog: a batch finished moments ago, and the rest
    # has waited more than a minute (a long import) — its wake-ups are just queued.
    assert jobs.run_batch(account_id=actor.account_id, kind=EMBED) == 32
    with django_capture_on_commit_callbacks() as callbacks:
        assert jobs.recover()["resent"] == 0
        leased = jobs.claim(account_id=actor.account_id, kind=EMBED, limit=4)  # running
        assert jobs.recover(now=timezone.now() + timedelta(seconds=90))["resent"] == 0
    assert callbacks == [] and len(leased.jobs) == 4
    assert queued(actor) == 4


def test_a_drain_chain_empties_a_backlog_with_one_message_in_flight(
        actor, django_capture_on_commit_callbacks):
    _lose_wake_ups(actor, 100)
    sent, rounds, done = [], 0, 0
    while True:
        with django_capture_on_commit_callbacks() as callbacks:
            done += jobs.drain(actor.account_id, EMBED)
        rounds += 1
        sent.append(len(callbacks))
        if not callbacks:
            break
    assert done == 100 and queued(actor) == 0
    # Batches of 32, 32, 32, 4: each full batch sent exactly one successor.
    assert sent == [1, 1, 1, 0] and rounds == 4


def test_retries_of_a_failed_batch_send_one_wake_up_not_one_per_job(
        actor, monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr("notebooks.services.indexing.get_embedder", lambda: Flaky(failures=99))
    for i in range(10):
        factories.note(actor, f"unlucky {i}")
    with django_capture_on_commit_callbacks() as callbacks:
        jobs.run_batch(account_id=actor.account_id, kind=EMBED)
    assert len(job_rows(actor, status="queued", attempts=1)) == 10
    [wake] = wake_ups(callbacks)
    assert wake.countdown == 2.0  # the backoff of a first attempt


def test_a_claim_says_whether_more_work_is_ready(actor):
    for i in range(33):
        factories.note(actor, f"note {i}")
    first = jobs.claim(account_id=actor.account_id, kind=EMBED, limit=32)
    assert (len(first.jobs), first.more) == (32, True)
    last = jobs.claim(account_id=actor.account_id, kind=EMBED, limit=32)
    assert (len(last.jobs), last.more) == (1, False)
    assert queued(actor) == 0


def test_recover_sends_nothing_while_a_wake_up_waits_in_the_queue(
        actor, empty_broker, django_capture_on_commit_callbacks):
    """Any wake-up runs the oldest ready work when its own is gone: while one waits,
    another would only add to the backlog (e.g. no worker has run for an hour)."""
    from grove.tasks import job_run_task

    _lose_wake_ups(actor, 5)
    job_run_task.apply_async(args=[str(uuid.uuid4()), str(actor.account_id)])
    assert len(list(empty_broker.glob("*.celery.msg"))) == 1
    with django_capture_on_commit_callbacks() as callbacks:
        for minutes in (0, 2, 60):
            later = timezone.now() + timedelta(minutes=minutes)
            assert jobs.recover(now=later)["resent"] == 0
    assert callbacks == []


def test_a_claim_holds_jobs_for_the_configured_lease(actor, settings):
    """GROVE_JOB_LEASE_SECONDS: how long a killed worker's jobs wait for `recover`."""
    factories.note(actor, "lease me")
    settings.GROVE_JOB_LEASE_SECONDS = 20
    before = timezone.now()
    [job] = jobs.claim(account_id=actor.account_id, kind=EMBED, limit=1).jobs
    assert before + timedelta(seconds=20) <= job.lease_expires_at \
        <= timezone.now() + timedelta(seconds=20)
