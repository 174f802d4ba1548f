"""Retention runs as a real Celery task on a real worker through Redis."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from notebooks.models import Note
from notebooks.tasks import note_expire_due_task
from tests import factories
from tests.conftest import redis_url_or_skip

pytestmark = pytest.mark.slow


def test_expire_task_applies_retention_for_every_account(committed, celery_worker_on):
    url = redis_url_or_skip("redis://127.0.0.1:6379/15")
    alice, bob = factories.owner(), factories.owner()
    due = [factories.note(alice, "alice temp", retention_days=1),
           factories.note(bob, "bob temp", retention_days=1)]
    keep = factories.note(alice, "alice keeps")
    for actor, note in zip((alice, bob), due, strict=True):
        with factories.tenant(actor):
            Note.objects.filter(id=note.id).update(
                expires_at=timezone.now() - timedelta(seconds=1))

    with celery_worker_on(url, {}):
        note_expire_due_task.delay()
        deadline = time.monotonic() + 30
        statuses: list[str] = []
        while time.monotonic() < deadline:
            statuses = [factories.note_row(a, n.id).status
                        for a, n in zip((alice, bob), due, strict=True)]
            if statuses == ["expired", "expired"]:
                break
            time.sleep(0.1)
    assert statuses == ["expired", "expired"]
    assert factories.note_row(alice, keep.id).status == "active"
