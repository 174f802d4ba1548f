"""Operation ids (SPEC §3 "Writes"): replay, conflict, gone — for every mutation."""

import uuid

import pytest

from grove.kernel.errors import Conflict, Invalid
from notebooks import services
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


@pytest.fixture
def actor():
    return factories.owner()


def test_same_id_same_arguments_returns_the_original_result(actor):
    operation = op()
    first = services.note_remember(actor=actor, operation_id=operation, content="once",
                                   kind="fact")
    # The note changes meanwhile; the replay still answers what the save answered.
    services.note_update(actor=actor, operation_id=op(), note_id=first.note.id, content="later")
    again = services.note_remember(actor=actor, operation_id=str(operation), content="once",
                                   kind="fact")
    assert again == first
    assert factories.table_counts(actor.account_id)["notes"] == 1


def test_same_id_different_arguments_conflicts_and_changes_nothing(actor):
    operation = op()
    services.note_remember(actor=actor, operation_id=operation, content="once", kind="fact")
    before = factories.table_counts(actor.account_id)
    with pytest.raises(Conflict) as err:
        services.note_remember(actor=actor, operation_id=operation, content="twice",
                               kind="fact")
    assert err.value.code == "operation_conflict"
    # An id is bound to its action too.
    with pytest.raises(Conflict):
        services.notebook_create(actor=actor, operation_id=operation, name="x")
    assert factories.table_counts(actor.account_id) == before


def test_each_mutation_replays(actor):
    nb = factories.notebook(actor, "A")
    note = factories.note(actor, "n")
    calls = [
        lambda o: services.note_update(actor=actor, operation_id=o, note_id=note.id,
                                       content="edited"),
        lambda o: services.note_move(actor=actor, operation_id=o, note_ids=[note.id],
                                     notebook_id=nb.id),
        lambda o: services.note_restore_revision(actor=actor, operation_id=o, note_id=note.id,
                                                 revision=1),
        lambda o: services.note_archive(actor=actor, operation_id=o, items=[note.id]),
        lambda o: services.note_restore(actor=actor, operation_id=o, items=[note.id]),
        lambda o: services.notebook_create(actor=actor, operation_id=o, name="B"),
        lambda o: services.notebook_update(actor=actor, operation_id=o, notebook_id=nb.id,
                                           name="A2"),
        lambda o: services.note_forget(actor=actor, operation_id=o, items=[note.id]),
    ]
    for call in calls:
        operation = op()
        first = call(operation)
        before = factories.table_counts(actor.account_id)
        assert call(operation) == first
        assert factories.table_counts(actor.account_id) == before


def test_replay_of_an_update_to_a_deleted_note_is_gone(actor):
    from grove.kernel.errors import Gone

    note = factories.note(actor)
    operation = op()
    services.note_update(actor=actor, operation_id=operation, note_id=note.id, content="v2")
    services.note_forget(actor=actor, operation_id=op(), items=[note.id])
    with pytest.raises(Gone):
        services.note_update(actor=actor, operation_id=operation, note_id=note.id, content="v2")


def test_operation_ids_are_per_account(actor):
    other = factories.owner()
    operation = op()
    mine = services.note_remember(actor=actor, operation_id=operation, content="a", kind="fact")
    theirs = services.note_remember(actor=other, operation_id=operation, content="b",
                                    kind="fact")
    assert mine.note.id != theirs.note.id


@pytest.mark.parametrize("bad", [None, "", "not-a-uuid", "123"])
def test_operation_id_is_required_and_must_be_a_uuid(actor, bad):
    with pytest.raises(Invalid) as err:
        services.note_remember(actor=actor, operation_id=bad, content="x", kind="fact")
    assert err.value.code in ("operation_id_required", "invalid_operation_id")
    assert factories.table_counts(actor.account_id)["notes"] == 0


def test_failed_operation_can_be_retried_with_the_same_id(actor):
    nb = factories.notebook(actor)
    services.notebook_archive(actor=actor, operation_id=op(), notebook_id=nb.id)
    operation = op()
    with pytest.raises(Conflict):
        services.note_remember(actor=actor, operation_id=operation, content="x", kind="fact",
                               notebook_id=nb.id)
    services.notebook_restore(actor=actor, operation_id=op(), notebook_id=nb.id)
    saved = services.note_remember(actor=actor, operation_id=operation, content="x",
                                   kind="fact", notebook_id=nb.id)
    assert saved.created and saved.note.notebook_id == nb.id
    assert isinstance(saved.note.id, uuid.UUID)


def test_an_operation_id_replays_only_for_the_same_caller(actor):
    nb = factories.notebook(actor, "Shared")
    key = factories.connection(actor, notebooks=[nb.id])
    other_key = factories.connection(actor, all_notebooks=True)
    operation = op()
    first = services.note_remember(actor=key, operation_id=operation, content="agent note",
                                   kind="fact", notebook_id=nb.id)
    with pytest.raises(Conflict) as err:
        services.note_remember(actor=other_key, operation_id=operation,
                               content="agent note", kind="fact", notebook_id=nb.id)
    assert err.value.code == "operation_conflict"
    with pytest.raises(Conflict):
        services.note_remember(actor=actor, operation_id=operation, content="agent note",
                               kind="fact", notebook_id=nb.id)
    assert services.note_remember(actor=key, operation_id=operation, content="agent note",
                                  kind="fact", notebook_id=nb.id) == first


def test_a_replay_rechecks_the_grant(actor):
    from grove.kernel.errors import NotFound
    from grove.models import Connection

    nb = factories.notebook(actor, "Was granted")
    key = factories.connection(actor, notebooks=[nb.id])
    operation = op()
    services.note_remember(actor=key, operation_id=operation, content="secret",
                           kind="fact", notebook_id=nb.id)
    with factories.tenant(actor):
        Connection.objects.filter(id=key.connection_id).update(grant_notebooks=[])
    narrowed = factories.refresh(key)
    with pytest.raises(NotFound):
        services.note_remember(actor=narrowed, operation_id=operation, content="secret",
                               kind="fact", notebook_id=nb.id)
