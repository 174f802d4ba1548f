"""Library search (SPEC §4): filters, sorts, honest counts, signed cursors that stay
stable while notes are added, and `matches` evidence."""

from datetime import timedelta

import pytest
from django.utils import timezone

from grove.kernel.errors import Invalid, NotFound
from notebooks import services
from notebooks.models import Note
from notebooks.selectors.search import note_search
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


@pytest.fixture
def actor():
    return factories.owner()


def all_pages(actor, **kwargs):
    seen, cursor, pages = [], None, 0
    while True:
        page = note_search(actor=actor, cursor=cursor, **kwargs)
        seen += [item.note.id for item in page.data]
        pages += 1
        cursor = page.meta.next_cursor
        if cursor is None:
            return seen, pages


def test_paging_returns_everything_once_with_real_counts(actor):
    notes = [factories.note(actor, f"note {i}") for i in range(45)]
    first = note_search(actor=actor, limit=20)
    assert (first.meta.returned, first.meta.available, first.meta.truncated) == (20, 45, True)
    assert first.meta.next_cursor
    seen, pages = all_pages(actor, limit=20)
    assert pages == 3 and len(seen) == 45 and set(seen) == {n.id for n in notes}
    # Newest first by default.
    assert seen[0] == notes[-1].id


def test_paging_is_stable_while_notes_are_added(actor):
    older = [factories.note(actor, f"older {i}") for i in range(30)]
    page = note_search(actor=actor, limit=10, sort="created_desc")
    seen = [i.note.id for i in page.data]
    newer = [factories.note(actor, f"newer {i}") for i in range(5)]
    cursor = page.meta.next_cursor
    while cursor:
        page = note_search(actor=actor, limit=10, sort="created_desc", cursor=cursor)
        assert page.meta.available == 30  # the ceiling of the first page holds
        seen += [i.note.id for i in page.data]
        cursor = page.meta.next_cursor
    assert sorted(seen, key=str) == sorted((n.id for n in older), key=str)  # no dups, no skips
    assert not set(seen) & {n.id for n in newer}
    assert note_search(actor=actor, limit=50).meta.available == 35  # a new search sees them


def test_sorts(actor):
    a = factories.note(actor, "alpha")
    b = factories.note(actor, "bravo")
    services.note_update(actor=actor, operation_id=op(), note_id=a.id, content="alpha two")
    ids = lambda page: [i.note.id for i in page.data]  # noqa: E731
    assert ids(note_search(actor=actor, sort="updated_desc")) == [a.id, b.id]
    assert ids(note_search(actor=actor, sort="updated_asc")) == [b.id, a.id]
    assert ids(note_search(actor=actor, sort="created_desc")) == [b.id, a.id]


def test_relevance_ranks_denser_matches_first_and_pages_by_rank(actor):
    weak = factories.note(actor, "A note that mentions postgres once among many other words "
                                 "about the weather and gardening and cooking.")
    strong = factories.note(actor, "Postgres tuning: postgres shared_buffers and postgres WAL.")
    factories.note(actor, "Nothing relevant here.")
    page = note_search(actor=actor, query="postgres")
    assert [i.note.id for i in page.data] == [strong.id, weak.id]
    assert page.meta.available == 2
    for i in range(25):
        factories.note(actor, f"postgres fact number {i}")
    seen, _ = all_pages(actor, query="postgres", limit=7)
    assert len(seen) == len(set(seen)) == 27


def test_filters(actor):
    nb = factories.notebook(actor, "Work")
    in_nb = factories.note(actor, "in the notebook", "decision", notebook_id=nb.id)
    personal = factories.note(actor, "personal fact", "fact", source_agent="claude")
    handoff = factories.note(actor, "handoff state", "handoff", task_id="t")
    old = factories.note(actor, "old fact", "fact")
    with factories.tenant(actor):
        Note.objects.filter(id=old.id).update(updated_at=timezone.now() - timedelta(days=10))
    ids = lambda **kw: {i.note.id for i in note_search(actor=actor, **kw).data}  # noqa: E731
    assert ids(notebook_id=nb.id) == {in_nb.id}
    assert ids(notebook_id=None) == {personal.id, handoff.id, old.id}
    assert ids(kinds=["fact"]) == {personal.id, old.id}
    assert ids(source_agent="claude") == {personal.id}
    assert ids(updated_after=(timezone.now() - timedelta(days=1)).isoformat()) == {
        in_nb.id, personal.id, handoff.id}
    assert ids(lifetime="ephemeral") == {handoff.id}
    assert handoff.id not in ids(lifetime="permanent")
    services.note_archive(actor=actor, operation_id=op(), items=[personal.id])
    assert ids(status="archived") == {personal.id}
    assert personal.id not in ids()


