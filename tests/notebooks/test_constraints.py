"""The database itself enforces every invariant that can be a constraint: even code that
skips the services cannot store an invalid note."""

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from notebooks.models import Note, Notebook
from tests import factories

pytestmark = pytest.mark.django_db


def _insert(actor, **fields):
    values = {"account_id": actor.account_id, "content": "ok", "kind": "fact"} | fields
    with factories.tenant(actor), transaction.atomic():
        return Note.objects.create(**values)


BAD_ROWS = [
    ("note_content_length", {"content": ""}),
    ("note_content_length", {"content": " padded "}),
    ("note_content_length", {"content": "x" * 6001}),
    ("note_kind_valid", {"kind": "opinion"}),
    ("note_capture_valid", {"capture": "maybe"}),
    ("note_status_valid", {"status": "limbo"}),
    ("note_importance_range", {"importance": 1.01}),
    ("note_retention_range", {"retention_days": 0, "expires_at": timezone.now()}),
    ("note_retention_range", {"retention_days": 366, "expires_at": timezone.now()}),
    ("note_handoff_has_task_id", {"kind": "handoff", "task_id": None}),
    ("note_expiry_matches_retention", {"retention_days": 5, "expires_at": None}),
    ("note_version_positive", {"version": 0}),
    ("note_deleted_has_time", {"status": "deleted"}),
]


@pytest.mark.parametrize(("constraint", "fields"), BAD_ROWS)
def test_note_constraints(constraint, fields):
    actor = factories.owner()
    with pytest.raises(IntegrityError, match=constraint):
        _insert(actor, **fields)


def test_one_live_handoff_per_task_and_notebook():
    actor = factories.owner()
    _insert(actor, kind="handoff", task_id="t", retention_days=1, expires_at=timezone.now())
    with pytest.raises(IntegrityError, match="note_one_live_handoff_per_task"):
        _insert(actor, kind="handoff", task_id="t", retention_days=1, expires_at=timezone.now())
    # A deleted one does not count; another notebook is another namespace.
    _insert(actor, kind="handoff", task_id="u", status="deleted", deleted_at=timezone.now())
    _insert(actor, kind="handoff", task_id="u")
    nb = factories.notebook(actor)
    _insert(actor, kind="handoff", task_id="t", notebook_id=nb.id)


def test_notebook_constraints():
    actor = factories.owner()
    with factories.tenant(actor):
        with pytest.raises(IntegrityError, match="notebook_name_not_blank"), \
                transaction.atomic():
            Notebook.objects.create(account_id=actor.account_id, name="  ")
        nb = Notebook.objects.create(account_id=actor.account_id, name="ok")
        with pytest.raises(IntegrityError, match="notebook_not_own_parent"), \
                transaction.atomic():
            Notebook.objects.filter(id=nb.id).update(parent_id=nb.id)


def test_references_never_cross_accounts():
    """Foreign-key checks bypass row-level security; composite keys keep every reference
    inside one account even for code that skips the services."""
    mine, theirs = factories.owner(), factories.owner()
    their_nb = factories.notebook(theirs, "Theirs")
    their_note = factories.note(theirs, "theirs")
    with pytest.raises(IntegrityError, match="note_notebook_same_account"):
        _insert(mine, notebook_id=their_nb.id)
    with factories.tenant(mine), transaction.atomic(), \
            pytest.raises(IntegrityError, match="notebook_parent_same_account"):
        Notebook.objects.create(account_id=mine.account_id, name="child",
                                parent_id=their_nb.id)
    from notebooks.models import Revision

    with factories.tenant(mine), transaction.atomic(), \
            pytest.raises(IntegrityError, match="revision_note_same_account"):
        Revision.objects.create(account_id=mine.account_id, note_id=their_note.id, version=9,
                                reason="update", content="x", kind="fact")


def test_a_held_write_names_a_target_of_its_own_account():
    """A pending write points at its own account's notebook and note only, and names the
    target its origin needs (a declared change its note; a checked write its notebook)."""
    from notebooks.models import PendingRevision

    mine, theirs = factories.owner(), factories.owner()
    their_nb = factories.notebook(theirs, "Theirs")
    my_nb = factories.notebook(mine, "Mine")
    agent = factories.connection(mine, all_notebooks=True)

    def held(**fields):
        with factories.tenant(mine), transaction.atomic():
            PendingRevision.objects.create(account_id=mine.account_id, base_version=0,
                                           changes={"content": "x"},
                                           connection_id=agent.connection_id, **fields)

    with pytest.raises(IntegrityError, match="pending_notebook_same_account"):
        held(origin="checked", notebook_id=their_nb.id)
    with pytest.raises(IntegrityError, match="pending_names_its_target"):
        held(origin="declared", notebook_id=my_nb.id)  # a declared change names its note
    with pytest.raises(IntegrityError, match="pending_names_its_target"):
        held(origin="checked")
    held(origin="checked", notebook_id=my_nb.id)
