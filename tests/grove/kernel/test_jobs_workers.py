"""Real concurrency and real Celery: claims by competing workers, and the wake-up path
through both brokers (filesystem for the embedded default, Redis when configured)."""

import threading
import time
import uuid
from collections import Counter

import pytest
from django.db import connections

from grove.kernel import jobs
from grove.models import Job
from notebooks.models import Note
from notebooks.services.indexing import EMBED
from passages.models import PassageVector
from tests import factories
from tests.conftest import redis_url_or_skip
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

    monkeypatch.setattr("notebooks.services.indexing.get_embedder", lambda: Counting())
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
        assert PassageVector.objects.count() == 200
        assert not Note.objects.exclude(indexing="ready").exists()
    assert len(embedded) == 200 and set(embedded.values()) == {1}  # each text once


def _wait_until_indexed(actor, note_id, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if factories.note_row(actor, note_id).indexing == "ready":
            return True
        time.sleep(0.05)
    return False


def test_celery_end_to_end_with_the_filesystem_broker(committed, celery_worker_on, tmp_path):
    folder = tmp_path / "broker"
    options = {"data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
               "processed_folder": str(folder / "processed"),
               "control_folder": str(folder / "control"), "store_processed": False,
               "polling_interval": 0.05}
    actor = factories.owner()
    with celery_worker_on("grovefs://", options):
        note = factories.note(actor, "through the filesystem broker")
        assert _wait_until_indexed(actor, note.id)


def test_celery_end_to_end_with_redis(committed, celery_worker_on):
    url = redis_url_or_skip("redis://127.0.0.1:6379/14")
    actor = factories.owner()
    with celery_worker_on(url, {}):
        notes = [factories.note(actor, f"through redis {i}") for i in range(5)]
        assert all(_wait_until_indexed(actor, n.id) for n in notes)
    with factories.tenant(actor):
        assert Job.objects.filter(status="done").count() == 5
    assert uuid.UUID(str(notes[0].id))
