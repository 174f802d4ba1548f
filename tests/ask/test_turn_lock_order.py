"""A retry of a turn and the worker storing that turn's answer lock the same two rows —
the conversation and the turn — in the same order, conversation first, so they wait for
each other instead of deadlocking. Found by schemathesis' stateful run (issue 36, 2.1):
`POST …/turns/{id}/retry` beside the worker answered 503 (PostgreSQL broke a deadlock)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections, transaction

from ask.models import Conversation, Turn
from ask.rules import GENERATE
from grove.kernel import jobs
from grove.kernel.tenancy import tenant
from tests import factories
from tests.ask.helpers import start, submit

pytestmark = pytest.mark.slow


def _lock_waiters() -> int:
    """Locks waited for now, in this test's own PostgreSQL (`pg_locks` shows every
    backend's; other roles' activity is hidden from the owner role)."""
    with connections["owner"].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return cursor.fetchone()[0]


def test_the_worker_locks_the_conversation_before_the_turn(committed):
    owner = factories.owner()
    conversation = start(owner)
    turn = submit(owner, conversation, "What is planted where?")
    held, check, done = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def retry_side() -> None:
        """What `turn_retry` does: the conversation FOR UPDATE, then the turn."""
        try:
            with tenant(owner), transaction.atomic():
                Conversation.objects.select_for_update().get(client_id=conversation.id)
                held.set()
                check.wait(timeout=60)
                try:
                    with transaction.atomic():  # a savepoint: NOWAIT may fail alone
                        Turn.objects.select_for_update(nowait=True).get(client_id=turn.id)
                    seen["turn"] = "free"
                except Exception as exc:  # noqa: BLE001 - recorded, asserted below
                    seen["turn"] = type(exc.__cause__ or exc).__name__
        finally:
            connections.close_all()

    def worker_side() -> None:
        try:
            held.wait(timeout=60)
            seen["completed"] = jobs.run_batch(account_id=owner.account_id, kind=GENERATE)
        except Exception as exc:  # noqa: BLE001 - recorded, asserted below
            seen["worker"] = exc
        finally:
            done.set()
            connections.close_all()

    threads = [threading.Thread(target=retry_side), threading.Thread(target=worker_side)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    # The worker reaches the rows the retry side holds, and waits there.
    while _lock_waiters() == 0 and not done.is_set():
        assert time.monotonic() < deadline, ("the worker never reached the rows", seen)
        time.sleep(0.05)
    check.set()
    for thread in threads:
        thread.join(timeout=60)
    # The worker waited on the conversation, holding nothing the retry needs: the turn
    # was free (before, the worker held the turn and waited on the conversation, and the
    # retry's wait for the turn closed the circle).
    assert seen.get("turn") == "free", seen
    assert "worker" not in seen and seen["completed"] == 1, seen
    with tenant(owner):
        assert Turn.objects.get(client_id=turn.id).status != Turn.Status.PENDING
