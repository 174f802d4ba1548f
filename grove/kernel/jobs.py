"""Background jobs (SPEC §6): the `Job` table is the record, Celery only delivers wake-ups.

* `enqueue()` writes the job row inside the caller's transaction and sends a Celery
  wake-up on commit — one per transaction and kind, however many jobs it wrote. A
  queued job for the same target and kind is superseded.
* `run()` (the Celery task) claims ready jobs with `FOR UPDATE SKIP LOCKED` under a
  lease (GROVE_JOB_LEASE_SECONDS, 120 unless set, or the handler's own), loads their
  input in a tenant transaction, executes them outside any transaction (CPU/network),
  then completes each in one transaction that rechecks the lease, the account and — through the
  handler — that the target is still what the job was made for. Stale work is
  discarded, never written.
* Failures of a handler's declared transient errors are retried with exponential
  backoff up to `max_attempts`; then (or at once, for any other error — in loading,
  executing or storing the result alike) the job is `failed` with the error as
  `last_error` and the handler marks its target (e.g. `indexing: failed`).
* `recover()` (beat) re-queues jobs whose lease expired (a worker died) and wakes up
  work whose messages were lost.

A backlog shrinks and never feeds itself:

* Every wake-up runs one batch: its own job's kind and account, led by its own job if
  that is still queued. One whose job is gone — a batch took it, or an edit superseded
  it — runs a batch of the oldest ready work of any account and kind instead
  (`grove_job_oldest_ready`, grove 0008). So wake-ups left behind are work for whatever
  waits, and new work never waits behind stale wake-ups; once nothing is ready, each
  costs two indexed reads.
* A claim that leaves more of its work ready sends one `drain` wake-up for it before the
  batch runs (so a second worker thread loads the next batch while this one computes)
  — unless a wake-up already waits in the queue. A transaction of thousands of jobs
  therefore costs one message per batch, at most one of them waiting, and none left
  once the work is done.
* `recover()` sends at most one wake-up per (account, kind), a `drain`, and only for
  ready work whose wake-up is older than `RESEND_AFTER`, of which nothing was claimed
  for as long, while no wake-up waits in the queue; it marks that work as woken, so it
  sends nothing more for it for another `RESEND_AFTER`.
* Periodic and maintenance tasks have their own queue (settings: CELERY_TASK_ROUTES),
  so a backlog of wake-ups never delays them.

Feature apps register a `Handler` per job kind (core never imports them).
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.db import connection, transaction
from django.utils import timezone

from grove.kernel.tenancy import active_account_ids, tenant
from grove.kernel.validation import storable
from grove.models import Account, Job

logger = logging.getLogger(__name__)

# The wake-ups are the Celery tasks of these names (`grove.tasks`), sent by name through
# the process's Celery app (`grove.celery`, Celery's current app) — the kernel imports
# neither; the broker's transport makes its own folders (`grove.runtime.broker`).
RUN_TASK = "grove.job"
DRAIN_TASK = "grove.drain"
RESEND_AFTER = timedelta(seconds=60)
BACKOFF_BASE_SECONDS = 2.0
BACKOFF_MAX_SECONDS = 300.0


@dataclass(frozen=True)
class Handler:
    """How to do one kind of job.

    load(jobs) -> {job id: input}: in the job's tenant transaction; a job missing from
        the result has lost its target and is discarded.
    execute(inputs) -> outputs: outside any transaction, one output per input, in order.
    complete(jobs, inputs, outputs) -> ids of the jobs whose result was stored: in a
        tenant transaction with the jobs locked and their leases verified; a job left
        out had a target that changed meanwhile (it is discarded).
    on_failed(job): in a tenant transaction, when the job has failed for good.
    lease: how long one attempt may take; past it `recover` re-queues the job.
    transient: exceptions worth retrying; anything else fails the job at once.
    """

    kind: str
    load: Callable[[Sequence[Job]], dict[uuid.UUID, Any]]
    execute: Callable[[list[Any]], list[Any]]
    complete: Callable[[list[Job], dict[uuid.UUID, Any], dict[uuid.UUID, Any]], set[uuid.UUID]]
    on_failed: Callable[[Job], None] = lambda job: None
    transient: tuple[type[BaseException], ...] = ()
    batch_size: int = 1
    max_attempts: int = 5
    # How long one attempt may run before recover takes it back (None: the configured
    # GROVE_JOB_LEASE_SECONDS, 120 unless set).
    lease: timedelta | None = None


_HANDLERS: dict[str, Handler] = {}


def register(handler: Handler) -> None:
    _HANDLERS[handler.kind] = handler


def is_registered(kind: str) -> bool:
    return kind in _HANDLERS


def handler_for(kind: str) -> Handler:
    return _HANDLERS[kind]


def lease_of(handler: Handler) -> timedelta:
    from django.conf import settings

    return handler.lease or timedelta(seconds=settings.GROVE_JOB_LEASE_SECONDS)


def backoff(attempts: int) -> timedelta:
    return timedelta(seconds=min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempts - 1)))


# -- writing jobs (inside the caller's transaction) ----------------------------------------


def enqueue(
    *, account_id: uuid.UUID, kind: str, target_id: uuid.UUID, target_version: int = 0,
    target_hash: str = "",
) -> Job:
    """Record a job in the caller's (tenant) transaction; the wake-up is sent on commit."""
    now = timezone.now()
    Job.objects.filter(account_id=account_id, kind=kind, target_id=target_id,
                       status=Job.Status.QUEUED).update(
        status=Job.Status.DISCARDED, finished_at=now, last_error="superseded by a newer job")
    job = Job.objects.create(
        account_id=account_id, kind=kind, target_id=target_id, target_version=target_version,
        target_hash=target_hash, max_attempts=_HANDLERS[kind].max_attempts, run_after=now,
        enqueued_at=now, created_at=now,
    )
    wake_on_commit(job.id, account_id, kind)
    return job


