"""Time-aware recall's upgrade (migration notebooks 0024): notes stored before it get
the days their text states, read by the migration itself."""

from __future__ import annotations

import importlib
from datetime import date

from django.db import connections, transaction

from notebooks.models import Note
from tests import factories


def test_the_migration_reads_existing_notes(committed):
    """Notes saved before 0024 get their stated dates from the migration's reader (run
    here as the migration runs it: as the owner role, in one transaction)."""
    actor = factories.owner()
    note = factories.note(actor, "Shipped on 2022-09-14.")
    plain = factories.note(actor, "No date here.")
    with factories.tenant(actor):
        Note.objects.filter(id=note.id).update(stated_dates=[])
    migration = importlib.import_module("notebooks.migrations.0024_time_aware_recall")

    class Editor:
        connection = connections["owner"]

    with transaction.atomic(using="owner"):
        migration.read_stated_dates(None, Editor())
    assert factories.note_row(actor, note.id).stated_dates == [(date(2022, 9, 14),
                                                                date(2022, 9, 15))]
    assert factories.note_row(actor, plain.id).stated_dates == []
