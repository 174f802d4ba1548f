"""Recently deleted (SPEC §3): the owner's website session brings back a note or a
notebook deleted in the last 30 days, as new revisions; nothing else can, and a refusal
changes nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import F
from django.test import Client

from grove.interfaces.mcp_tools import tools
from grove.kernel.actor import Actor
from grove.kernel.errors import Conflict, Forbidden, Gone, Invalid, NotFound
from notebooks import selectors, services
from notebooks.models import Note, Notebook, Revision
from tests import factories
from tests.api.conftest import Caller, data, new_key
from tests.factories import op, tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner() -> Actor:
    return factories.owner()


def forget(actor: Actor, note_id) -> None:
    services.note_forget(actor=actor, operation_id=op(), items=[note_id])


def age_note(actor: Actor, note_id, days: int) -> None:
    """Make a note's deletion `days` older (as if it happened then)."""
    with tenant(actor):
        Note.objects.filter(id=note_id).update(deleted_at=F("deleted_at") - timedelta(days=days))


def age_notebook(actor: Actor, notebook_id, days: int) -> None:
    """Make a subtree delete `days` older: the notebooks and notes it stamped."""
    with tenant(actor):
        when = Notebook.objects.get(id=notebook_id).deleted_at
        Note.objects.filter(deleted_at=when).update(deleted_at=when - timedelta(days=days))
        Notebook.objects.filter(deleted_at=when).update(deleted_at=when - timedelta(days=days))


def history(actor: Actor, note_id) -> list[tuple]:
    return [(r.version, r.reason, r.status, r.content, r.created_at)
            for r in factories.revisions(actor, note_id)]


def snapshot(actor: Actor) -> tuple:
    """Everything a refused restore must leave as it was."""
    with tenant(actor):
        notes = sorted(Note.objects.values_list("id", "status", "version", "deleted_at",
                                                "notebook_id"), key=str)
        notebooks = sorted(Notebook.objects.values_list("id", "deleted_at", "archived_at"),
                           key=str)
    return notes, notebooks, factories.table_counts(actor.account_id)


# -- notes ---------------------------------------------------------------------------------


def test_restoring_a_deleted_note_writes_a_new_revision_with_its_content(owner):
    note = factories.note(owner, "The boiler code is 4711.")
    services.note_update(actor=owner, operation_id=op(), note_id=note.id,
                         content="The boiler code is 4712.")
    forget(owner, note.id)
    before = history(owner, note.id)
    assert [(v, reason) for v, reason, *_ in before] == [(1, "create"), (2, "update"),
                                                        (3, "delete")]

    restored = services.note_undelete(actor=owner, operation_id=op(), note_id=note.id)

    assert (restored.status, restored.version) == ("active", 4)
    assert restored.content == "The boiler code is 4712."
    after = history(owner, note.id)
    assert after[:3] == before  # history is never rewritten
    assert after[3][:4] == (4, "restore", "active", "The boiler code is 4712.")
    row = factories.note_row(owner, note.id)
    assert row.deleted_at is None
    assert [n.id for n in selectors.note_list(actor=owner)] == [note.id]
    assert selectors.trash_list(actor=owner).notes == []


def test_restore_renews_retention_and_replays_by_operation_id(owner):
    handoff = factories.note(owner, "Pick up at step 3.", kind="handoff", task_id="t-1",
                             retention_days=5)
    forget(owner, handoff.id)
    same = op()
    first = services.note_undelete(actor=owner, operation_id=same, note_id=handoff.id)
    again = services.note_undelete(actor=owner, operation_id=same, note_id=handoff.id)
    assert first == again and first.version == 3
    assert len(factories.revisions(owner, handoff.id)) == 3  # the replay wrote nothing
    assert first.expires_at > handoff.expires_at  # the clock restarted


@pytest.mark.parametrize("days", [31, 30])
def test_a_note_deleted_30_days_ago_or_more_is_refused_and_not_offered(owner, days):
    note = factories.note(owner, "Old news.")
    forget(owner, note.id)
    age_note(owner, note.id, days)
    assert selectors.trash_list(actor=owner).notes == []
    before = snapshot(owner)
    with pytest.raises(Gone) as err:
        services.note_undelete(actor=owner, operation_id=op(), note_id=note.id)
    assert err.value.code == "not_restorable" and err.value.status == 410
    assert snapshot(owner) == before