def enqueue_new(*, account_id: uuid.UUID, kind: str,
                targets: Sequence[tuple[uuid.UUID, int, str]]) -> None:
    """`enqueue` for targets just created in the caller's transaction (no job can be
    queued for them yet): one INSERT for all (target id, version, hash), one wake-up."""
    if not targets:
        return
    now = timezone.now()
    made = Job.objects.bulk_create([Job(
        account_id=account_id, kind=kind, target_id=target, target_version=version,
        target_hash=digest, max_attempts=_HANDLERS[kind].max_attempts, run_after=now,
        enqueued_at=now, created_at=now) for target, version, digest in targets])
    wake_on_commit(made[0].id, account_id, kind)


@dataclass(frozen=True)
class _WakeUp:
    """An on-commit wake-up (see `wake_on_commit`)."""

    job_id: uuid.UUID
    account_id: uuid.UUID
    kind: str
    countdown: float | None = None

    def __call__(self) -> None:
        send(self.job_id, self.account_id, countdown=self.countdown)

    def same_work(self, other: object) -> bool:
        return isinstance(other, _WakeUp) and (
            (other.account_id, other.kind, other.countdown)
            == (self.account_id, self.kind, self.countdown))


def wake_on_commit(job_id: uuid.UUID, account_id: uuid.UUID, kind: str, *,
                   countdown: float | None = None) -> None:
    """Send a wake-up for `job_id` once the caller's transaction commits — one per
    (account, kind, countdown) per transaction: an import of 5,183 notes sends one, and
    the batches it starts wake each other while more is ready (`_follow_up`)."""
    wake = _WakeUp(job_id, account_id, kind, countdown)
    db = transaction.get_connection()
    # Django keeps the transaction's callbacks in `run_on_commit` as (savepoint ids,
    # callback, robust) and drops those of a savepoint rolled back: one still there
    # will be sent.
    if db.in_atomic_block and any(wake.same_work(entry[1]) for entry in db.run_on_commit):
        return
    transaction.on_commit(wake)


def send(job_id: uuid.UUID, account_id: uuid.UUID, *, countdown: float | None = None) -> None:
    """Deliver a wake-up. A broker failure loses nothing: `recover` wakes the work up."""
    _deliver(RUN_TASK, [str(job_id), str(account_id)], countdown=countdown)


def send_drain(account_id: uuid.UUID, kind: str) -> None:
    """Deliver a `drain` wake-up for (account, kind) (see `drain`)."""
    _deliver(DRAIN_TASK, [str(account_id), kind])


