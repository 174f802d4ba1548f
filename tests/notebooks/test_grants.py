"""Connections see and change only what their grant and capabilities allow (SPEC §5);
another account's ids behave exactly like ids that do not exist."""

import uuid

import pytest

from grove.kernel.errors import Forbidden, NotFound
from notebooks import selectors, services
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    owner = factories.owner()
    granted = factories.notebook(owner, "Granted")
    child = factories.notebook(owner, "Child of granted", parent=granted.id)
    other = factories.notebook(owner, "Other")
    notes = {
        "granted": factories.note(owner, "in granted", notebook_id=granted.id),
        "child": factories.note(owner, "in child", notebook_id=child.id),
        "other": factories.note(owner, "in other", notebook_id=other.id),
        "personal": factories.note(owner, "personal"),
    }
    key = factories.connection(owner, notebooks=[granted.id])
    return owner, key, {"granted": granted, "child": child, "other": other}, notes


def test_notebook_grant_sees_exactly_its_notebooks(world):
    owner, key, books, notes = world
    visible = {n.id for n in selectors.note_list(actor=key)}
    assert visible == {notes["granted"].id}
    assert [nb.id for nb in selectors.notebook_list(actor=key)] == [books["granted"].id]
    for hidden in ("child", "other", "personal"):
        with pytest.raises(NotFound):
            selectors.note_get(actor=key, note_id=notes[hidden].id)


def test_permissions_never_inherit_down_the_tree(world):
    owner, key, books, notes = world
    with pytest.raises(NotFound):
        selectors.notebook_subtree_counts(actor=key, notebook_id=books["child"].id)
    with pytest.raises(NotFound):
        factories.note(key, "x", notebook_id=books["child"].id)


def test_personal_grant(world):
    owner, _, books, notes = world
    personal_key = factories.connection(owner, personal=True)
    assert {n.id for n in selectors.note_list(actor=personal_key)} == {notes["personal"].id}
    assert factories.note(personal_key, "saved to personal").notebook_id is None
    no_personal = factories.connection(owner, all_notebooks=True)
    with pytest.raises(Forbidden) as refused:
        factories.note(no_personal, "x")
    assert refused.value.code == "personal_not_granted"
    assert notes["personal"].id not in {n.id for n in selectors.note_list(actor=no_personal)}


def test_all_notebooks_grant_includes_future_notebooks(world):
    owner, _, books, notes = world
    key = factories.connection(owner, all_notebooks=True)
    later = factories.notebook(owner, "Later")
    assert factories.note(key, "x", notebook_id=later.id).notebook_id == later.id


def test_read_only_connection_cannot_write(world):
    owner, _, books, notes = world
    reader = factories.connection(owner, capabilities=["memory:read"],
                                  notebooks=[books["granted"].id])
    assert selectors.note_get(actor=reader, note_id=notes["granted"].id)
    calls = [
        lambda: factories.note(reader, "x", notebook_id=books["granted"].id),
        lambda: services.note_update(actor=reader, operation_id=op(),
                                     note_id=notes["granted"].id, content="y"),
        lambda: services.note_forget(actor=reader, operation_id=op(),
                                     items=[notes["granted"].id]),
        lambda: factories.notebook(reader, "new"),
    ]
    for call in calls:
        with pytest.raises(Forbidden) as err:
            call()
        assert err.value.code == "insufficient_capability"
    assert factories.note_row(owner, notes["granted"].id).version == 1


def test_move_checks_source_and_destination_grants(world):
    owner, key, books, notes = world
    # Destination outside the grant.
    with pytest.raises(NotFound):
        services.note_move(actor=key, operation_id=op(), note_ids=[notes["granted"].id],
                           notebook_id=books["other"].id)
    # Source outside the grant.
    with pytest.raises(NotFound):
        services.note_move(actor=key, operation_id=op(), note_ids=[notes["other"].id],
                           notebook_id=books["granted"].id)
    assert factories.note_row(owner, notes["granted"].id).notebook_id == books["granted"].id
    assert factories.note_row(owner, notes["other"].id).notebook_id == books["other"].id


def test_notebook_made_by_a_limited_connection_joins_its_grant(world):
    owner, key, books, notes = world
    made = factories.notebook(key, "Made by agent")
    key = factories.refresh(key)  # the next request resolves the grant from the database
    assert made.id in {nb.id for nb in selectors.notebook_list(actor=key)}
    assert factories.note(key, "inside", notebook_id=made.id).notebook_id == made.id


def test_revoked_connection_cannot_act(world):
    owner, _, books, notes = world
    row = factories.connection(owner, status="revoked", all_notebooks=True)
    from grove.kernel.actor import Actor

    with pytest.raises(Forbidden):
        Actor.for_connection(row)


def test_another_accounts_ids_are_not_found_everywhere(world):
    owner, _, books, notes = world
    stranger = factories.owner("stranger")
    note_id = notes["granted"].id
    nb_id = books["granted"].id
    before = factories.table_counts(owner.account_id, stranger.account_id)
    calls = [
        lambda: selectors.note_get(actor=stranger, note_id=note_id),
        lambda: selectors.note_revisions(actor=stranger, note_id=note_id),
        lambda: selectors.notebook_subtree_counts(actor=stranger, notebook_id=nb_id),
        lambda: services.note_update(actor=stranger, operation_id=op(), note_id=note_id,
                                     content="hijack"),
        lambda: services.note_restore_revision(actor=stranger, operation_id=op(),
                                               note_id=note_id, revision=1),
        lambda: services.note_move(actor=stranger, operation_id=op(), note_ids=[note_id],
                                   notebook_id=None),
        lambda: factories.note(stranger, "x", notebook_id=nb_id),
        lambda: factories.notebook(stranger, "x", parent=nb_id),
        lambda: services.notebook_update(actor=stranger, operation_id=op(), notebook_id=nb_id,
                                         name="mine"),
        lambda: services.notebook_archive(actor=stranger, operation_id=op(), notebook_id=nb_id),
        lambda: services.notebook_delete(actor=stranger, operation_id=op(), notebook_id=nb_id),
    ]
    for call in calls:
        with pytest.raises(NotFound):
            call()
    for batch in (services.note_forget, services.note_archive, services.note_restore):
        result = batch(actor=stranger, operation_id=op(), items=[note_id])
        assert result.items[0].status == "not_found"
    # Foreign and missing look the same.
    with pytest.raises(NotFound) as missing:
        selectors.note_get(actor=stranger, note_id=uuid.uuid4())
    with pytest.raises(NotFound) as foreign:
        selectors.note_get(actor=stranger, note_id=note_id)
    assert (missing.value.code, missing.value.message) == (foreign.value.code,
                                                          foreign.value.message)
    after = factories.table_counts(owner.account_id, stranger.account_id)
    # Only the stranger's own (empty-result) batch operations were recorded.
    assert {k: v for k, v in after.items() if k != "operations"} == \
        {k: v for k, v in before.items() if k != "operations"}
    assert factories.note_row(owner, note_id).content == "in granted"


def test_revisions_record_the_authoring_connection_and_operation(world):
    owner, key, books, notes = world
    operation = op()
    services.note_update(actor=key, operation_id=operation, note_id=notes["granted"].id,
                         content="edited by the agent")
    latest = factories.revisions(owner, notes["granted"].id)[-1]
    assert (latest.connection_id, latest.operation_id) == (key.connection_id, operation)
    first = factories.revisions(owner, notes["granted"].id)[0]
    assert first.connection_id is None  # written in the website session