def test_a_note_deleted_29_days_ago_is_still_offered(owner):
    note = factories.note(owner, "Nearly gone.")
    forget(owner, note.id)
    age_note(owner, note.id, 29)
    assert [d.note.id for d in selectors.trash_list(actor=owner).notes] == [note.id]
    assert services.note_undelete(actor=owner, operation_id=op(),
                                  note_id=note.id).status == "active"


def test_a_note_whose_retention_lapsed_is_refused_and_not_offered(owner):
    note = factories.note(owner, "Temporary.", kind="handoff", task_id="t", retention_days=1)
    forget(owner, note.id)
    with tenant(owner):
        Note.objects.filter(id=note.id).update(expires_at=F("deleted_at") - timedelta(hours=1))
    assert selectors.trash_list(actor=owner).notes == []
    before = snapshot(owner)
    with pytest.raises(Gone):
        services.note_undelete(actor=owner, operation_id=op(), note_id=note.id)
    assert snapshot(owner) == before


def test_unknown_live_and_foreign_notes_are_not_found(owner):
    live = factories.note(owner, "Still here.")
    stranger = factories.owner()
    theirs = factories.note(stranger, "Not yours.")
    forget(stranger, theirs.id)
    for note_id in (live.id, theirs.id, factories.op()):
        with pytest.raises(NotFound):
            services.note_undelete(actor=owner, operation_id=op(), note_id=note_id)
    with pytest.raises(Invalid):
        services.note_undelete(actor=owner, operation_id=op(), note_id="note-1")
    assert factories.note_row(stranger, theirs.id).status == "deleted"


def test_a_stale_version_is_refused(owner):
    note = factories.note(owner, "Fenced.")
    forget(owner, note.id)  # now v2
    before = snapshot(owner)
    with pytest.raises(Conflict) as err:
        services.note_undelete(actor=owner, operation_id=op(), note_id=note.id,
                               expected_version=1)
    assert err.value.code == "version_conflict"
    assert snapshot(owner) == before
    assert services.note_undelete(actor=owner, operation_id=op(), note_id=note.id,
                                  expected_version=2).version == 3


def test_a_handoff_whose_task_has_a_live_handoff_again_is_refused(owner):
    old = factories.note(owner, "Old handoff.", kind="handoff", task_id="deploy")
    forget(owner, old.id)
    factories.note(owner, "New handoff.", kind="handoff", task_id="deploy")
    before = snapshot(owner)
    with pytest.raises(Conflict) as err:
        services.note_undelete(actor=owner, operation_id=op(), note_id=old.id)
    assert err.value.code == "handoff_exists"
    assert snapshot(owner) == before


def test_a_note_comes_back_only_into_a_notebook_that_is_there(owner):
    garden = factories.notebook(owner, "Garden")
    note = factories.note(owner, "Water the figs.", notebook_id=garden.id)
    forget(owner, note.id)
    services.notebook_archive(actor=owner, operation_id=op(), notebook_id=garden.id)
    before = snapshot(owner)
    with pytest.raises(Conflict) as err:
        services.note_undelete(actor=owner, operation_id=op(), note_id=note.id)
    assert err.value.code == "notebook_archived"
    assert snapshot(owner) == before
    services.notebook_restore(actor=owner, operation_id=op(), notebook_id=garden.id)
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=garden.id)
    with pytest.raises(Conflict) as err:
        services.note_undelete(actor=owner, operation_id=op(), note_id=note.id)
    assert err.value.code == "notebook_deleted" and "Garden" in err.value.message


# -- connections -----------------------------------------------------------------------------


def test_connections_cannot_restore_or_even_list_what_was_deleted(owner):
    """A key with every grant and capability still cannot bring anything back: the
    services refuse it themselves, whatever interface would call them."""
    nb = factories.notebook(owner, "Garden")
    note = factories.note(owner, "Compost.", notebook_id=nb.id)
    personal = factories.note(owner, "Mine.")
    forget(owner, personal.id)
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=nb.id)
    key = factories.connection(owner, personal=True, all_notebooks=True)
    before = snapshot(owner)
    for call in (
        lambda: services.note_undelete(actor=key, operation_id=op(), note_id=personal.id),
        lambda: services.note_undelete(actor=key, operation_id=op(), note_id=note.id),
        lambda: services.notebook_undelete(actor=key, operation_id=op(), notebook_id=nb.id),
        lambda: selectors.trash_list(actor=key),
    ):
        with pytest.raises(Forbidden) as err:
            call()
        assert err.value.code == "session_required"
    assert snapshot(owner) == before
    system = Actor.system(owner.account_id)
    with pytest.raises(Forbidden):
        services.note_undelete(actor=system, operation_id=op(), note_id=personal.id)