def test_expired_status_filter(actor):
    note = factories.note(actor, "short lived", retention_days=1)
    with factories.tenant(actor):
        Note.objects.filter(id=note.id).update(expires_at=timezone.now() - timedelta(hours=1))
    assert note_search(actor=actor).data == []
    [item] = note_search(actor=actor, status="expired").data
    assert item.note.id == note.id and item.note.status == "expired"


def test_matches_evidence_is_bound_to_query_and_version(actor):
    note = factories.note(actor, "The backup job runs nightly and the backups are kept "
                                 "for thirty days on the NAS.")
    services.note_update(actor=actor, operation_id=op(), note_id=note.id,
                         content="The backup job runs nightly; backups are kept 30 days.")
    [item] = note_search(actor=actor, query="nightly backups", matches=True).data
    assert item.matches.query == "nightly backups"
    assert item.matches.note_version == 2 == item.note.version
    # The note's words that matched: as stems and as written (lower case, unaccented).
    assert item.matches.terms == ["backup", "backups", "night", "nightly"]
    assert "«" in item.matches.snippet and "»" in item.matches.snippet
    assert note_search(actor=actor, query="nightly").data[0].matches is None


def test_cursors_are_tamper_proof_and_bound_to_caller_and_filters(actor):
    for i in range(5):
        factories.note(actor, f"note {i}")
    cursor = note_search(actor=actor, limit=2).meta.next_cursor
    assert cursor
    tampered = cursor[:-3] + ("AAA" if not cursor.endswith("AAA") else "BBB")
    for bad in (tampered, "garbage", cursor + "x"):
        with pytest.raises(Invalid) as err:
            note_search(actor=actor, limit=2, cursor=bad)
        assert err.value.code == "invalid_cursor"
    with pytest.raises(Invalid) as err:
        note_search(actor=actor, limit=2, cursor=cursor, kinds=["fact"])
    assert err.value.code == "cursor_mismatch"
    stranger = factories.owner()
    with pytest.raises(Invalid) as err:
        note_search(actor=stranger, limit=2, cursor=cursor)
    assert err.value.code == "invalid_cursor"
    key = factories.connection(actor, all_notebooks=True, personal=True)
    with pytest.raises(Invalid):
        note_search(actor=key, limit=2, cursor=cursor)


def test_search_is_grant_scoped(actor):
    a = factories.notebook(actor, "A")
    b = factories.notebook(actor, "B")
    factories.note(actor, "shared word", notebook_id=a.id)
    factories.note(actor, "shared word", notebook_id=b.id)
    key = factories.connection(actor, notebooks=[a.id])
    page = note_search(actor=key, query="shared")
    assert {i.note.notebook_id for i in page.data} == {a.id} and page.meta.available == 1
    with pytest.raises(NotFound):
        note_search(actor=key, notebook_id=b.id)
    assert note_search(actor=factories.owner(), query="shared").meta.available == 0


@pytest.mark.parametrize("kwargs", [
    {"sort": "random"}, {"sort": "relevance"}, {"status": "deleted"}, {"lifetime": "forever"},
    {"kinds": ["rumour"]}, {"limit": 0}, {"limit": 101}, {"updated_after": "yesterday"},
    {"updated_after": "2026-01-01T00:00:00"}, {"query": "x" * 501}, {"notebook_id": "nope"},
])
def test_bad_search_input(actor, kwargs):
    with pytest.raises(Invalid):
        note_search(actor=actor, **kwargs)
