"""The job queue heals (issue 14, item 8), with real Celery workers on both brokers: new
work never waits behind stale wake-ups, a backlog shrinks and never grows, and periodic
tasks run while an embedding backlog is still waiting."""

from __future__ import annotations

import os
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connections
from django.utils import timezone

from grove.kernel import jobs
from grove.models import Job
from grove.runtime import broker
from grove.tasks import job_run_task
from notebooks.models import Note
from notebooks.services.indexing import EMBED
from notebooks.services.portability import account_import
from notebooks.tasks import note_expire_due_task
from tests import factories
from tests.conftest import redis_url_or_skip
from tests.fake_embedder import FakeEmbedder

pytestmark = pytest.mark.slow

REDIS_DB = "redis://127.0.0.1:6379/13"


class Broker:
    """One of the two brokers, with a way to see what it holds and what it delivered."""

    def __init__(self, kind: str, tmp_path: Path):
        self.kind = kind
        if kind == "grovefs":
            self.folder = tmp_path / "broker"
            self.url = "grovefs://"
            # store_processed: every delivered message stays in processed/ — a record of
            # how many messages there were.
            self.options = {
                "data_folder_in": str(self.folder / "queue"),
                "data_folder_out": str(self.folder / "queue"),
                "processed_folder": str(self.folder / "processed"),
                "control_folder": str(self.folder / "control"),
                "store_processed": True, "polling_interval": 0.05}
        else:
            import redis

            self.url = redis_url_or_skip(REDIS_DB)
            self.options = {}
            self.redis = redis.Redis.from_url(self.url)
            self.redis.flushdb()

    def waiting(self, queue: str = "celery") -> int:
        if self.kind == "grovefs":
            return sum(1 for name in os.listdir(self.folder / "queue")
                       if name.endswith(f".{queue}.msg") and not name.startswith("."))
        return int(self.redis.llen(queue))

    def delivered(self) -> int:
        assert self.kind == "grovefs"
        return sum(1 for name in os.listdir(self.folder / "processed") if name.endswith(".msg"))


@pytest.fixture(params=["grovefs", "redis"])
def a_broker(request, tmp_path):
    made = Broker(request.param, tmp_path)
    yield made
    if made.kind == "redis":
        made.redis.flushdb()


def wait_for(condition, seconds: float = 120, every: float = 0.02):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"not reached in {seconds} s")


def ready(actor, ids) -> bool:
    with factories.tenant(actor):
        return Note.objects.filter(id__in=ids, indexing="ready").count() == len(ids)


def queued_jobs(actor) -> int:
    with factories.tenant(actor):
        return Job.objects.filter(kind=EMBED, status="queued").count()


def running_jobs(actor) -> int:
    with factories.tenant(actor):
        return Job.objects.filter(status="running").count()


def test_new_work_is_taken_before_thousands_of_stale_wake_ups(
        committed, celery_worker_on, a_broker):
    """A data folder restarted with a backlog of stale wake-ups (account A's, of jobs
    long done — the message format of every Grove version: [job id, account id]), then
    account B saves notes: their wake-ups are at the back, yet B's jobs are done while
    almost all of the backlog is still waiting, and the backlog then drains without a
    single message added."""
    stale = 2000
    alice, bob = factories.owner(), factories.owner()
    celery_worker_on.use_broker(a_broker.url, a_broker.options)
    for _ in range(stale):
        job_run_task.apply_async(args=[str(uuid.uuid4()), str(alice.account_id)])
    notes = [factories.note(bob, f"Bob's new note {i}").id for i in range(5)]
    assert a_broker.waiting() == stale + 5
    with celery_worker_on(a_broker.url, a_broker.options):
        wait_for(lambda: ready(bob, notes))
        still_waiting = a_broker.waiting()
        wait_for(lambda: a_broker.waiting() == 0)
    # Taken by the first stale wake-ups (each finds nothing of its own and runs the
    # oldest ready work): kombu's own transport listed all 2,000 files per message,
    # and the old wake-up did nothing for another account's jobs.
    assert still_waiting >= stale * 3 // 4, still_waiting
    if a_broker.kind == "grovefs":
        assert a_broker.delivered() == stale + 5  # the backlog shrank, never grew


def import_notes(actor, count: int) -> list[uuid.UUID]:
    """`count` notes imported in one transaction (`grove import`'s service); their ids."""
    account_import(actor=actor, records=factories.export_records(
        (f"imported note {i}" for i in range(count)), "2026-12-01T00:00:00Z"))
    with factories.tenant(actor):
        return list(Note.objects.values_list("id", flat=True))