def _deliver(task: str, args: list[str], *, countdown: float | None = None) -> None:
    try:
        current_app.send_task(task, args=args, countdown=countdown)
    except Exception:  # noqa: BLE001 - any broker error; the job row is the record
        logger.warning("could not send %s%s; recover will wake the work up", task, args,
                       exc_info=True)


def wake_up_waiting() -> bool:
    """Does the wake-ups' queue hold a message? Any wake-up runs a batch of the oldest
    ready work when its own is gone, so while one waits, another adds nothing. False
    when the broker cannot say (then one more is sent: harmless)."""
    from kombu.exceptions import ChannelError

    try:
        with current_app.pool.acquire(block=True, timeout=5) as conn:
            declared = conn.default_channel.queue_declare(
                queue=current_app.conf.task_default_queue, passive=True)
    except ChannelError:  # Redis: a queue holding no message does not exist
        return False
    except Exception:  # noqa: BLE001 - any broker error: assume none waits
        logger.warning("could not count the waiting wake-ups", exc_info=True)
        return False
    return bool(declared.message_count)


# -- running jobs --------------------------------------------------------------------------


@dataclass
class _Claim:
    token: uuid.UUID
    jobs: list[Job] = field(default_factory=list)
    more: bool = False  # further jobs of the kind were ready (and not locked) at the claim


def claim(
    *, account_id: uuid.UUID, kind: str, limit: int, prefer: uuid.UUID | None = None
) -> _Claim:
    """Lease up to `limit` ready jobs of one kind; concurrent claimers skip each other.
    One more row is read (and left queued) to tell whether more work is ready."""
    token = uuid.uuid4()
    with tenant(account_id):
        ready = (
            Job.objects.select_for_update(skip_locked=True)
            .filter(account_id=account_id, kind=kind, status=Job.Status.QUEUED,
                    run_after__lte=timezone.now())
            .order_by("run_after", "id")
        )
        picked: list[Job] = []
        if prefer is not None:
            picked = list(ready.filter(id=prefer)[:1])
        if len(picked) <= limit:
            picked += list(ready.exclude(id__in=[j.id for j in picked])[: limit + 1 - len(picked)])
        more, picked = len(picked) > limit, picked[:limit]
        now = timezone.now()
        for job in picked:
            job.status, job.attempts = Job.Status.RUNNING, job.attempts + 1
            job.lease_token, job.lease_expires_at = token, now + lease_of(_HANDLERS[kind])
        Job.objects.bulk_update(picked, ["status", "attempts", "lease_token", "lease_expires_at"])
    return _Claim(token=token, jobs=picked, more=more)


def run(job_id: uuid.UUID, account_id: uuid.UUID) -> int:
    """Celery entry point (`grove.job`): one batch of work. Returns how many jobs were
    completed.

    If the job is still queued, a batch of its kind and account led by it; otherwise (a
    batch took it, or it was superseded: a stale wake-up), or if that finds nothing
    ready, the oldest ready work of any active account and kind. Messages of every
    version carry [job id, account id]."""
    with tenant(account_id):
        kind = (Job.objects.filter(id=job_id, status=Job.Status.QUEUED)
                .values_list("kind", flat=True).first())
    if kind in _HANDLERS:
        claimed, done = _run_batch(account_id=account_id, kind=kind, prefer=job_id,
                                   follow=True)
        if claimed:
            return done
    return run_oldest_ready()


