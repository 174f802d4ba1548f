"""The library's batch changes through the service layer: bulk move and tag with a
result per note, and the Undo of a batch (issue 20, item 6)."""

from __future__ import annotations

import pytest

from grove.kernel.errors import Conflict, Forbidden, Invalid, NotFound
from notebooks import services
from notebooks.rules import BATCH_MAX, TAGS_MAX
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


@pytest.fixture
def actor():
    return factories.owner()


def statuses(result) -> list[str]:
    return [item.status for item in result.items]


# -- move -------------------------------------------------------------------------------------


def test_move_many_moves_each_note_as_a_new_revision(actor):
    work = factories.notebook(actor, "Work")
    a = factories.note(actor, "one")
    b = factories.note(actor, "two")
    there = factories.note(actor, "three", notebook_id=work.id)
    result = services.note_move_many(
        actor=actor, operation_id=op(), notebook_id=work.id,
        items=[{"id": a.id, "expectedVersion": 1}, b.id, {"id": there.id, "expectedVersion": 1}])
    assert statuses(result) == ["moved", "moved", "unchanged"]
    assert [item.version for item in result.items] == [2, 2, 1]
    for note in (a, b):
        row = factories.note_row(actor, note.id)
        assert (row.notebook_id, row.version) == (work.id, 2)
        last = factories.revisions(actor, note.id)[-1]
        assert (last.reason, last.notebook_id, last.version) == ("move", work.id, 2)
    assert len(factories.revisions(actor, there.id)) == 1  # already there: no revision


def test_move_many_is_all_or_nothing_and_names_the_notes_that_stopped_it(actor):
    work = factories.notebook(actor, "Work")
    stale = factories.note(actor, "read at v1")
    fresh = factories.note(actor, "still v1")
    services.note_update(actor=actor, operation_id=op(), note_id=stale.id, content="edited")
    missing, foreign = op(), factories.note(factories.owner(), "not yours")
    result = services.note_move_many(
        actor=actor, operation_id=op(), notebook_id=work.id,
        items=[{"id": stale.id, "expectedVersion": 1}, {"id": fresh.id, "expectedVersion": 1},
               missing, foreign.id])
    # SPEC §3: a batch move is all or nothing — the one that could move did not.
    assert statuses(result) == ["version_conflict", "not_moved", "not_found", "not_found"]
    assert [item.version for item in result.items[:2]] == [2, 1]  # as they are now
    assert factories.note_row(actor, stale.id).notebook_id is None  # left as it was
    row = factories.note_row(actor, fresh.id)
    assert (row.notebook_id, row.version) == (None, 1)
    assert len(factories.revisions(actor, fresh.id)) == 1  # no revision written
    # The same notes without the stale one move together.
    again = services.note_move_many(actor=actor, operation_id=op(), notebook_id=work.id,
                                    items=[{"id": fresh.id, "expectedVersion": 1}])
    assert statuses(again) == ["moved"]
    assert factories.note_row(actor, fresh.id).notebook_id == work.id


def test_move_many_refused_for_one_handoff_moves_none(actor):
    work = factories.notebook(actor, "Work")
    factories.note(actor, "here", "handoff", task_id="t", notebook_id=work.id)
    clash = factories.note(actor, "there", "handoff", task_id="t")
    plain = factories.note(actor, "plain")
    result = services.note_move_many(actor=actor, operation_id=op(), notebook_id=work.id,
                                     items=[clash.id, plain.id])
    assert statuses(result) == ["refused", "not_moved"]
    assert result.items[0].code == "handoff_exists"
    assert factories.note_row(actor, clash.id).notebook_id is None
    assert factories.note_row(actor, clash.id).version == 1
    assert factories.note_row(actor, plain.id).notebook_id is None


def test_move_many_checks_the_destination_for_the_whole_batch(actor):
    note = factories.note(actor, "stays")
    old = factories.notebook(actor, "Old")
    services.notebook_archive(actor=actor, operation_id=op(), notebook_id=old.id)
    with pytest.raises(Conflict) as err:
        services.note_move_many(actor=actor, operation_id=op(), notebook_id=old.id,
                                items=[note.id])
    assert err.value.code == "notebook_archived"
    with pytest.raises(NotFound):
        services.note_move_many(actor=actor, operation_id=op(), notebook_id=op(),
                                items=[note.id])
    theirs = factories.notebook(factories.owner(), "Theirs")
    with pytest.raises(NotFound):
        services.note_move_many(actor=actor, operation_id=op(), notebook_id=theirs.id,
                                items=[note.id])
    assert factories.note_row(actor, note.id).version == 1