def test_an_import_leaves_no_wake_ups_behind(committed, celery_worker_on, a_broker):
    """One wake-up for the import's transaction, then one per batch while more is
    ready: when the last job is done the queue holds O(1) messages, not O(N) (it held
    one per job — 5,181 of them after a 5,183-note import)."""
    count = 640
    actor = factories.owner()
    celery_worker_on.use_broker(a_broker.url, a_broker.options)
    notes = import_notes(actor, count)
    assert a_broker.waiting() == 1
    with celery_worker_on(a_broker.url, a_broker.options):
        left = wait_for(lambda: ready(actor, notes) and [a_broker.waiting()])[0]
        wait_for(lambda: a_broker.waiting() == 0 and not running_jobs(actor))
    assert left <= 1, left
    with factories.tenant(actor):
        assert set(Job.objects.values_list("status", "attempts")) == {("done", 1)}
    if a_broker.kind == "grovefs":
        # 20 batches: the import's wake-up and one drain per further batch.
        assert a_broker.delivered() <= count // 32 + 1, a_broker.delivered()


def test_saves_in_their_own_transactions_add_nothing_to_their_wake_ups(
        committed, celery_worker_on, tmp_path):
    """One wake-up per saving transaction; while they wait, a batch that leaves work
    ready adds none of its own (each waiting one runs the next batch)."""
    on = Broker("grovefs", tmp_path)
    actor = factories.owner()
    celery_worker_on.use_broker(on.url, on.options)
    notes = [factories.note(actor, f"note {i}").id for i in range(200)]
    with celery_worker_on(on.url, on.options):
        wait_for(lambda: ready(actor, notes))
        wait_for(lambda: on.waiting() == 0)
    assert on.delivered() == 200


def test_recover_adds_no_messages_while_a_busy_worker_works_through_a_backlog(
        committed, celery_worker_on, monkeypatch, tmp_path):
    """A long import: every queued job has waited more than a minute, but batches keep
    being claimed — recover must not re-send (it used to re-send every such job every
    30 s: 13,459 messages for 5,183 jobs)."""
    slow = SlowEmbedder(seconds_per_batch=0.3)
    monkeypatch.setattr("notebooks.services.indexing.get_embedder", lambda: slow)
    on = Broker("grovefs", tmp_path)
    actor = factories.owner()
    celery_worker_on.use_broker(on.url, on.options)
    notes = import_notes(actor, 320)
    with celery_worker_on(on.url, on.options):
        wait_for(lambda: slow.batches >= 2)
        resent = []
        while queued_jobs(actor) > 64:
            with factories.tenant(actor):  # as if the import had started minutes ago
                Job.objects.filter(status="queued").update(
                    enqueued_at=timezone.now() - timedelta(minutes=5))
            resent.append(jobs.recover()["resent"])
            connections.close_all()
            time.sleep(0.2)
        wait_for(lambda: ready(actor, notes))
        wait_for(lambda: on.waiting() == 0)
    assert len(resent) >= 3 and set(resent) == {0}
    assert on.delivered() <= 320 // 32 + 1  # one per batch, nothing re-sent


def test_recover_wakes_work_whose_wake_ups_were_lost_with_one_chain(
        committed, celery_worker_on, tmp_path):
    on = Broker("grovefs", tmp_path)
    actor = factories.owner()
    celery_worker_on.use_broker(on.url, on.options)
    notes = [factories.note(actor, f"note {i}").id for i in range(100)]
    # The broker lost every message (e.g. a wiped broker folder), long ago.
    for name in os.listdir(on.folder / "queue"):
        (on.folder / "queue" / name).unlink()
    with factories.tenant(actor):
        Job.objects.update(enqueued_at=timezone.now() - timedelta(minutes=5))
    with celery_worker_on(on.url, on.options):
        assert jobs.recover()["resent"] == 1
        wait_for(lambda: ready(actor, notes))
        wait_for(lambda: on.waiting() == 0)
    # One chain: batches of 32, 32, 32 and 4, each full one sending the next wake-up.
    assert on.delivered() == 4


def test_a_periodic_task_runs_before_an_embedding_backlog_drains(
        committed, celery_worker_on, monkeypatch, a_broker):
    slow = SlowEmbedder(seconds_per_batch=0.25)
    monkeypatch.setattr("notebooks.services.indexing.get_embedder", lambda: slow)
    actor = factories.owner()
    due = factories.note(actor, "temporary", retention_days=1)
    with factories.tenant(actor):
        Note.objects.filter(id=due.id).update(expires_at=timezone.now() - timedelta(seconds=1))
    celery_worker_on.use_broker(a_broker.url, a_broker.options)
    for i in range(640):
        factories.note(actor, f"backlog note {i}")
    note_expire_due_task.delay()  # what beat sends every 15 minutes, behind 641 wake-ups
    assert a_broker.waiting("maintenance") == 1
    with celery_worker_on(a_broker.url, a_broker.options):
        wait_for(lambda: factories.note_row(actor, due.id).status == "expired")
        backlog = queued_jobs(actor)
        # Let the worker finish the backlog before it stops, so no job of this test is
        # still running when the next one begins (or when its tables are emptied).
        slow.seconds_per_batch = 0
        wait_for(lambda: queued_jobs(actor) == 0 and not running_jobs(actor)
                 and a_broker.waiting() == 0)
    assert backlog >= 320, backlog  # at least half the embedding backlog still waited