def test_rest_and_mcp_offer_no_way_back(owner):
    """Every restore an API key can reach treats a deleted note as not there, and no
    route or tool is about deleted things."""
    key, _ = new_key(owner)
    api = Caller(Client(), key)
    nb = factories.notebook(owner, "Garden")
    note = factories.note(owner, "Compost.")
    forget(owner, note.id)
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=nb.id)
    before = snapshot(owner)

    restored = data(api.post("/notes/restore", {"items": [str(note.id)]}))
    assert restored["items"][0]["status"] == "not_found"
    archived = data(api.post("/tools/archive_notes", {"items": [str(note.id)],
                                                      "restore": True}))
    assert "not_found" in str(archived)
    assert api.post(f"/notes/{note.id}/restore-revision", {"revision": 1}).status_code == 404
    assert api.post("/tools/restore_note", {"noteId": str(note.id), "revision": 1}) \
        .status_code == 404
    assert api.post(f"/notebooks/{nb.id}/restore").status_code == 403  # session only
    after = snapshot(owner)  # (the batch calls recorded their operations, and no more)
    assert after[:2] == before[:2] and after[2]["revisions"] == before[2]["revisions"]

    paths = " ".join(Client().get("/v1/openapi.json").json()["paths"])
    names = " ".join(tools())
    for word in ("trash", "undelete", "deleted"):
        assert word not in paths and word not in names


# -- notebooks -------------------------------------------------------------------------------


def test_a_notebook_comes_back_with_what_was_deleted_with_it(owner):
    top = factories.notebook(owner, "Top")
    mid = factories.notebook(owner, "Mid", parent=top.id)
    leaf = factories.notebook(owner, "Leaf", parent=mid.id)
    gone_before = factories.notebook(owner, "Gone before", parent=mid.id)
    kept = [factories.note(owner, f"in {nb.name}", notebook_id=nb.id) for nb in (top, mid, leaf)]
    shelved = factories.note(owner, "archived in Mid", notebook_id=mid.id)
    services.note_archive(actor=owner, operation_id=op(), items=[shelved.id])
    alone = factories.note(owner, "deleted on its own", notebook_id=mid.id)
    forget(owner, alone.id)
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=gone_before.id)
    age_notebook(owner, gone_before.id, 1)
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=top.id)

    page = selectors.trash_list(actor=owner)
    assert [d.notebook.name for d in page.notebooks] == ["Top", "Gone before"]
    assert page.notebooks[0].brings_back.model_dump() == {"notebooks": 3, "notes": 4}
    assert [d.note.id for d in page.notes] == [alone.id]  # the rest come with Top

    with pytest.raises(Conflict) as err:  # its notebook is deleted too
        services.note_undelete(actor=owner, operation_id=op(), note_id=alone.id)
    assert err.value.code == "notebook_deleted"

    counts = services.notebook_undelete(actor=owner, operation_id=op(), notebook_id=top.id)

    assert (counts.notebooks, counts.notes) == (3, 4)
    live = {nb.name for nb in selectors.notebook_list(actor=owner)}
    assert live == {"Top", "Mid", "Leaf"}
    assert {n.id for n in selectors.note_list(actor=owner)} == {n.id for n in kept}
    assert factories.note_row(owner, shelved.id).status == "archived"  # as it was
    assert factories.note_row(owner, alone.id).status == "deleted"  # on its own
    for note in (*kept, shelved):
        reasons = [r.reason for r in factories.revisions(owner, note.id)]
        assert reasons[-2:] == ["delete", "restore"]
    page = selectors.trash_list(actor=owner)
    assert [d.notebook.name for d in page.notebooks] == ["Gone before"]
    assert [d.note.id for d in page.notes] == [alone.id]
    # Now that Mid is back, the note deleted on its own can come back too.
    assert services.note_undelete(actor=owner, operation_id=op(),
                                  note_id=alone.id).status == "active"


def test_a_notebook_refuses_cleanly_and_changes_nothing(owner):
    parent = factories.notebook(owner, "Parent")
    child = factories.notebook(owner, "Child", parent=parent.id)
    factories.note(owner, "in child", notebook_id=child.id)
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=child.id)
    age_notebook(owner, child.id, 1)
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=parent.id)

    def refused(notebook_id, code):
        before = snapshot(owner)
        with pytest.raises((Conflict, Gone, NotFound)) as err:
            services.notebook_undelete(actor=owner, operation_id=op(), notebook_id=notebook_id)
        assert err.value.code == code, err.value
        assert snapshot(owner) == before
        return err.value

    assert "Parent" in refused(child.id, "parent_deleted").message
    factories.notebook(owner, "Parent")  # a new one with the same name, at the top
    assert "rename" in refused(parent.id, "notebook_name_taken").message
    refused(factories.notebook(owner, "Live").id, "notebook_not_found")
    refused(factories.op(), "notebook_not_found")


