"""Term statistics under real concurrency (separate connections, real commits): saves,
batches and edits of one account racing each other and the periodic compaction never
wait on a shared counter, never deadlock, and leave counts equal to a recount; the
migration's backfill counts existing notes exactly."""

import importlib
import random
import threading
import uuid

import pytest
from django.db import connections

from notebooks import services
from notebooks.services.term_stats import term_stats_compact, term_stats_refresh
from tests import factories
from tests.notebooks.test_concurrency import run_parallel
from tests.notebooks.test_recall_stats import kept_counts, recounted

pytestmark = pytest.mark.slow

WORDS = ["quartz", "basalt", "granite", "mica", "slate", "schist", "obsidian", "pumice"]


def test_concurrent_writers_and_compaction_of_one_account(committed):
    actor = factories.owner()
    system = factories.Actor.system(actor.account_id)
    stop = threading.Event()
    compactions = []

    def compact_forever():
        try:
            while not stop.is_set():
                compactions.append(term_stats_compact(actor=system))
        finally:
            connections.close_all()

    compactor = threading.Thread(target=compact_forever)
    compactor.start()

    def writer(index):
        rng = random.Random(index)
        mine = []
        for round_ in range(12):
            words = " ".join(rng.sample(WORDS, 4))
            mine.append(factories.note(actor, f"Writer {index} round {round_}: {words}").id)
            if len(mine) >= 3:
                # Multi-note transactions over shared lexemes, in different orders in
                # different threads: an in-place counter would deadlock here.
                batch = rng.sample(mine, 3)
                services.note_archive(actor=actor, operation_id=uuid.uuid4(), items=batch)
                services.note_restore(actor=actor, operation_id=uuid.uuid4(),
                                      items=batch[:2])
                services.note_update(actor=actor, operation_id=uuid.uuid4(),
                                     note_id=batch[0],
                                     content=f"Edited by {index}: {' '.join(rng.sample(WORDS, 3))}")
            if round_ == 6 and index == 0:
                term_stats_refresh(actor=system)  # a recount in the middle of it all
        services.note_forget(actor=actor, operation_id=uuid.uuid4(), items=mine[:2])
        return len(mine)

    try:
        results = run_parallel(6, writer)
    finally:
        stop.set()
        compactor.join(timeout=60)
    assert results == [12] * 6
    assert any(compactions)  # the compactor folded deltas while the writers ran
    assert kept_counts(actor) == recounted(actor)
    # 72 notes saved, 12 forgotten, the rest active unless left archived.
    assert recounted(actor)[""] == 72 - 12 - _archived(actor)
    term_stats_compact(actor=system)
    assert kept_counts(actor) == recounted(actor)


def _archived(actor) -> int:
    from notebooks.models import Note

    with factories.tenant(actor):
        return Note.objects.filter(status="archived").count()


def test_the_migration_backfill_counts_existing_notes(committed):
    """Upgrading a data folder: 0011 recounts every account's active notes, 0025 adds
    their lengths."""
    migration = importlib.import_module("notebooks.migrations.0011_term_stats_kept_by_writes")
    lengths = importlib.import_module("notebooks.migrations.0025_lexical_bm25")
    alice, bob = factories.owner(), factories.owner()
    for i in range(5):
        factories.note(alice, f"Alice note {i} on tidal pools")
    gone = factories.note(alice, "Alice note about to be archived")
    services.note_archive(actor=alice, operation_id=uuid.uuid4(), items=[gone.id])
    factories.note(bob, "Bob note on lichens")
    expected = {"alice": recounted(alice), "bob": recounted(bob)}
    with connections["owner"].cursor() as cursor:
        # As before the upgrade: stale counters, no deltas.
        cursor.execute("TRUNCATE notebooks_termstat, notebooks_termdelta")
        for actor in (alice, bob):
            cursor.execute("SELECT set_config('grove.account_id', %s, false)",
                           [str(actor.account_id)])
            cursor.execute("INSERT INTO notebooks_termstat (account_id, lexeme, ndoc) "
                           "VALUES (%s, 'stale', 99)", [actor.account_id])
        cursor.execute("SELECT set_config('grove.account_id', '', false)")
        cursor.execute(migration.BACKFILL)
        cursor.execute(lengths.BACKFILL)
    assert kept_counts(alice) == expected["alice"]
    assert kept_counts(bob) == expected["bob"]
    assert expected["alice"][""] == 5 and "stale" not in expected["alice"]


def test_deleting_an_account_takes_its_statistics_along(committed):
    """Notes are hard-deleted only with their account (by the schema owner: the runtime
    role may not delete revisions); there is no delete trigger writing deltas for an
    account on its way out, so the deletion goes through and leaves nothing behind."""
    from django.db import transaction

    from grove.models import Account
    from notebooks.services.term_stats import term_stats_compact
    from tests.notebooks.test_recall_stats import delta_rows

    actor, other = factories.owner(), factories.owner()
    for i in range(3):
        factories.note(actor, f"Doomed note {i} about ferns")
    factories.note(other, "Another account's fern")
    term_stats_compact(actor=factories.Actor.system(actor.account_id))
    factories.note(actor, "one more fern, still a delta")
    assert kept_counts(actor)["fern"] == 4 and delta_rows(actor) > 0
    with transaction.atomic(using="owner"):
        with connections["owner"].cursor() as cursor:
            cursor.execute("SELECT set_config('grove.account_id', %s, true)",
                           [str(actor.account_id)])
        Account.objects.using("owner").filter(id=actor.account_id).delete()
    assert kept_counts(actor) == {} and delta_rows(actor) == 0
    assert kept_counts(other) == recounted(other) and kept_counts(other)["fern"] == 1
