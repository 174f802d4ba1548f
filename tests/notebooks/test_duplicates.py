"""Likely duplicates (SPEC §8 Tidy-up): `similar_notes`, `remember`'s `similar` and
`duplicate_groups` — what counts as a duplicate, and that grants, places, accounts and
liveness bound what they may name.

Vectors come from the deterministic fake embedder (tests/fake_embedder.py): a text and
the same text with a word added are close (distance ≈ 1 − n/√(n(n+1))), unrelated texts
far apart."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from grove.embeddings import EmbeddingUnavailable
from grove.kernel import jobs
from grove.kernel.actor import WRITE
from grove.kernel.errors import Forbidden, Invalid, NotFound
from notebooks import services
from notebooks.models import Note
from notebooks.rules import DUPLICATE_MAX_DISTANCE
from notebooks.selectors.duplicates import duplicate_groups, similar_notes
from notebooks.services.indexing import EMBED
from tests import factories
from tests.factories import op, tenant
from tests.fake_embedder import FakeEmbedder

pytestmark = pytest.mark.django_db

# About twenty distinct words: one more word moves it by about 1 − 20/√420 ≈ 0.024.
BASE = ("Quarterly budget review moved to Thursday afternoon because finance needs "
        "updated vendor invoices from procurement before approving travel spending limits")
NEAR = "Note: " + BASE  # one word more
EXACT = "  quarterly BUDGET review moved to thursday afternoon because finance needs\n\n"\
        "updated vendor invoices   from procurement before approving travel spending limits "
UNRELATED = "The cat sleeps on the warm windowsill every sunny morning."


@pytest.fixture(autouse=True)
def _clean_vector_index(vacuumed_vectors):
    pass


@pytest.fixture
def actor():
    return factories.owner()


def index_all(actor):
    while jobs.run_batch(account_id=actor.account_id, kind=EMBED):
        pass


def distance(a: str, b: str) -> float:
    x, y = FakeEmbedder().embed([a, b])
    return 1.0 - float(x @ y)


def test_the_fixtures_are_what_they_claim():
    assert 0.015 < distance(BASE, NEAR) < 0.03
    assert distance(BASE, NEAR) < DUPLICATE_MAX_DISTANCE < distance(BASE, UNRELATED)
    assert distance(BASE, UNRELATED) > 0.5


def remember(actor, content, **kwargs):
    kwargs.setdefault("find_similar", True)  # near-duplicates too, as asked
    return services.note_remember(actor=actor, operation_id=op(), content=content,
                                  kind="fact", **kwargs)


# -- similar_notes ---------------------------------------------------------------------------


def test_similar_notes_finds_exact_and_near_duplicates_only(actor):
    base = factories.note(actor, BASE)
    near = factories.note(actor, NEAR)
    factories.note(actor, UNRELATED)
    index_all(actor)
    exact = factories.note(actor, EXACT)  # not indexed yet: found by its content
    assert factories.note_row(actor, exact.id).indexing == "pending"
    assert similar_notes(actor=actor, note_id=base.id) == [exact.id, near.id]
    # The near one has a vector: both others are near it, the exact copy by content only
    # through the base's vector — it has none of its own yet.
    assert similar_notes(actor=actor, note_id=near.id) == [base.id]
    assert similar_notes(actor=actor, note_id=exact.id) == [base.id]  # by content
    index_all(actor)
    # base and its exact copy have one vector (the fake model ignores case and spaces).
    assert set(similar_notes(actor=actor, note_id=near.id)) == {base.id, exact.id}
    assert similar_notes(actor=actor, note_id=near.id, max_distance=0.01) == []
    assert similar_notes(actor=actor, note_id=base.id, limit=1) == [exact.id]


def test_similar_notes_stays_in_the_notes_place(actor):
    trips = factories.notebook(actor, "Trips")
    work = factories.notebook(actor, "Work")
    base = factories.note(actor, BASE, notebook_id=work.id)
    factories.note(actor, BASE, notebook_id=trips.id)
    factories.note(actor, NEAR)  # Personal
    near_in_work = factories.note(actor, NEAR, notebook_id=work.id)
    index_all(actor)
    assert similar_notes(actor=actor, note_id=base.id) == [near_in_work.id]
    personal = factories.note(actor, BASE)
    index_all(actor)
    assert len(similar_notes(actor=actor, note_id=personal.id)) == 1
    assert similar_notes(actor=actor, note_id=personal.id) != [near_in_work.id]


def test_similar_notes_never_names_dead_notes(actor):
    base = factories.note(actor, BASE)
    archived = factories.note(actor, EXACT)
    forgotten = factories.note(actor, NEAR)
    expired = factories.note(actor, BASE + " again", retention_days=1)
    index_all(actor)
    assert set(similar_notes(actor=actor, note_id=base.id)) == {archived.id, forgotten.id,
                                                                 expired.id}
    services.note_archive(actor=actor, operation_id=op(), items=[archived.id])
    services.note_forget(actor=actor, operation_id=op(), items=[forgotten.id])
    with tenant(actor):
        Note.objects.filter(id=expired.id).update(expires_at=timezone.now() - timedelta(1))
    assert similar_notes(actor=actor, note_id=base.id) == []


def test_similar_notes_in_an_archived_notebook_are_not_live(actor):
    shelf = factories.notebook(actor, "Shelf")
    base = factories.note(actor, BASE)
    factories.note(actor, BASE, notebook_id=shelf.id)
    services.notebook_archive(actor=actor, operation_id=op(), notebook_id=shelf.id)
    moved = factories.note(actor, NEAR)
    index_all(actor)
    assert similar_notes(actor=actor, note_id=base.id) == [moved.id]


def test_similar_notes_respects_the_grant_and_the_account(actor):
    granted = factories.notebook(actor, "Granted")
    hidden = factories.notebook(actor, "Hidden")
    in_granted = factories.note(actor, BASE, notebook_id=granted.id)
    in_hidden = factories.note(actor, BASE, notebook_id=hidden.id)
    twin = factories.note(actor, NEAR, notebook_id=granted.id)
    stranger = factories.owner()
    theirs = factories.note(stranger, BASE)
    factories.note(stranger, NEAR)
    index_all(actor)
    index_all(stranger)
    agent = factories.connection(actor, notebooks=[granted.id])
    assert similar_notes(actor=agent, note_id=in_granted.id) == [twin.id]
    with pytest.raises(NotFound):
        similar_notes(actor=agent, note_id=in_hidden.id)
    with pytest.raises(NotFound):
        similar_notes(actor=actor, note_id=theirs.id)
    mine = factories.note(actor, BASE)
    index_all(actor)
    assert similar_notes(actor=actor, note_id=mine.id) == []  # the stranger's are not mine


def test_similar_notes_checks_its_arguments(actor):
    note = factories.note(actor, BASE)
    with pytest.raises(Invalid):
        similar_notes(actor=actor, note_id=note.id, limit=0)
    with pytest.raises(Invalid):
        similar_notes(actor=actor, note_id=note.id, limit=True)
    with pytest.raises(Invalid):
        similar_notes(actor=actor, note_id="not-a-uuid")


# -- remember's `similar` ------------------------------------------------------------------


def test_remember_reports_similar_notes_and_still_saves(actor):
    first = remember(actor, BASE)
    assert first.similar == []  # nothing to compare with yet
    index_all(actor)
    exact = remember(actor, EXACT)
    assert (exact.created, exact.similar) == (True, [first.note.id])
    near = remember(actor, NEAR)  # first has a vector; exact has none yet
    assert (near.created, near.similar) == (True, [first.note.id])
    assert remember(actor, UNRELATED).similar == []
    with tenant(actor):
        assert Note.objects.count() == 4


def test_remember_similar_is_within_the_notebook_and_the_grant(actor):
    granted = factories.notebook(actor, "Granted")
    other = factories.notebook(actor, "Other")
    factories.note(actor, BASE, notebook_id=other.id)
    factories.note(actor, BASE)  # Personal
    index_all(actor)
    agent = factories.connection(actor, notebooks=[granted.id])
    saved = remember(agent, BASE, notebook_id=granted.id)
    assert saved.similar == []
    index_all(actor)
    again = remember(agent, NEAR, notebook_id=granted.id)
    assert again.similar == [saved.note.id]
    writer = factories.connection(actor, capabilities=[WRITE], notebooks=[granted.id])
    blind = remember(writer, BASE, notebook_id=granted.id)
    assert blind.similar == []  # may write, may not read: learns of no note


def test_a_handoff_update_is_not_its_own_duplicate(actor):
    saved = services.note_remember(actor=actor, operation_id=op(), content=BASE,
                                   kind="handoff", task_id="t1")
    index_all(actor)
    updated = services.note_remember(actor=actor, operation_id=op(), content=NEAR,
                                     kind="handoff", task_id="t1", find_similar=True)
    assert (updated.created, updated.note.id, updated.similar) == (False, saved.note.id, [])


def test_by_default_remember_compares_the_text_only_and_embeds_nothing(actor, monkeypatch):
    first = remember(actor, BASE)
    index_all(actor)
    monkeypatch.setattr("notebooks.selectors.duplicates.get_embedder", FailingEmbedder)
    assert remember(actor, EXACT, find_similar=False).similar == [first.note.id]
    near = remember(actor, NEAR, find_similar=False)
    assert near.similar == []  # near, but not asked for
    # asked for, the provider down: the same text only (the near note), never `first`
    assert remember(actor, NEAR).similar == [near.note.id]
    with pytest.raises(Invalid):
        remember(actor, NEAR, find_similar="yes")


class FailingEmbedder(FakeEmbedder):
    def embed(self, texts):
        raise EmbeddingUnavailable("the provider is down")


def test_remember_keeps_exact_duplicates_when_the_provider_fails(actor, monkeypatch):
    first = remember(actor, BASE)
    index_all(actor)
    monkeypatch.setattr("notebooks.selectors.duplicates.get_embedder", FailingEmbedder)
    saved = remember(actor, EXACT)
    assert saved.similar == [first.note.id]
    assert remember(actor, NEAR).similar == []  # no vector to compare: content only
    with tenant(actor):
        assert Note.objects.count() == 3


def test_remember_similar_without_embeddings_is_content_only(actor, monkeypatch):
    first = remember(actor, BASE)
    monkeypatch.setattr("notebooks.selectors.duplicates.get_embedder", lambda: None)
    monkeypatch.setattr("notebooks.selectors.duplicates.configured_profile", lambda: None)
    assert remember(actor, EXACT).similar == [first.note.id]
    assert remember(actor, NEAR).similar == []


def test_a_replay_returns_the_similar_notes_the_save_saw(actor):
    first = remember(actor, BASE)
    index_all(actor)
    operation = op()

    def save():
        return services.note_remember(actor=actor, operation_id=operation, content=NEAR,
                                      kind="fact", find_similar=True)

    saved = save()
    assert saved.similar == [first.note.id]
    later = remember(actor, EXACT)  # a duplicate made after the save
    index_all(actor)
    replayed = save()
    assert replayed == saved  # the stored result, not a fresh search
    assert later.note.id not in replayed.similar
    services.note_forget(actor=actor, operation_id=op(), items=[first.note.id])
    assert save().similar == []  # never names a note the caller can no longer see
    assert save().note == saved.note


def test_a_replay_leaves_out_a_similar_note_moved_out_of_the_grant(actor):
    granted = factories.notebook(actor, "Granted")
    elsewhere = factories.notebook(actor, "Elsewhere")
    first = remember(actor, BASE, notebook_id=granted.id)
    index_all(actor)
    agent = factories.connection(actor, notebooks=[granted.id])
    operation = op()

    def save():
        return services.note_remember(actor=agent, operation_id=operation, content=NEAR,
                                      kind="fact", notebook_id=granted.id, find_similar=True)

    assert save().similar == [first.note.id]
    services.note_move(actor=actor, operation_id=op(), note_ids=[first.note.id],
                       notebook_id=elsewhere.id)
    assert save().similar == []
    assert similar_notes(actor=actor, note_id=first.note.id) == []  # another place now


# -- duplicate_groups ------------------------------------------------------------------------


def words(n: int, offset: int = 0) -> list[str]:
    return [f"w{offset + i}x" for i in range(n)]


def cluster(stem: int, size: int) -> list[str]:
    """`size` texts of 20 shared words and k extra ones: pairwise near duplicates."""
    base = words(20, stem * 100)
    return [" ".join(base + words(k, stem * 100 + 50)) for k in range(size)]


def test_duplicate_groups_groups_near_and_exact_duplicates(actor):
    notebook = factories.notebook(actor, "Tidy")
    a = [factories.note(actor, text, notebook_id=notebook.id) for text in cluster(1, 3)]
    b = [factories.note(actor, text, notebook_id=notebook.id) for text in cluster(2, 2)]
    loner = factories.note(actor, UNRELATED, notebook_id=notebook.id)
    factories.note(actor, cluster(1, 1)[0])  # Personal: another place
    index_all(actor)
    copy = factories.note(actor, UNRELATED.upper(), notebook_id=notebook.id)  # no vector
    result = duplicate_groups(actor=actor, notebook_id=notebook.id)
    assert (result.scanned, result.truncated, result.unindexed) == (7, False, 1)
    assert result.max_distance == DUPLICATE_MAX_DISTANCE
    groups = [{m.id for m in g.notes} for g in result.groups]
    assert groups == [{loner.id, copy.id}, {n.id for n in a}, {n.id for n in b}] or \
        groups == [{loner.id, copy.id}, {n.id for n in b}, {n.id for n in a}]
    exact_group = result.groups[0]
    assert [(link.exact, link.distance) for link in exact_group.links] == [(True, None)]
    assert [m.version for m in exact_group.notes] == [1, 1]
    three = next(g for g in result.groups if len(g.notes) == 3)
    assert len(three.links) == 2  # a spanning tree: the two closest links
    assert all(0 < link.distance <= DUPLICATE_MAX_DISTANCE and not link.exact
               for link in three.links)
    assert [link.distance for link in three.links] == sorted(link.distance
                                                             for link in three.links)
    # The pairwise distances are the real ones.
    texts = cluster(1, 3)
    expected = sorted(distance(texts[i], texts[j]) for i, j in ((0, 1), (0, 2), (1, 2)))[:2]
    assert [link.distance for link in three.links] == pytest.approx(expected, abs=1e-5)


def test_duplicate_groups_reports_current_versions(actor):
    notebook = factories.notebook(actor, "Tidy")
    first, second = (factories.note(actor, t, notebook_id=notebook.id)
                     for t in cluster(3, 2))
    index_all(actor)
    services.note_update(actor=actor, operation_id=op(), note_id=first.id, pinned=True)
    [group] = duplicate_groups(actor=actor, notebook_id=notebook.id).groups
    assert {(m.id, m.version) for m in group.notes} == {(first.id, 2), (second.id, 1)}
    assert group.notes[0].id == first.id  # most recently updated first


def test_duplicate_groups_respects_its_bounds(actor):
    notebook = factories.notebook(actor, "Tidy")
    for stem, size in ((1, 4), (2, 2), (3, 2)):
        for text in cluster(stem, size):
            factories.note(actor, text, notebook_id=notebook.id)
    index_all(actor)
    full = duplicate_groups(actor=actor, notebook_id=notebook.id)
    assert sorted(len(g.notes) for g in full.groups) == [2, 2, 4]
    capped = duplicate_groups(actor=actor, notebook_id=notebook.id, max_group_size=2)
    assert all(len(g.notes) == 2 for g in capped.groups)
    assert len(capped.groups) == 4  # the four-note cluster split into two pairs
    assert len(duplicate_groups(actor=actor, notebook_id=notebook.id, max_groups=1).groups) == 1
    few = duplicate_groups(actor=actor, notebook_id=notebook.id, max_scanned=3)
    assert (few.scanned, few.truncated) == (3, True)
    scanned_ids = {m.id for g in few.groups for m in g.notes}
    assert len(scanned_ids) <= 3
    for bad in ({"max_groups": 0}, {"max_group_size": 1}, {"max_scanned": 10_000},
                {"max_distance": 3.0}):
        with pytest.raises(Invalid):
            duplicate_groups(actor=actor, notebook_id=notebook.id, **bad)


def test_duplicate_groups_respects_the_grant_and_liveness(actor):
    notebook = factories.notebook(actor, "Tidy")
    first, second, third = (factories.note(actor, t, notebook_id=notebook.id)
                            for t in cluster(4, 3))
    index_all(actor)
    services.note_archive(actor=actor, operation_id=op(), items=[third.id])
    [group] = duplicate_groups(actor=actor, notebook_id=notebook.id).groups
    assert {m.id for m in group.notes} == {first.id, second.id}
    outsider = factories.connection(actor, personal=True)
    with pytest.raises(NotFound):
        duplicate_groups(actor=outsider, notebook_id=notebook.id)
    no_personal = factories.connection(actor, notebooks=[notebook.id])
    with pytest.raises(Forbidden):
        duplicate_groups(actor=no_personal, notebook_id=None)
    with pytest.raises(NotFound):
        duplicate_groups(actor=factories.owner(), notebook_id=notebook.id)


def test_duplicate_groups_of_personal(actor):
    personal = [factories.note(actor, t) for t in cluster(5, 2)]
    notebook = factories.notebook(actor, "Elsewhere")
    factories.note(actor, cluster(5, 3)[2], notebook_id=notebook.id)
    index_all(actor)
    [group] = duplicate_groups(actor=actor, notebook_id=None).groups
    assert {m.id for m in group.notes} == {n.id for n in personal}


def test_fake_vectors_are_unit_length():
    vectors = FakeEmbedder().embed(cluster(1, 3))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