def run_oldest_ready() -> int:
    """One batch of the oldest ready work of any active account and kind (0: none)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT account_id, kind FROM grove_job_oldest_ready(%s, %s)",
                       [sorted(_HANDLERS), timezone.now()])
        row = cursor.fetchone()
    if row is None:
        return 0
    return _run_batch(account_id=row[0], kind=row[1], follow=True)[1]


def drain(account_id: uuid.UUID, kind: str) -> int:
    """Celery entry point (`grove.drain`, sent by `_follow_up` and `recover`): one batch
    of (account, kind) — or, if none of it is ready, of the oldest ready work. Returns
    jobs completed."""
    if kind in _HANDLERS:
        claimed, done = _run_batch(account_id=account_id, kind=kind, follow=True)
        if claimed:
            return done
    return run_oldest_ready()


def run_batch(*, account_id: uuid.UUID, kind: str, prefer: uuid.UUID | None = None) -> int:
    """Claim, execute and complete one batch. Returns how many jobs were completed.
    Sends no wake-up: the caller loops itself."""
    return _run_batch(account_id=account_id, kind=kind, prefer=prefer)[1]


def _run_batch(*, account_id: uuid.UUID, kind: str, prefer: uuid.UUID | None = None,
               follow: bool = False) -> tuple[int, int]:
    """One batch: (jobs claimed, jobs completed). With `follow` (a wake-up runs it), a
    claim that left more work ready wakes the next batch before this one runs, so
    another worker thread loads it while this one computes."""
    handler = _HANDLERS[kind]
    leased = claim(account_id=account_id, kind=kind, limit=handler.batch_size, prefer=prefer)
    if not leased.jobs:
        return 0, 0
    if follow and leased.more:
        transaction.on_commit(functools.partial(_follow_up, account_id, kind))
    claimed = len(leased.jobs)
    try:
        return claimed, _attempt(handler, account_id, leased)
    except handler.transient as exc:
        _retry_or_fail(handler, account_id, leased.token, leased.jobs, exc)
    except Exception as exc:  # noqa: BLE001 - not declared transient: fail now, visibly
        # Wherever it happened — load, execute or storing the result — the attempt ends
        # here with its cause, not by its lease running out.
        logger.exception("job kind %s failed", kind)
        _retry_or_fail(handler, account_id, leased.token, leased.jobs, exc, permanent=True)
    return claimed, 0


def _follow_up(account_id: uuid.UUID, kind: str) -> None:
    """More work is ready after a claim: one `drain` wake-up for it — unless a wake-up
    already waits in the queue (it will run that work), so a backlog never adds to its
    own messages: at most one waits per chain, and none once the work is done."""
    if not wake_up_waiting():
        send_drain(account_id, kind)


def _attempt(handler: Handler, account_id: uuid.UUID, leased: _Claim) -> int:
    """Load, execute and complete one claimed batch. Returns how many jobs were
    completed; raises what any step raised (the caller fails the attempt with it)."""
    with tenant(account_id):
        inputs = handler.load(leased.jobs)
    live = [job for job in leased.jobs if job.id in inputs]
    gone = [job for job in leased.jobs if job.id not in inputs]
    if gone:
        _finish(account_id, leased.token, gone, status=Job.Status.DISCARDED,
                error="the target no longer exists")
    if not live:
        return 0
    outputs = handler.execute([inputs[job.id] for job in live])
    return _complete(handler, account_id, leased.token, live, inputs, outputs)


def _locked_if_leased(job: Job, token: uuid.UUID) -> Job | None:
    """The job row, locked, if its lease is still ours."""
    return (
        Job.objects.select_for_update()
        .filter(id=job.id, status=Job.Status.RUNNING, lease_token=token,
                lease_expires_at__gt=timezone.now())
        .first()
    )


def _complete(
    handler: Handler, account_id: uuid.UUID, token: uuid.UUID, jobs: list[Job],
    inputs: dict[uuid.UUID, Any], outputs: list[Any],
) -> int:
    """Complete a batch in one transaction, with a handful of statements per batch (not
    per job): lock the jobs still leased to us, let the handler store what is still
    current, then mark each job done or discarded."""
    output_of = {job.id: output for job, output in zip(jobs, outputs, strict=True)}
    with tenant(account_id):
        now = timezone.now()
        leased = list(
            Job.objects.select_for_update()
            .filter(id__in=list(output_of), status=Job.Status.RUNNING, lease_token=token,
                    lease_expires_at__gt=now)
            .order_by("id")
        )  # jobs whose lease expired belong to another worker now: left alone
        if not leased:
            return 0
        if Account.objects.filter(id=account_id, is_active=True).exists():
            accepted = handler.complete(leased, inputs, output_of)
        else:
            accepted = set()
        done = [job.id for job in leased if job.id in accepted]
        stale = [job.id for job in leased if job.id not in accepted]
        Job.objects.filter(id__in=done).update(
            status=Job.Status.DONE, finished_at=now, last_error="", lease_token=None,
            lease_expires_at=None)
        Job.objects.filter(id__in=stale).update(
            status=Job.Status.DISCARDED, finished_at=now, lease_token=None,
            lease_expires_at=None,
            last_error="stale: the target changed after the job was made, or the account "
                       "is no longer active")
        return len(done)


def _finish(account_id: uuid.UUID, token: uuid.UUID, jobs: list[Job], *, status: str,
            error: str) -> None:
    with tenant(account_id):
        Job.objects.filter(id__in=[j.id for j in jobs], lease_token=token,
                           status=Job.Status.RUNNING).update(
            status=status, last_error=error, finished_at=timezone.now(), lease_token=None,
            lease_expires_at=None)


def _retry_or_fail(
    handler: Handler, account_id: uuid.UUID, token: uuid.UUID, jobs: list[Job],
    exc: BaseException, *, permanent: bool = False,
) -> None:
    error = storable(f"{type(exc).__name__}: {exc}")[:2000]  # the row must take it
    with tenant(account_id):
        now = timezone.now()
        for job in jobs:
            locked = _locked_if_leased(job, token)
            if locked is None:
                continue
            _requeue_or_fail(handler, locked, now, error, permanent=permanent)


def _requeue_or_fail(handler: Handler, job: Job, now: datetime, error: str, *,
                     permanent: bool = False) -> None:
    """Caller holds the job's row lock in a tenant transaction."""
    job.lease_token = job.lease_expires_at = None
    job.last_error = error
    if permanent or job.attempts >= job.max_attempts:
        job.status, job.finished_at = Job.Status.FAILED, now
        job.save()
        handler.on_failed(job)
        return
    job.status = Job.Status.QUEUED
    delay = backoff(job.attempts)
    job.run_after = job.enqueued_at = now + delay
    job.save()
    wake_on_commit(job.id, job.account_id, job.kind, countdown=delay.total_seconds())


