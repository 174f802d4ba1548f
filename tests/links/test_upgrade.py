"""Notes from before links get their names and links on upgrade (issue 38; migration
`links 0002`): a database at notebooks 0033 (no links tables) holding notes whose text
links to one another is migrated forward by the real migrations, and every link is
resolved as a save would have resolved it — one to a note that exists, one unresolved
— without a new revision. Real migrations, run back and forward on the test database."""

from __future__ import annotations

import uuid

import pytest
from django.db import connections, transaction

from grove.kernel.tenancy import tenant
from links.models import Link, LinkName
from notebooks.models import Revision
from tests import factories
from tests.grove.kernel.test_rls import set_context
from tests.passages.test_upgrade import _insert, _revision, migrate

pytestmark = pytest.mark.slow

BEFORE = ("links", "zero")


def test_notes_from_before_links_are_linked_on_upgrade(committed):
    owner = factories.owner()
    beta, plan = uuid.uuid4(), uuid.uuid4()
    migrate("sharing", "0004_share_member_count")
    migrate(*BEFORE)
    try:
        with transaction.atomic(), connections["default"].cursor() as cursor:
            set_context(owner.account_id)
            for note_id, text in ((beta, "Beta\nThe budget is nine."),
                                  (plan, "Plan\nSee [[beta]] and [[Gamma|the gamma]].")):
                _insert(cursor, owner.account_id, note_id, text, 1)
                _revision(cursor, owner.account_id, note_id, 1, text, "create")
    finally:
        connections["default"].close()
        migrate()

    with tenant(owner):
        assert list(Link.objects.filter(note_id=plan).order_by("position").values_list(
            "target", "label", "target_note_id")) == [("beta", "", beta),
                                                      ("Gamma", "the gamma", None)]
        assert set(LinkName.objects.filter(note_id__in=[beta, plan])
                   .values_list("note_id", "key", "kind")) == {(beta, "beta", "title"),
                                                               (plan, "plan", "title")}
        assert Revision.objects.filter(note_id__in=[beta, plan]).count() == 2
