"""SPEC §3 rules for notebooks: tree, moves, cycles, subtree lifecycle."""

import pytest

from grove.kernel.errors import Conflict, Forbidden, Invalid, NotFound
from notebooks import selectors, services
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


@pytest.fixture
def actor():
    return factories.owner()


def test_create_rename_and_move(actor):
    root = factories.notebook(actor, "  Projects ")
    assert root.name == "Projects" and root.parent_id is None
    child = factories.notebook(actor, "Grove", parent=root.id)
    assert child.parent_id == root.id
    renamed = services.notebook_update(actor=actor, operation_id=op(), notebook_id=child.id,
                                       name="Grove core")
    assert renamed.name == "Grove core" and renamed.parent_id == root.id
    to_root = services.notebook_update(actor=actor, operation_id=op(), notebook_id=child.id,
                                       parent_id=None)
    assert to_root.parent_id is None


def test_move_refuses_cycles(actor):
    a = factories.notebook(actor, "A")
    b = factories.notebook(actor, "B", parent=a.id)
    c = factories.notebook(actor, "C", parent=b.id)
    for target in (a.id, b.id, c.id):
        with pytest.raises(Conflict) as err:
            services.notebook_update(actor=actor, operation_id=op(), notebook_id=a.id,
                                     parent_id=target)
        assert err.value.code == "notebook_cycle"
    # The refusals changed nothing.
    parents = {nb.name: nb.parent_id for nb in selectors.notebook_list(actor=actor)}
    assert parents == {"A": None, "B": a.id, "C": b.id}
    # Moving into a sibling's subtree (not one's own) is fine.
    d = factories.notebook(actor, "D")
    moved = services.notebook_update(actor=actor, operation_id=op(), notebook_id=d.id,
                                     parent_id=c.id)
    assert moved.parent_id == c.id


def test_update_needs_a_change(actor):
    nb = factories.notebook(actor)
    with pytest.raises(Invalid) as err:
        services.notebook_update(actor=actor, operation_id=op(), notebook_id=nb.id)
    assert err.value.code == "no_changes"


def test_subtree_archive_restore_delete_with_counts(actor):
    top = factories.notebook(actor, "Top")
    mid = factories.notebook(actor, "Mid", parent=top.id)
    leaf = factories.notebook(actor, "Leaf", parent=mid.id)
    outside = factories.notebook(actor, "Outside")
    for nb in (top, mid, leaf):
        factories.note(actor, f"in {nb.name}", notebook_id=nb.id)
    factories.note(actor, "second in leaf", notebook_id=leaf.id)
    keep = factories.note(actor, "outside", notebook_id=outside.id)

    preview = selectors.notebook_subtree_counts(actor=actor, notebook_id=top.id)
    assert (preview.notebooks, preview.notes) == (3, 4)

    archived = services.notebook_archive(actor=actor, operation_id=op(), notebook_id=top.id)
    assert (archived.notebooks, archived.notes) == (3, 4)
    assert [n.id for n in selectors.note_list(actor=actor)] == [keep.id]
    assert [nb.name for nb in selectors.notebook_list(actor=actor)] == ["Outside"]

    with pytest.raises(Conflict) as err:
        services.notebook_restore(actor=actor, operation_id=op(), notebook_id=mid.id)
    assert err.value.code == "parent_archived"
    restored = services.notebook_restore(actor=actor, operation_id=op(), notebook_id=top.id)
    assert (restored.notebooks, restored.notes) == (3, 4)
    assert len(selectors.note_list(actor=actor)) == 5

    deleted = services.notebook_delete(actor=actor, operation_id=op(), notebook_id=mid.id)
    assert (deleted.notebooks, deleted.notes) == (2, 3)
    assert {nb.name for nb in selectors.notebook_list(actor=actor)} == {"Top", "Outside"}
    assert len(selectors.note_list(actor=actor)) == 2
    with pytest.raises(NotFound):
        selectors.notebook_subtree_counts(actor=actor, notebook_id=leaf.id)


def test_subtree_lifecycle_is_website_session_only(actor):
    nb = factories.notebook(actor)
    key = factories.connection(actor, all_notebooks=True, personal=True)
    for service in (services.notebook_archive, services.notebook_restore,
                    services.notebook_delete):
        with pytest.raises(Forbidden) as err:
            service(actor=key, operation_id=op(), notebook_id=nb.id)
        assert err.value.code == "session_required"
    assert selectors.notebook_list(actor=actor)[0].archived_at is None


def test_no_new_notebook_under_an_archived_parent(actor):
    parent = factories.notebook(actor, "P")
    services.notebook_archive(actor=actor, operation_id=op(), notebook_id=parent.id)
    with pytest.raises(Conflict) as err:
        factories.notebook(actor, "child", parent=parent.id)
    assert err.value.code == "notebook_archived"
