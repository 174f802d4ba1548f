"""Races between real transactions on separate connections (SPEC §3)."""

import threading
import uuid
from collections import Counter

import pytest
from django.db import connections

from grove.errors import GroveError
from notebooks import services
from tests import factories

pytestmark = pytest.mark.slow


def run_parallel(count, target):
    """Start `count` threads at once; return each one's result or raised GroveError."""
    barrier = threading.Barrier(count)
    results = [None] * count

    def worker(index):
        try:
            barrier.wait(timeout=10)
            results[index] = target(index)
        except GroveError as exc:
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    return results


def test_two_corrections_at_the_same_version(committed):
    actor = factories.owner()
    note = factories.note(actor, "v1")
    results = run_parallel(2, lambda i: services.note_update(
        actor=actor, operation_id=uuid.uuid4(), note_id=note.id, content=f"writer {i}",
        expected_version=1))
    outcomes = Counter(type(r).__name__ if isinstance(r, GroveError) else "ok" for r in results)
    assert outcomes == {"ok": 1, "Conflict": 1}
    [conflict] = [r for r in results if isinstance(r, GroveError)]
    assert conflict.code == "version_conflict"
    [winner] = [r for r in results if not isinstance(r, GroveError)]
    row = factories.note_row(actor, note.id)
    assert (row.version, row.content) == (2, winner.content)
    assert len(factories.revisions(actor, note.id)) == 2


def test_twenty_concurrent_remembers_with_one_operation_id(committed):
    actor = factories.owner()
    operation = uuid.uuid4()
    results = run_parallel(20, lambda i: services.note_remember(
        actor=actor, operation_id=operation, content="exactly once", kind="fact"))
    assert not [r for r in results if isinstance(r, GroveError)]
    assert len({r.note.id for r in results}) == 1
    counts = factories.table_counts(actor.account_id)
    assert (counts["notes"], counts["revisions"], counts["operations"]) == (1, 1, 1)


def test_concurrent_handoffs_for_one_task_make_one_note(committed):
    actor = factories.owner()
    results = run_parallel(8, lambda i: services.note_remember(
        actor=actor, operation_id=uuid.uuid4(), content=f"state {i}", kind="handoff",
        task_id="deploy"))
    assert not [r for r in results if isinstance(r, GroveError)]
    assert len({r.note.id for r in results}) == 1
    assert sum(r.created for r in results) == 1
    row = factories.note_row(actor, results[0].note.id)
    assert row.version == 8
    assert len(factories.revisions(actor, row.id)) == 8


def test_concurrent_opposite_notebook_moves_cannot_make_a_cycle(committed):
    actor = factories.owner()
    a = factories.notebook(actor, "A")
    b = factories.notebook(actor, "B")
    pairs = [(a.id, b.id), (b.id, a.id)]
    results = run_parallel(2, lambda i: services.notebook_update(
        actor=actor, operation_id=uuid.uuid4(), notebook_id=pairs[i][0], parent_id=pairs[i][1]))
    errors = [r for r in results if isinstance(r, GroveError)]
    assert len(errors) == 1 and errors[0].code == "notebook_cycle"