def retry(*, account_id: uuid.UUID, job: Job) -> None:
    """Queue a failed job's target again (caller's tenant transaction)."""
    enqueue(account_id=account_id, kind=job.kind, target_id=job.target_id,
            target_version=job.target_version, target_hash=job.target_hash)


def recover(*, now: datetime | None = None) -> dict[str, int]:
    """Periodic: requeue expired leases (dead workers), and wake up ready work whose
    wake-ups were lost — one `drain` chain per (account, kind), and none while that work
    is being claimed (it is making progress: its wake-ups are arriving), was woken less
    than `RESEND_AFTER` ago, or while any wake-up waits in the queue (it will run the
    oldest ready work). `resent` counts the chains started."""
    now = now or timezone.now()
    counts = {"expired": 0, "failed": 0, "resent": 0}
    queue_holds_one: bool | None = None  # asked once, when something looks lost
    for account_id in active_account_ids():
        with tenant(account_id):
            expired = Job.objects.select_for_update(skip_locked=True).filter(
                status=Job.Status.RUNNING, lease_expires_at__lte=now)
            for job in expired:
                handler = _HANDLERS.get(job.kind)
                if handler is None:
                    continue
                _requeue_or_fail(handler, job, now, "lease expired: the worker stopped")
                counts["failed" if job.status == Job.Status.FAILED else "expired"] += 1
            waiting = Job.objects.filter(status=Job.Status.QUEUED, run_after__lte=now,
                                         enqueued_at__lte=now - RESEND_AFTER)
            for kind in sorted(set(waiting.values_list("kind", flat=True))):
                if kind not in _HANDLERS or _claimed_lately(kind, now):
                    continue
                if queue_holds_one is None:
                    queue_holds_one = wake_up_waiting()
                if queue_holds_one:
                    continue
                # Woken now: not lost again before RESEND_AFTER has passed.
                waiting.filter(kind=kind).update(enqueued_at=now)
                transaction.on_commit(functools.partial(send_drain, account_id, kind))
                counts["resent"] += 1
    return counts


def _claimed_lately(kind: str, now: datetime) -> bool:
    """Has work of this kind been claimed in the last RESEND_AFTER (caller's tenant)?
    Running now, or finished since (two indexed probes: job_leases, job_finished)."""
    of_kind = Job.objects.filter(kind=kind)
    return (of_kind.filter(status=Job.Status.RUNNING).exists()
            or of_kind.filter(finished_at__gte=now - RESEND_AFTER).exists())
