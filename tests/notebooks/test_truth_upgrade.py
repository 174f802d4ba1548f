"""An upgrade never widens what an agent reads (SPEC §10): a database with notebooks from
before ground truth, migrated to it, keeps them out of the account's declaration; a
notebook made afterwards inherits it. Real migrations, run backwards to 0014 and forward
again on the test database."""

from __future__ import annotations

import uuid

import pytest
from django.core.management import call_command
from django.db import connections, transaction

from notebooks.models import Notebook
from tests import factories
from tests.grove.kernel.test_rls import set_context

pytestmark = pytest.mark.slow

BEFORE = ("notebooks", "0014_brief_indexes")


def migrate(*target: str) -> None:
    """`migrate` as `grove migrate` runs it (the owner role; afterwards the runtime role is
    granted the tables the migrations made)."""
    call_command("migrate", *target, database="owner", verbosity=0)
    connections["owner"].close()


def test_notebooks_that_existed_before_do_not_inherit_new_ones_do(committed):
    owner = factories.owner()
    old_id = uuid.uuid4()
    migrate(*BEFORE)
    try:
        with transaction.atomic(), connections["default"].cursor() as cursor:
            set_context(owner.account_id)
            cursor.execute("INSERT INTO notebooks_notebook (id, account_id, name, created_at, "
                           "updated_at) VALUES (%s, %s, 'Old', now(), now())",
                           [old_id, owner.account_id])
    finally:
        connections["default"].close()
        migrate()
    new = factories.notebook(owner, "New")
    from grove.kernel.tenancy import tenant

    with tenant(owner):
        flags = dict(Notebook.objects.values_list("id", "inherit_account_truth"))
    assert flags[old_id] is False
    assert flags[new.id] is True
    with tenant(owner):  # and no notebook, old or new, checks agents' writes (0016)
        assert not Notebook.objects.filter(verify_agent_writes=True).exists()
