"""An upgrade to unique notebook names (migration 0020) never fails on twins already
stored: in each account, every live notebook whose name (in lower case) an older live
sibling has is renamed with the first free " (2)", " (3)", … suffix; the oldest keeps its
name, archived and deleted notebooks and other accounts are left alone. Real migrations,
run backwards to 0019 and forward again on the test database."""

from __future__ import annotations

import uuid

import pytest
from django.db import connections, transaction

from grove.kernel.errors import Conflict
from grove.kernel.tenancy import tenant
from notebooks import services
from notebooks.models import NOTEBOOK_NAME_UNIQUE, Notebook
from tests import factories
from tests.grove.kernel.test_rls import set_context
from tests.notebooks.test_truth_upgrade import migrate

pytestmark = pytest.mark.slow

BEFORE = ("notebooks", "0019_source_agent_index")
LONG = "L" * 200


def test_twins_stored_before_are_numbered_and_the_index_holds(committed):
    owner, other = factories.owner(), factories.owner()
    rows: list[tuple] = []  # (account, id, name, parent, minute created, archived, deleted)

    def row(actor, name, *, parent=None, archived=False, deleted=False) -> uuid.UUID:
        rows.append((actor.account_id, uuid.uuid4(), name, parent, len(rows), archived,
                     deleted))
        return rows[-1][1]

    oldest = row(owner, "Work")
    twins = [row(owner, "work"), row(owner, "WORK")]
    taken = row(owner, "Work (2)")  # the first suffix is taken already
    archived = row(owner, "Work", archived=True)
    deleted = row(owner, "Work", deleted=True)
    parent = row(owner, "Projects")
    inside = [row(owner, "Plan", parent=parent), row(owner, "plan", parent=parent)]
    longs = [row(owner, LONG), row(owner, LONG.lower())]
    theirs = row(other, "Work")
    migrate(*BEFORE)
    try:
        for account, *values in rows:
            with transaction.atomic(), connections["default"].cursor() as cursor:
                set_context(account)
                notebook_id, name, parent_id, minute, is_archived, is_deleted = values
                cursor.execute(
                    "INSERT INTO notebooks_notebook (id, account_id, name, parent_id, "
                    "created_at, updated_at, archived_at, deleted_at) VALUES (%s, %s, %s, %s, "
                    "now() - make_interval(mins => 100 - %s), now(), "
                    "CASE WHEN %s THEN now() END, CASE WHEN %s THEN now() END)",
                    [notebook_id, account, name, parent_id, minute, is_archived, is_deleted])
    finally:
        connections["default"].close()
        migrate()
    with tenant(owner):
        names = dict(Notebook.objects.values_list("id", "name"))
    assert names[oldest] == "Work" and names[taken] == "Work (2)"
    assert [names[i] for i in twins] == ["work (3)", "WORK (4)"]
    assert (names[archived], names[deleted]) == ("Work", "Work")
    assert [names[i] for i in inside] == ["Plan", "plan (2)"]
    assert names[longs[0]] == LONG
    assert names[longs[1]] == "l" * 196 + " (2)" and len(names[longs[1]]) == 200
    with tenant(other):
        assert Notebook.objects.get(id=theirs).name == "Work"
    # From now on the services refuse twins, and the index is there under them.
    with pytest.raises(Conflict):
        services.notebook_create(actor=owner, operation_id=uuid.uuid4(), name="plan",
                                 parent_id=parent)
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s",
                       [NOTEBOOK_NAME_UNIQUE])
        [(definition,)] = cursor.fetchall()
    assert "UNIQUE" in definition and "lower" in definition and "WHERE" in definition
