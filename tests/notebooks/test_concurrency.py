"""Races between real transactions on separate connections (SPEC §3)."""

import threading
import uuid
from collections import Counter

import pytest
from django.db import connections

from grove.kernel.errors import GroveError
from notebooks import services
from tests import factories

pytestmark = pytest.mark.slow


def run_parallel(count, target):
    """Start `count` threads at once; return each one's result or raised exception.
    Anything but a domain error (a deadlock, a crash) fails the test."""
    barrier = threading.Barrier(count)
    results = [None] * count

    def worker(index):
        try:
            barrier.wait(timeout=10)
            results[index] = target(index)
        except Exception as exc:  # noqa: BLE001 - reported below
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    unexpected = [r for r in results if isinstance(r, Exception) and not isinstance(r, GroveError)]
    assert not unexpected, unexpected
    return results


def test_two_corrections_at_the_same_version(committed):
    actor = factories.owner()
    note = factories.note(actor, "v1")
    results = run_parallel(2, lambda i: services.note_update(
        actor=actor, operation_id=uuid.uuid4(), note_id=note.id, content=f"writer {i}",
        expected_version=1))
    outcomes = Counter(type(r).__name__ if isinstance(r, GroveError) else "ok" for r in results)
    assert outcomes == {"ok": 1, "Conflict": 1}
    assert all(r is not None for r in results)
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
    from notebooks import selectors

    parents = {nb.id: nb.parent_id for nb in selectors.notebook_list(actor=actor)}
    # Exactly one move happened: one of the two is a root, the other sits under it.
    assert set(parents.values()) in ({None, a.id}, {None, b.id})


def test_writes_racing_a_subtree_delete_are_counted_or_refused(committed):
    from notebooks.models import Note, Notebook

    actor = factories.owner()
    for round_ in range(3):
        doomed = factories.notebook(actor, f"Doomed {round_}")
        child = factories.notebook(actor, f"Child {round_}", parent=doomed.id)
        factories.note(actor, "already there", notebook_id=child.id)

        def work(i, doomed=doomed, child=child, round_=round_):
            if i == 0:
                return services.notebook_delete(actor=actor, operation_id=uuid.uuid4(),
                                                notebook_id=doomed.id)
            if i == 1:
                return services.notebook_create(actor=actor, operation_id=uuid.uuid4(),
                                                name=f"Late {round_}", parent_id=child.id)
            return services.note_remember(actor=actor, operation_id=uuid.uuid4(),
                                          content=f"late {i}", kind="fact",
                                          notebook_id=child.id if i % 2 else doomed.id)

        results = run_parallel(6, work)
        counts = results[0]
        assert not isinstance(counts, Exception)
        refused = [r for r in results[1:] if isinstance(r, GroveError)]
        assert all(r.code == "notebook_not_found" for r in refused)
        with factories.tenant(actor):
            subtree = Notebook.objects.filter(
                name__in=[f"Doomed {round_}", f"Child {round_}", f"Late {round_}"])
            notes = Note.objects.filter(notebook__in=subtree)
            # Nothing live is left in the deleted subtree, and the counts are exact.
            assert not subtree.filter(deleted_at__isnull=True).exists()
            assert not notes.exclude(status="deleted").exists()
            assert (counts.notebooks, counts.notes) == (subtree.count(), notes.count())
