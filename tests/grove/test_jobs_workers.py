"""Real concurrency and real Celery: claims by competing workers, and the wake-up path
through both brokers (filesystem for the embedded default, Redis when configured)."""

import threading
import time
import uuid
from collections import Counter

import pytest
from django.db import connections

from grove import jobs
from grove.celery import app
from grove.models import Job
from notebooks.indexing import EMBED
from notebooks.models import Note, NoteEmbedding
from tests import factories
from tests.conftest import IN_CI
from tests.fake_embedder import FakeEmbedder

pytestmark = pytest.mark.slow


def test_four_workers_two_hundred_jobs_each_done_once(committed, monkeypatch):
    actor = factories.owner()
    for i in range(200):
        factories.note(actor, f"note number {i} about topic {i % 7}")
    embedded: Counter[str] = Counter()
    lock = threading.Lock()
    real = FakeEmbedder()

    class Counting:
        profile, dimension = real.profile, real.dimension

        def embed(self, texts):
            with lock:
                embedded.update(texts)
            return real.embed(texts)

    monkeypatch.setattr("notebooks.indexing.get_embedder", lambda: Counting())
    errors = []

    def worker():
        try:
            while jobs.run_batch(account_id=actor.account_id, kind=EMBED):
                pass
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    with factories.tenant(actor):
        statuses = Counter(Job.objects.values_list("status", flat=True))
        assert statuses == {"done": 200}
        assert Job.objects.filter(attempts=1).count() == 200
        assert NoteEmbedding.objects.count() == 200
        assert not Note.objects.exclude(indexing="ready").exists()
    assert len(embedded) == 200 and set(embedded.values()) == {1}  # each text once


def _wait_until_indexed(actor, note_id, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if factories.note_row(actor, note_id).indexing == "ready":
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def celery_worker_on(tmp_path):
    """Start a real Celery worker (threads) on the given broker for the test."""
    from celery.contrib.testing.worker import start_worker

    from grove.celery import ensure_broker_folders

    previous = (app.conf.broker_url, dict(app.conf.broker_transport_options or {}))

    def use_broker(url, options):
        # Producers already connected keep their broker: drop them (Celery does the same
        # after a fork).
        if app._pool is not None:
            app._pool.force_close_all()
        app._after_fork()
        app.conf.broker_url, app.conf.broker_transport_options = url, options
        ensure_broker_folders.cache_clear()
        ensure_broker_folders()

    def start(url, options):
        use_broker(url, options)
        return start_worker(app, pool="threads", concurrency=2, perform_ping_check=False,
                            shutdown_timeout=30)

    yield start
    use_broker(*previous)


def test_celery_end_to_end_with_the_filesystem_broker(committed, celery_worker_on, tmp_path):
    folder = tmp_path / "broker"
    options = {"data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
               "processed_folder": str(folder / "processed"),
               "control_folder": str(folder / "control"), "store_processed": False,
               "polling_interval": 0.05}
    actor = factories.owner()
    with celery_worker_on("filesystem://", options):
        note = factories.note(actor, "through the filesystem broker")
        assert _wait_until_indexed(actor, note.id)


def test_celery_end_to_end_with_redis(committed, celery_worker_on):
    import os

    import redis

    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/14")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.exceptions.ConnectionError:
        if IN_CI:
            pytest.fail(f"CI=true: Redis must answer at {url}")
        pytest.skip(f"no Redis at {url}")
    actor = factories.owner()
    with celery_worker_on(url, {}):
        notes = [factories.note(actor, f"through redis {i}") for i in range(5)]
        assert all(_wait_until_indexed(actor, n.id) for n in notes)
    with factories.tenant(actor):
        assert Job.objects.filter(status="done").count() == 5
    assert uuid.UUID(str(notes[0].id))
