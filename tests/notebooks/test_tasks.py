"""Retention runs as a real Celery task on a real worker through Redis."""

import time
from datetime import timedelta

import pytest
from celery.contrib.testing.worker import start_worker
from django.utils import timezone

from grove.celery import app
from notebooks.models import Note
from notebooks.tasks import note_expire_due_task
from tests import factories
from tests.conftest import IN_CI

pytestmark = pytest.mark.slow

REDIS = "redis://127.0.0.1:6379/15"


@pytest.fixture
def redis_worker():
    import redis

    try:
        redis.Redis.from_url(REDIS, socket_connect_timeout=2).ping()
    except redis.exceptions.ConnectionError:
        if IN_CI:
            pytest.fail("CI=true: Redis must answer on 127.0.0.1:6379")
        pytest.skip("no Redis on 127.0.0.1:6379")
    previous = (app.conf.broker_url, app.conf.broker_transport_options)
    app.conf.broker_url, app.conf.broker_transport_options = REDIS, {}
    try:
        with start_worker(app, pool="threads", concurrency=1, perform_ping_check=False,
                          shutdown_timeout=30):
            yield
    finally:
        app.conf.broker_url, app.conf.broker_transport_options = previous


def test_expire_task_applies_retention_for_every_account(committed, redis_worker):
    alice, bob = factories.owner(), factories.owner()
    due = [factories.note(alice, "alice temp", retention_days=1),
           factories.note(bob, "bob temp", retention_days=1)]
    keep = factories.note(alice, "alice keeps")
    for actor, note in zip((alice, bob), due, strict=True):
        with factories.tenant(actor):
            Note.objects.filter(id=note.id).update(
                expires_at=timezone.now() - timedelta(seconds=1))

    note_expire_due_task.delay()

    deadline = time.monotonic() + 30
    statuses = []
    while time.monotonic() < deadline:
        statuses = [factories.note_row(a, n.id).status for a, n in zip((alice, bob), due,
                                                                        strict=True)]
        if statuses == ["expired", "expired"]:
            break
        time.sleep(0.1)
    assert statuses == ["expired", "expired"]
    assert factories.note_row(alice, keep.id).status == "active"
