"""`/readyz` (issue 23 item 3, `grove.runtime.readiness`): ready only with the database,
every migration, the broker and a worker that reported lately — 503 naming what is wrong
and what to do otherwise; and a real `grove serve` becomes ready on its own."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from grove.celery import ensure_broker_folders
from grove.models import Heartbeat
from grove.runtime.readiness import heartbeat
from tests.grove.runtime.processes import Serve


@pytest.fixture(autouse=True)
def _broker_folders():
    ensure_broker_folders()


@pytest.mark.django_db
def test_ready_only_with_a_worker_that_reported_lately():
    answer = Client().get("/readyz")
    assert answer.status_code == 503 and answer["Cache-Control"] == "no-store"
    checks = answer.json()["checks"]
    assert checks["database"] == checks["migrations"] == checks["broker"] == "ok"
    assert checks["worker"].startswith("no worker has reported yet")
    heartbeat("worker")
    ready = Client().get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"ready": True, "checks": {
        "database": "ok", "migrations": "ok", "broker": "ok", "worker": "ok"}}
    Heartbeat.objects.filter(name="worker").update(at=timezone.now() - timedelta(seconds=200))
    stale = Client().get("/readyz")
    assert stale.status_code == 503
    assert "the last worker heartbeat is 2" in stale.json()["checks"]["worker"]


@pytest.mark.django_db
@override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0")
def test_a_broker_that_does_not_answer_is_not_ready():
    heartbeat("worker")
    answer = Client().get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["checks"]["broker"].startswith("Redis does not answer")
    assert answer.json()["checks"]["worker"] == "ok"


@pytest.mark.slow
def test_grove_serve_becomes_ready_by_itself(home):
    serve = Serve(home)
    try:
        serve.wait_ready()
        deadline, answer = time.monotonic() + 90, None
        while time.monotonic() < deadline:
            answer = serve.get("/readyz")
            if answer.status_code == 200:
                break
            time.sleep(0.5)
        assert answer is not None and answer.status_code == 200, (
            answer.text if answer is not None else "", serve.output()[-2000:])
        assert answer.json()["checks"]["worker"] == "ok"
    finally:
        serve.stop(15)