def test_the_filesystem_broker_lists_a_backlog_once_not_once_per_message(tmp_path,
                                                                         monkeypatch):
    """kombu's filesystem transport lists and sorts the whole folder for every message:
    O(n) per message. Here one listing serves the whole backlog, across queues, in order."""
    from kombu import Connection, Consumer, Exchange, Producer, Queue

    broker.register()
    options = Broker("grovefs", tmp_path).options | {"store_processed": False,
                                                      "polling_interval": 0}
    for key in ("data_folder_in", "processed_folder", "control_folder"):
        Path(options[key]).mkdir(parents=True)
    exchange = Exchange("grove-test", type="direct")
    jobs_q = Queue("jobs", exchange, routing_key="jobs")
    upkeep_q = Queue("upkeep", exchange, routing_key="upkeep")
    got: list[tuple[str, int]] = []
    listings = []
    real_listdir = os.listdir

    def counting_listdir(path):
        listings.append(path)
        return real_listdir(path)

    with Connection("grovefs://", transport_options=options) as conn:
        for q in (jobs_q, upkeep_q):
            q.bind(conn.channel()).declare()
        producer = Producer(conn.channel(), exchange=exchange, serializer="json")
        for n in range(3000):
            producer.publish({"n": n}, routing_key="jobs")
        producer.publish({"n": 0}, routing_key="upkeep")
        monkeypatch.setattr(broker.os, "listdir", counting_listdir)

        def on_message(body, message):
            got.append((message.delivery_info["routing_key"], body["n"]))
            message.ack()

        with Consumer(conn.channel(), queues=[jobs_q, upkeep_q], callbacks=[on_message],
                      accept=["json"]):
            deadline = time.monotonic() + 60
            while len(got) < 3001 and time.monotonic() < deadline:
                conn.drain_events(timeout=1)
    assert [n for key, n in got if key == "jobs"] == list(range(3000))  # in order, once
    assert got.index(("upkeep", 0)) < 2  # queues take turns: no waiting behind 3,000
    # kombu's own transport: 3,001 listings of up to 3,001 files.
    assert len(listings) <= 10, len(listings)


class SlowEmbedder(FakeEmbedder):
    """The fake embedder at the speed of a slow model."""

    def __init__(self, seconds_per_batch: float):
        super().__init__()
        self.seconds_per_batch, self.batches = seconds_per_batch, 0

    def embed(self, texts):
        time.sleep(self.seconds_per_batch)
        self.batches += 1
        return super().embed(texts)


def test_messages_an_older_version_left_in_the_folder_are_still_delivered(tmp_path):
    """Files named the old way (kombu's millisecond names, as Grove wrote them before)
    and the new way, in one folder: each delivered once."""
    from kombu import Connection, Consumer, Exchange, Producer, Queue

    broker.register()
    options = Broker("grovefs", tmp_path).options | {"store_processed": False,
                                                      "polling_interval": 0}
    for key in ("data_folder_in", "processed_folder", "control_folder"):
        Path(options[key]).mkdir(parents=True)
    # Names of its own: kombu keeps bindings per process, not per folder, and a binding
    # known from an earlier test would not be written to this test's folder.
    exchange = Exchange("legacy", type="direct")
    queue = Queue("legacy", exchange, routing_key="legacy")
    for url, numbers in (("filesystem://", range(0, 5)), ("grovefs://", range(5, 10))):
        with Connection(url, transport_options=options) as conn:
            queue.bind(conn.channel()).declare()
            producer = Producer(conn.channel(), exchange=exchange, serializer="json")
            for n in numbers:
                producer.publish({"n": n}, routing_key="legacy")
    names = sorted(os.listdir(options["data_folder_in"]))
    assert sum(len(name.split("_")[0]) < 20 for name in names) == 5  # the old names
    got = []
    with Connection("grovefs://", transport_options=options) as conn, Consumer(
            conn.channel(), queues=[queue], accept=["json"],
            callbacks=[lambda body, message: (got.append(body["n"]), message.ack())]):
        deadline = time.monotonic() + 30
        while len(got) < 10 and time.monotonic() < deadline:
            conn.drain_events(timeout=1)
    assert sorted(got) == list(range(10))
    assert os.listdir(options["data_folder_in"]) == []