def test_move_many_follows_a_connections_grant_both_ways(actor):
    granted = factories.notebook(actor, "Granted")
    other = factories.notebook(actor, "Other")
    inside = factories.note(actor, "in granted", notebook_id=granted.id)
    outside = factories.note(actor, "in other", notebook_id=other.id)
    key = factories.connection(actor, notebooks=[granted.id], personal=True)
    result = services.note_move_many(actor=key, operation_id=op(), notebook_id=None,
                                     items=[inside.id, outside.id])
    # Not granted: as if missing — so nothing moves, the granted one neither.
    assert statuses(result) == ["not_moved", "not_found"]
    assert factories.note_row(actor, inside.id).notebook_id == granted.id
    assert statuses(services.note_move_many(actor=key, operation_id=op(), notebook_id=None,
                                            items=[inside.id])) == ["moved"]
    with pytest.raises(NotFound):
        services.note_move_many(actor=key, operation_id=op(), notebook_id=other.id,
                                items=[inside.id])
    reader = factories.connection(actor, capabilities=["memory:read"], all_notebooks=True)
    with pytest.raises(Forbidden):
        services.note_move_many(actor=reader, operation_id=op(), notebook_id=None,
                                items=[outside.id])


def test_move_many_is_idempotent_by_operation_id(actor):
    work = factories.notebook(actor, "Work")
    note = factories.note(actor, "once")
    operation = op()
    first = services.note_move_many(actor=actor, operation_id=operation, notebook_id=work.id,
                                    items=[note.id])
    again = services.note_move_many(actor=actor, operation_id=operation, notebook_id=work.id,
                                    items=[note.id])
    assert again == first and factories.note_row(actor, note.id).version == 2
    with pytest.raises(Conflict) as err:
        services.note_move_many(actor=actor, operation_id=operation, notebook_id=None,
                                items=[note.id])
    assert err.value.code == "operation_conflict"


@pytest.mark.parametrize(("items", "code"), [
    ([], "empty_batch"),
    (["not-a-uuid"], "invalid_id"),
    ([{"id": "00000000-0000-0000-0000-000000000001", "expectedVersion": 0}],
     "invalid_version"),
    ([{"id": "00000000-0000-0000-0000-000000000001", "other": 1}], "invalid_item"),
])
def test_move_many_refuses_bad_items_before_any_work(actor, items, code):
    with pytest.raises(Invalid) as err:
        services.note_move_many(actor=actor, operation_id=op(), notebook_id=None, items=items)
    assert err.value.code == code


def test_a_batch_has_at_most_batch_max_notes(actor):
    too_many = [str(op()) for _ in range(BATCH_MAX + 1)]
    for call in (lambda: services.note_move_many(actor=actor, operation_id=op(),
                                                 notebook_id=None, items=too_many),
                 lambda: services.note_tag(actor=actor, operation_id=op(), add="x",
                                           items=too_many)):
        with pytest.raises(Invalid) as err:
            call()
        assert err.value.code == "batch_too_large"
    with pytest.raises(Invalid) as err:
        services.note_move_many(actor=actor, operation_id=op(), notebook_id=None,
                                items=too_many[:2] + too_many[:1])
    assert err.value.code == "duplicate_ids"


# -- tag --------------------------------------------------------------------------------------


