"""Recent activity (SPEC §10): revisions in scope since a time, newest first, with the
connection that made each, paged by a signed cursor — and who-am-I."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from grove.kernel.errors import Forbidden, Invalid, NotFound
from grove.kernel.tenancy import tenant
from grove.models import Connection
from notebooks import selectors, services
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner():
    return factories.owner("alice")


def _named(owner, agent, name):
    with tenant(owner):
        Connection.objects.filter(id=agent.connection_id).update(name=name)


def test_revisions_newest_first_with_who_made_them(owner):
    claude = factories.connection(owner, all_notebooks=True, personal=True)
    _named(owner, claude, "Claude")
    note = factories.note(owner, "Draft plan.")
    services.note_update(actor=claude, operation_id=op(), note_id=note.id,
                         content="Claude's plan.")
    services.note_archive(actor=claude, operation_id=op(), items=[str(note.id)])
    other = factories.note(claude, "Claude's own note.")
    page = selectors.activity_list(actor=owner)
    assert [(i.id, i.change, i.by) for i in page.data] == [
        (other.versioned_id, "create", "Claude"),
        (f"note:{note.id}@3", "archive", "Claude"),
        (f"note:{note.id}@2", "update", "Claude"),
        (f"note:{note.id}@1", "create", "website")]
    assert page.data[2].title == "Claude's plan." and page.data[3].title == "Draft plan."
    assert page.data[0].connection_id == claude.connection_id
    assert page.data[3].connection_id is None
    assert (page.meta.returned, page.meta.available, page.meta.truncated) == (4, 4, False)


def test_filters_by_connection_and_since(owner):
    claude = factories.connection(owner, all_notebooks=True, personal=True)
    factories.note(owner, "Old news.")
    cut = timezone.now()
    mine = factories.note(owner, "Mine.")
    theirs = factories.note(claude, "Theirs.")
    by_claude = selectors.activity_list(actor=owner, connection_id=claude.connection_id)
    assert [i.id for i in by_claude.data] == [theirs.versioned_id]
    website = selectors.activity_list(actor=owner, connection_id="website", since=cut)
    assert [i.id for i in website.data] == [mine.versioned_id]  # Old news is older
    assert selectors.activity_list(actor=owner).meta.available == 3
    later = selectors.activity_list(actor=owner, since=timezone.now() + dt.timedelta(days=1))
    assert later.meta.available == 0
    today = timezone.now().date()
    assert selectors.activity_list(actor=owner, since=today).meta.available == 3
    assert selectors.activity_list(actor=owner, connection_id=str(
        factories.connection(owner).connection_id)).data == []
    with pytest.raises(Invalid):
        selectors.activity_list(actor=owner, connection_id="someone")


def test_paging_by_signed_cursor_is_stable(owner):
    notes = [factories.note(owner, f"Change {i}.") for i in range(7)]
    first = selectors.activity_list(actor=owner, limit=3)
    assert (first.meta.returned, first.meta.available, first.meta.truncated) == (3, 7, True)
    factories.note(owner, "Written while paging.")  # after the ceiling: not on later pages
    second = selectors.activity_list(actor=owner, limit=3, cursor=first.meta.next_cursor)
    third = selectors.activity_list(actor=owner, limit=3, cursor=second.meta.next_cursor)
    seen = [i.id for page in (first, second, third) for i in page.data]
    assert seen == [n.versioned_id for n in reversed(notes)]
    assert third.meta.next_cursor is None
    with pytest.raises(Invalid) as tampered:
        selectors.activity_list(actor=owner, limit=3, cursor=first.meta.next_cursor[:-2] + "xx")
    assert tampered.value.code == "invalid_cursor"
    with pytest.raises(Invalid) as other_filters:
        selectors.activity_list(actor=owner, limit=3, cursor=first.meta.next_cursor,
                                connection_id="website")
    assert other_filters.value.code == "cursor_mismatch"
    agent = factories.connection(owner, all_notebooks=True, personal=True)
    with pytest.raises(Invalid) as foreign:
        selectors.activity_list(actor=agent, limit=3, cursor=first.meta.next_cursor)
    assert foreign.value.code == "invalid_cursor"


def test_a_connection_sees_only_its_grant(owner):
    garden = factories.notebook(owner, "Garden")
    diary = factories.notebook(owner, "Diary")
    seen = factories.note(owner, "Garden change.", notebook_id=garden.id)
    factories.note(owner, "Diary change.", notebook_id=diary.id)
    factories.note(owner, "Personal change.")
    factories.note(factories.owner(), "Another account's change.")
    agent = factories.connection(owner, notebooks=[garden.id])
    page = selectors.activity_list(actor=agent)
    assert [i.id for i in page.data] == [seen.versioned_id]
    assert page.data[0].notebook == "Garden" and page.meta.available == 1
    with pytest.raises(NotFound):
        selectors.activity_list(actor=agent, notebook_id=diary.id)
    with pytest.raises(Forbidden):
        selectors.activity_list(actor=agent, notebook_id=None)
    # A note moved out of the grant takes its whole history with it.
    services.note_move(actor=owner, operation_id=op(), note_ids=[seen.id],
                       notebook_id=diary.id)
    assert selectors.activity_list(actor=agent).data == []


def test_a_deleted_note_shows_what_happened_without_its_text(owner):
    claude = factories.connection(owner, all_notebooks=True, personal=True)
    note = factories.note(owner, "The secret recipe.")
    services.note_forget(actor=claude, operation_id=op(), items=[str(note.id)])
    page = selectors.activity_list(actor=owner)
    assert [(i.change, i.title) for i in page.data] == [("delete", ""), ("create", "")]


def test_notes_in_a_deleted_notebook_leave_activity(owner):
    doomed = factories.notebook(owner, "Doomed")
    factories.note(owner, "In a doomed notebook.", notebook_id=doomed.id)
    services.notebook_delete(actor=owner, notebook_id=doomed.id, operation_id=op())
    assert selectors.activity_list(actor=owner).data == []


def test_whoami_says_what_a_connection_may_do(owner):
    garden = factories.notebook(owner, "Garden")
    seeds = factories.notebook(owner, "Seeds", parent=garden.id)
    factories.notebook(owner, "Diary")
    agent = factories.connection(owner, capabilities=["memory:read"],
                                 notebooks=[garden.id, seeds.id])
    _named(owner, agent, "Cursor")
    me = selectors.whoami(actor=agent)
    assert (me.account, me.via, me.connection_name, me.connection_kind) == (
        "alice", "connection", "Cursor", "api_key")
    assert me.capabilities == ["memory:read"]
    assert (me.personal, me.all_notebooks, me.capture_paused) == (False, False, False)
    assert [(n.id, n.name) for n in me.notebooks] == [
        (f"notebook:{garden.id}", "Garden"), (f"notebook:{seeds.id}", "Garden / Seeds")]
    assert me.startup == ("You are Cursor in alice's Grove: read only; Garden, Garden / "
                          "Seeds; Personal notes: no. Automatic capture is on.")
    owner_view = selectors.whoami(actor=owner)
    assert owner_view.via == "session" and owner_view.connection_id is None
    assert len(owner_view.notebooks) == 3 and owner_view.all_notebooks is True


def test_since_at_the_edges_of_time(owner):
    factories.note(owner, "Now.")
    ahead = dt.timezone(dt.timedelta(hours=16, minutes=1))  # ISO 8601 allows it; SQL not
    far = dt.datetime(455, 5, 4, 19, 10, tzinfo=ahead)
    assert selectors.activity_list(actor=owner, since=far).meta.available == 1
    always = dt.datetime.min.replace(tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert selectors.activity_list(actor=owner, since=always).meta.available == 1
    never = dt.datetime.max.replace(tzinfo=dt.timezone(-dt.timedelta(hours=1)))
    assert selectors.activity_list(actor=owner, since=never).meta.available == 0
    from notebooks.selectors import brief_get

    assert brief_get(actor=owner, since=always).meta.recent.available == 1
