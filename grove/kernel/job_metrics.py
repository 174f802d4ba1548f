"""The job families of `/metrics`, read from the job table when Prometheus scrapes.

The `Job` rows are the record of background work (`grove.kernel.jobs`); the workers are
other processes, so counters kept in a worker would never reach this web process's
`/metrics`. Every web process therefore reports the same, installation-wide numbers:
aggregate them with `max`, not `sum`.

* `grove_jobs_queued{kind}` — queued jobs (ready, or waiting out a retry's backoff);
* `grove_job_oldest_queued_age_seconds{kind}` — how long the oldest *ready* queued job
  has waited (since its `run_after`; 0 when none is ready): a queue no worker drains
  shows here first;
* `grove_jobs_running{kind}` — jobs under a lease;
* `grove_jobs_done_total{kind}`, `grove_jobs_failed_total{kind}` — jobs that finished
  done, or failed for good, since this process first read the table (a counter starts
  at zero in each process, as Prometheus expects of a counter after a restart). Done
  rows are kept, but counting them all at every scrape would read the whole table (about
  0.1 s per million jobs); instead each scrape reads what finished since the last one,
  through the index `job_finished`. Throughput — embedding's is
  `rate(grove_jobs_done_total{kind="embed"}[5m])` — is what these are for;
* `grove_jobs_read_ok` — 0 when the database did not answer within `STATEMENT_TIMEOUT`
  (the other job families are then left out of that scrape).

Under row-level security the runtime role sees one account's jobs at a time, so the
reads run per active account in its tenant transaction, as `jobs.recover` does: three
indexed statements each (`job_ready`, `job_leases`, `job_finished`), each bounded by
`STATEMENT_TIMEOUT`.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta

from django.db import DatabaseError
from django.db.models import Count, Min, Q
from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from grove.kernel.metrics import REGISTRY
from grove.kernel.tenancy import active_account_ids, tenant
from grove.models import Job

logger = logging.getLogger(__name__)

STATEMENT_TIMEOUT = "2s"
# A job's `finished_at` is taken just before the transaction that records it commits
# (`recover` takes one time for a whole pass): a scrape counts only jobs that finished
# at least this long ago, so none commits behind the point already counted up to.
SETTLE = timedelta(seconds=30)


class _Read:
    """One scrape's reading of the job table."""

    def __init__(self) -> None:
        self.queued: Counter[str] = Counter()
        self.running: Counter[str] = Counter()
        self.ready_since: dict[str, datetime] = {}
        self.done: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()


class JobCollector(Collector):
    """The job families (see the module docstring). Thread-safe: scrapes take turns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counted_to: datetime | None = None  # jobs finished up to here are counted
        self._done: Counter[str] = Counter()
        self._failed: Counter[str] = Counter()
        self._kinds: set[str] = set()  # seen once: reported (as 0) from then on

    def describe(self) -> Iterable[Metric]:
        # Names only: describing must not read the database (the registry asks at once).
        return list(self._families(_Read(), timezone.now()))

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            now = timezone.now()
            upto = now - SETTLE
            try:
                read = _read(self._counted_to, upto, now)
            except DatabaseError as exc:
                logger.warning("metrics: the job table could not be read (%s)", exc)
                return [GaugeMetricFamily("grove_jobs_read_ok", _OK_HELP, value=0)]
            if self._counted_to is not None:
                self._done.update(read.done)
                self._failed.update(read.failed)
            self._counted_to = upto
            self._kinds |= {*read.queued, *read.running, *read.done, *read.failed}
            return list(self._families(read, now))

    def _families(self, read: _Read, now: datetime) -> Iterator[Metric]:
        kinds = sorted(self._kinds)
        queued = GaugeMetricFamily("grove_jobs_queued", "Queued jobs (ready, or waiting "
                                   "out a retry's backoff).", labels=["kind"])
        age = GaugeMetricFamily("grove_job_oldest_queued_age_seconds", "Seconds the "
                                "oldest ready queued job has waited (0: none ready).",
                                labels=["kind"])
        running = GaugeMetricFamily("grove_jobs_running", "Jobs running under a lease.",
                                    labels=["kind"])
        done = CounterMetricFamily("grove_jobs_done", "Jobs finished done since this "
                                   "process first read the job table.", labels=["kind"])
        failed = CounterMetricFamily("grove_jobs_failed", "Jobs failed for good since this "
                                     "process first read the job table.", labels=["kind"])
        for kind in kinds:
            queued.add_metric([kind], read.queued[kind])
            since = read.ready_since.get(kind)
            age.add_metric([kind], max(0.0, (now - since).total_seconds()) if since else 0.0)
            running.add_metric([kind], read.running[kind])
            done.add_metric([kind], self._done[kind])
            failed.add_metric([kind], self._failed[kind])
        yield from (queued, age, running, done, failed)
        yield GaugeMetricFamily("grove_jobs_read_ok", _OK_HELP, value=1)


_OK_HELP = "1 when this scrape read the job table, 0 when the database did not answer."


def _read(counted_to: datetime | None, upto: datetime, now: datetime) -> _Read:
    """Every active account's jobs, one tenant transaction each (see the module
    docstring). Jobs that finished in (`counted_to`, `upto`] are counted; none on the
    first read, which only marks where counting starts."""
    read = _Read()
    for account_id in active_account_ids():
        with tenant(account_id, local=(("statement_timeout", STATEMENT_TIMEOUT),)):
            jobs = Job.objects.filter(account_id=account_id)
            for row in (jobs.filter(status=Job.Status.QUEUED).values("kind").annotate(
                    n=Count("id"), ready=Min("run_after", filter=Q(run_after__lte=now)))):
                read.queued[row["kind"]] += row["n"]
                ready = row["ready"]
                if ready is not None and ready < read.ready_since.get(row["kind"], now):
                    read.ready_since[row["kind"]] = ready
            for lease in (jobs.filter(status=Job.Status.RUNNING).values("kind")
                          .annotate(n=Count("id"))):
                read.running[lease["kind"]] += lease["n"]
            if counted_to is None:
                continue
            finished = (jobs.filter(finished_at__gt=counted_to, finished_at__lte=upto,
                                    status__in=[Job.Status.DONE, Job.Status.FAILED])
                        .values("kind", "status").annotate(n=Count("id")))
            for end in finished:
                tally = read.done if end["status"] == Job.Status.DONE else read.failed
                tally[end["kind"]] += end["n"]
    return read


JOBS = JobCollector()
REGISTRY.register(JOBS)