def test_tag_adds_and_removes_one_tag_as_new_revisions(actor):
    a = factories.note(actor, "one", tags=["garden"])
    b = factories.note(actor, "two", tags=["ideas"])
    result = services.note_tag(actor=actor, operation_id=op(), add=" #Big Idea",
                               items=[{"id": a.id, "expectedVersion": 1}, b.id])
    assert statuses(result) == ["tagged", "tagged"]
    assert factories.note_row(actor, a.id).tags == ["big-idea", "garden"]
    last = factories.revisions(actor, a.id)[-1]
    assert (last.reason, last.tags, last.version) == ("update", ["big-idea", "garden"], 2)
    again = services.note_tag(actor=actor, operation_id=op(), add="big-idea",
                              items=[a.id, b.id])
    assert statuses(again) == ["unchanged", "unchanged"]
    swapped = services.note_tag(actor=actor, operation_id=op(), add="later",
                                remove="big-idea", items=[a.id])
    assert statuses(swapped) == ["tagged"]
    assert factories.note_row(actor, a.id).tags == ["garden", "later"]
    removed = services.note_tag(actor=actor, operation_id=op(), remove="garden",
                                items=[a.id, b.id])
    assert statuses(removed) == ["tagged", "unchanged"]
    assert factories.note_row(actor, a.id).tags == ["later"]
    assert factories.note_row(actor, b.id).version == 2  # one revision, for the add


def test_tag_leaves_inactive_notes_full_notes_and_stale_ones_as_they_are(actor):
    archived = factories.note(actor, "archived")
    services.note_archive(actor=actor, operation_id=op(), items=[archived.id])
    full = factories.note(actor, "full", tags=[f"t{n}" for n in range(TAGS_MAX)])
    stale = factories.note(actor, "stale")
    services.note_update(actor=actor, operation_id=op(), note_id=stale.id, content="edited")
    fine = factories.note(actor, "fine")
    result = services.note_tag(
        actor=actor, operation_id=op(), add="new",
        items=[archived.id, full.id, {"id": stale.id, "expectedVersion": 1}, fine.id])
    assert statuses(result) == ["refused", "refused", "version_conflict", "tagged"]
    assert [item.code for item in result.items[:2]] == ["note_not_active", "invalid_tags"]
    assert factories.note_row(actor, full.id).tags == [f"t{n}" for n in range(TAGS_MAX)]
    assert factories.note_row(actor, stale.id).tags == []


@pytest.mark.parametrize(("add", "remove", "code"), [
    (None, None, "no_changes"), ("same", "#Same", "invalid_tags"), ("bad tag!", None,
                                                                    "invalid_tags")])
def test_tag_refuses_bad_tags_before_any_work(actor, add, remove, code):
    note = factories.note(actor, "x")
    with pytest.raises(Invalid) as err:
        services.note_tag(actor=actor, operation_id=op(), add=add, remove=remove,
                          items=[note.id])
    assert err.value.code == code


# -- undo -------------------------------------------------------------------------------------


def test_undo_of_a_batch_archive_restores_only_what_it_archived(actor):
    before = factories.note(actor, "archived before")
    services.note_archive(actor=actor, operation_id=op(), items=[before.id])
    a = factories.note(actor, "one")
    b = factories.note(actor, "two")
    batch = op()
    services.note_archive(actor=actor, operation_id=batch, items=[a.id, b.id, before.id])
    result = services.note_batch_undo(actor=actor, operation_id=op(), batch_id=batch)
    assert sorted(statuses(result)) == ["undone", "undone"]
    assert {item.id for item in result.items} == {a.id, b.id}
    for note in (a, b):
        row = factories.note_row(actor, note.id)
        assert (row.status, row.version) == ("active", 3)
        assert factories.revisions(actor, note.id)[-1].reason == "restore"
    assert factories.note_row(actor, before.id).status == "archived"


def test_undo_of_a_batch_move_sends_each_note_back_where_it_came_from(actor):
    home = factories.notebook(actor, "Home")
    work = factories.notebook(actor, "Work")
    personal = factories.note(actor, "personal")
    at_home = factories.note(actor, "at home", notebook_id=home.id)
    batch = op()
    services.note_move_many(actor=actor, operation_id=batch, notebook_id=work.id,
                            items=[personal.id, at_home.id])
    result = services.note_batch_undo(actor=actor, operation_id=op(), batch_id=batch)
    assert statuses(result) == ["undone", "undone"]
    assert factories.note_row(actor, personal.id).notebook_id is None
    assert factories.note_row(actor, at_home.id).notebook_id == home.id
    assert factories.revisions(actor, at_home.id)[-1].reason == "move"


