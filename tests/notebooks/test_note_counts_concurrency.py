"""Live note counts under real concurrency (separate connections, real commits): saves,
moves between notebooks in opposite orders and batches of one account racing each other
and the periodic compaction never wait on a shared counter, never deadlock, and leave
the counts equal to a count of the notes; the migration's backfill counts existing notes
exactly."""

import importlib
import random
import threading
import uuid

import pytest
from django.db import connections

from notebooks import services
from notebooks.services.note_counts import note_counts_compact, note_counts_refresh
from tests import factories
from tests.notebooks.test_concurrency import run_parallel
from tests.notebooks.test_note_counts import counted, kept

pytestmark = pytest.mark.slow


def test_concurrent_writers_and_compaction_of_one_account(committed):
    actor = factories.owner()
    system = factories.Actor.system(actor.account_id)
    boxes = [factories.notebook(actor, f"Box {i}").id for i in range(2)]
    stop = threading.Event()
    compactions = []

    def compact_forever():
        try:
            while not stop.is_set():
                compactions.append(note_counts_compact(actor=system))
        finally:
            connections.close_all()

    compactor = threading.Thread(target=compact_forever)
    compactor.start()

    def writer(index):
        rng = random.Random(index)
        mine = []
        for round_ in range(10):
            place = rng.choice([*boxes, None])
            mine.append(factories.note(actor, f"Writer {index} round {round_}",
                                       notebook_id=place).id)
            if len(mine) >= 3:
                # Moves between the two notebooks, in opposite orders in different
                # threads: a counter row per notebook updated in place would deadlock.
                first, second = boxes if index % 2 else boxes[::-1]
                batch = rng.sample(mine, 3)
                services.note_move(actor=actor, operation_id=uuid.uuid4(),
                                   note_ids=batch[:2], notebook_id=first)
                services.note_move(actor=actor, operation_id=uuid.uuid4(),
                                   note_ids=batch[1:], notebook_id=second)
                services.note_archive(actor=actor, operation_id=uuid.uuid4(), items=batch)
                services.note_restore(actor=actor, operation_id=uuid.uuid4(),
                                      items=batch[:2])
            if round_ == 5 and index == 0:
                note_counts_refresh(actor=system)  # a recount in the middle of it all
        services.note_forget(actor=actor, operation_id=uuid.uuid4(), items=mine[:2])
        return len(mine)

    try:
        results = run_parallel(6, writer)
    finally:
        stop.set()
        compactor.join(timeout=60)
    assert results == [10] * 6
    assert any(compactions)  # the compactor folded rows while the writers ran
    assert kept(actor) == counted(actor)
    assert sum(counted(actor).values()) == 60 - 12 - _archived(actor)
    note_counts_compact(actor=system)
    assert kept(actor) == counted(actor)


def _archived(actor) -> int:
    from notebooks.models import Note

    with factories.tenant(actor):
        return Note.objects.filter(status="archived").count()


def test_the_migration_backfill_counts_existing_notes(committed):
    """Upgrading a data folder: 0022 counts every account's active notes."""
    migration = importlib.import_module("notebooks.migrations.0022_note_counts_kept_by_writes")
    alice, bob = factories.owner(), factories.owner()
    box = factories.notebook(alice, "Box")
    for i in range(5):
        factories.note(alice, f"Alice note {i}", notebook_id=box.id if i % 2 else None)
    gone = factories.note(alice, "Alice note about to be archived")
    services.note_archive(actor=alice, operation_id=uuid.uuid4(), items=[gone.id])
    factories.note(bob, "Bob note")
    expected = {"alice": counted(alice), "bob": counted(bob)}
    with connections["owner"].cursor() as cursor:
        # As before the upgrade: no counts at all (and a stray row the backfill replaces).
        cursor.execute("TRUNCATE notebooks_notecount")
        cursor.execute("SELECT set_config('grove.account_id', %s, false)",
                       [str(alice.account_id)])
        cursor.execute("ALTER TABLE notebooks_notecount NO FORCE ROW LEVEL SECURITY")
        cursor.execute("INSERT INTO notebooks_notecount (account_id, notebook_id, notes) "
                       "VALUES (%s, NULL, 99)", [alice.account_id])
        cursor.execute("ALTER TABLE notebooks_notecount FORCE ROW LEVEL SECURITY")
        cursor.execute("SELECT set_config('grove.account_id', '', false)")
        cursor.execute(migration.BACKFILL)
    assert kept(alice) == expected["alice"] == {None: 3, box.id: 2}
    assert kept(bob) == expected["bob"] == {None: 1}


def test_deleting_an_account_takes_its_counts_along(committed):
    """As for the term statistics: no delete trigger writes rows for an account on its
    way out, so the deletion goes through and leaves nothing behind."""
    from django.db import transaction

    from grove.models import Account
    from tests.notebooks.test_note_counts import rows

    actor, other = factories.owner(), factories.owner()
    for i in range(3):
        factories.note(actor, f"Doomed note {i}")
    factories.note(other, "Another account's note")
    note_counts_compact(actor=factories.Actor.system(actor.account_id))
    factories.note(actor, "one more, not folded yet")
    assert kept(actor) == {None: 4} and rows(actor) == 2
    with transaction.atomic(using="owner"):
        with connections["owner"].cursor() as cursor:
            cursor.execute("SELECT set_config('grove.account_id', %s, true)",
                           [str(actor.account_id)])
        Account.objects.using("owner").filter(id=actor.account_id).delete()
    assert kept(actor) == {} and rows(actor) == 0
    assert kept(other) == counted(other) == {None: 1}