def test_a_notebook_refuses_while_its_parent_is_archived(owner):
    parent = factories.notebook(owner, "Parent")
    child = factories.notebook(owner, "Child", parent=parent.id)
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=child.id)
    services.notebook_archive(actor=owner, operation_id=op(), notebook_id=parent.id)
    with pytest.raises(Conflict) as err:
        services.notebook_undelete(actor=owner, operation_id=op(), notebook_id=child.id)
    assert err.value.code == "parent_archived"


def test_a_notebook_deleted_more_than_30_days_ago_is_gone(owner):
    nb = factories.notebook(owner, "Old")
    note = factories.note(owner, "old note", notebook_id=nb.id)
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=nb.id)
    age_notebook(owner, nb.id, 31)
    page = selectors.trash_list(actor=owner)
    assert page.notebooks == [] and page.notes == []
    with pytest.raises(Gone):
        services.notebook_undelete(actor=owner, operation_id=op(), notebook_id=nb.id)
    assert factories.note_row(owner, note.id).status == "deleted"


def test_a_subtree_with_a_clashing_handoff_comes_back_whole_or_not_at_all(owner):
    nb = factories.notebook(owner, "Ops")
    factories.note(owner, "ordinary", notebook_id=nb.id)
    handoff = factories.note(owner, "step 2", kind="handoff", task_id="t", notebook_id=nb.id)
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=nb.id)
    # A handoff for the same task cannot be written there now; make the clash directly.
    with tenant(owner):
        row = Note.objects.get(id=handoff.id)
        row.pk, row.status, row.deleted_at = factories.op(), "active", None
        row.save(force_insert=True)
    before = snapshot(owner)
    with pytest.raises(Conflict) as err:
        services.notebook_undelete(actor=owner, operation_id=op(), notebook_id=nb.id)
    assert err.value.code == "handoff_exists"
    assert snapshot(owner) == before
    with tenant(owner):
        assert not Revision.objects.filter(reason="restore").exists()


# -- the list --------------------------------------------------------------------------------


def test_the_list_is_newest_first_paged_and_its_cursor_is_checked(owner):
    notes = [factories.note(owner, f"note {i}") for i in range(5)]
    for note in notes:
        forget(owner, note.id)
    first = selectors.trash_list(actor=owner, limit=2)
    assert first.notes_available == 5
    assert [d.note.id for d in first.notes] == [notes[4].id, notes[3].id]
    seen = [d.note.id for d in first.notes]
    cursor = first.next_cursor
    while cursor:
        page = selectors.trash_list(actor=owner, cursor=cursor, limit=2)
        assert page.notebooks == []  # notebooks come with the first page
        seen += [d.note.id for d in page.notes]
        cursor = page.next_cursor
    assert seen == [n.id for n in reversed(notes)]
    with pytest.raises(Invalid):
        selectors.trash_list(actor=owner, cursor="nope")
    with pytest.raises(Invalid):  # another account's cursor
        selectors.trash_list(actor=factories.owner(), cursor=first.next_cursor)


def test_moving_back_is_fenced_by_version(owner):
    """Undo of a move rests on `note_move`'s fence: a note changed since stays put."""
    garden = factories.notebook(owner, "Garden")
    note = factories.note(owner, "Figs.")
    moved = services.note_move(actor=owner, operation_id=op(), note_ids=[note.id],
                               notebook_id=garden.id)[0]
    services.note_update(actor=owner, operation_id=op(), note_id=note.id, content="Fig trees.")
    with pytest.raises(Conflict) as err:
        services.note_move(actor=owner, operation_id=op(), note_ids=[note.id],
                           notebook_id=None, expected_versions={note.id: moved.version})
    assert err.value.code == "version_conflict"
    assert factories.note_row(owner, note.id).notebook_id == garden.id
    with pytest.raises(Invalid):
        services.note_move(actor=owner, operation_id=op(), note_ids=[note.id],
                           notebook_id=None, expected_versions={factories.op(): 1})
    back = services.note_move(actor=owner, operation_id=op(), note_ids=[note.id],
                              notebook_id=None, expected_versions={note.id: moved.version + 1})
    assert back[0].notebook_id is None