def test_undo_of_a_batch_delete_brings_the_notes_back_as_they_were(actor):
    live = factories.note(actor, "live")
    archived = factories.note(actor, "archived")
    services.note_archive(actor=actor, operation_id=op(), items=[archived.id])
    batch = op()
    services.note_forget(actor=actor, operation_id=batch, items=[live.id, archived.id])
    result = services.note_batch_undo(actor=actor, operation_id=op(), batch_id=batch)
    assert statuses(result) == ["undone", "undone"]
    assert factories.note_row(actor, live.id).status == "active"
    assert factories.note_row(actor, archived.id).status == "archived"


def test_undo_of_a_batch_tag_puts_the_tags_back(actor):
    a = factories.note(actor, "one", tags=["keep"])
    b = factories.note(actor, "two", tags=["gone", "keep"])
    batch = op()
    services.note_tag(actor=actor, operation_id=batch, add="new", remove="gone",
                      items=[a.id, b.id])
    services.note_batch_undo(actor=actor, operation_id=op(), batch_id=batch)
    assert factories.note_row(actor, a.id).tags == ["keep"]
    assert factories.note_row(actor, b.id).tags == ["gone", "keep"]
    assert factories.note_row(actor, b.id).version == 3


def test_undo_leaves_a_note_changed_since_and_one_whose_place_is_gone(actor):
    home = factories.notebook(actor, "Home")
    work = factories.notebook(actor, "Work")
    edited = factories.note(actor, "edited later")
    homeless = factories.note(actor, "home goes", notebook_id=home.id)
    fine = factories.note(actor, "fine")
    batch = op()
    services.note_move_many(actor=actor, operation_id=batch, notebook_id=work.id,
                            items=[edited.id, homeless.id, fine.id])
    services.note_update(actor=actor, operation_id=op(), note_id=edited.id, content="new")
    services.notebook_delete(actor=actor, operation_id=op(), notebook_id=home.id)
    result = services.note_batch_undo(actor=actor, operation_id=op(), batch_id=batch)
    assert statuses(result) == ["version_conflict", "refused", "undone"]
    assert result.items[1].code == "notebook_not_found"
    assert factories.note_row(actor, edited.id).notebook_id == work.id
    assert factories.note_row(actor, homeless.id).notebook_id == work.id
    assert factories.note_row(actor, fine.id).notebook_id is None
    # Undoing again finds every note moved on: nothing changes.
    again = services.note_batch_undo(actor=actor, operation_id=op(), batch_id=batch)
    assert statuses(again) == ["version_conflict", "refused", "version_conflict"]


def test_undo_is_the_owners_and_only_of_their_own_batches(actor):
    note = factories.note(actor, "x")
    batch = op()
    services.note_archive(actor=actor, operation_id=batch, items=[note.id])
    key = factories.connection(actor, personal=True)
    with pytest.raises(Forbidden) as err:
        services.note_batch_undo(actor=key, operation_id=op(), batch_id=batch)
    assert err.value.code == "session_required"
    stranger = factories.owner()
    with pytest.raises(NotFound) as err:
        services.note_batch_undo(actor=stranger, operation_id=op(), batch_id=batch)
    assert err.value.code == "batch_not_found"
    agents = op()
    services.note_archive(actor=key, operation_id=agents, items=[factories.note(key, "y").id])
    with pytest.raises(NotFound):  # a connection's batch is not the website's to undo
        services.note_batch_undo(actor=actor, operation_id=op(), batch_id=agents)
    created = op()
    services.note_remember(actor=actor, operation_id=created, content="z", kind="fact")
    with pytest.raises(NotFound):  # not a batch
        services.note_batch_undo(actor=actor, operation_id=op(), batch_id=created)
    assert factories.note_row(actor, note.id).status == "archived"


def test_undo_is_idempotent_by_its_own_operation_id(actor):
    note = factories.note(actor, "x")
    batch, undo = op(), op()
    services.note_archive(actor=actor, operation_id=batch, items=[note.id])
    first = services.note_batch_undo(actor=actor, operation_id=undo, batch_id=batch)
    again = services.note_batch_undo(actor=actor, operation_id=undo, batch_id=batch)
    assert again == first and factories.note_row(actor, note.id).version == 3
