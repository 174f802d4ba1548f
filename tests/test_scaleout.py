"""The scale-out shape of compose.yaml, proven on this machine under SIGKILL
(`bench/scaleout.py`): an external PostgreSQL with the two roles, Redis, two web
processes behind a proxy, two workers and beat; 20 clients of mixed recall/remember;
one web process and one worker killed mid-load and restarted. Nothing answered 2xx is
lost, no retried operation made a second note, every note's current content is
embedded exactly once in effect. (`python bench/scaleout.py` runs it longer and writes
the figures in docs/benchmarks.md.)"""

from __future__ import annotations

import pytest

from bench import scaleout
from tests.conftest import require_program

pytestmark = pytest.mark.slow


def test_nothing_is_lost_when_a_web_process_and_a_worker_are_killed():
    require_program("redis-server")
    figures = scaleout.run(seconds=30, clients=20)

    assert [event["event"] for event in figures["events"]] == [
        "SIGKILL web1", "restarted web1", "SIGKILL worker1", "restarted worker1"]
    load, checks = figures["load"], figures["checks"]
    assert load["requests"] > 200 and load["saves_stored"] > 50
    # Only requests in flight on the killed web process may fail; clients retry saves.
    assert load["error_rate"] < 0.05, load
    assert load["client_errors_4xx"] == 0, load
    assert checks["missing"] == 0 and checks["content_differs"] == 0
    assert checks["notes_without_current_revision"] == 0
    assert checks["operation_ids_with_duplicates"] == 0
    assert set(checks["jobs_by_status"]) <= {"done", "discarded"}, checks
    assert checks["active_notes_not_ready"] == 0
    assert checks["active_notes_without_current_vector"] == 0
    assert checks["contents_embedded_by_two_jobs"] == 0
