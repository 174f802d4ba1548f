"""Recall (SPEC §4): hybrid RRF order, the semantic threshold, the budget and honest
delivery meta, grant scoping, lexical mode and the query-free profile."""

import numpy as np
import pytest

from grove.kernel import jobs
from grove.kernel.errors import Invalid, NotFound
from notebooks import services
from notebooks.selectors.recall import FUSION_ALPHA, recall
from notebooks.services.indexing import EMBED
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


def unit(*weights):
    v = np.zeros(384, dtype=np.float32)
    v[: len(weights)] = weights
    return v / np.linalg.norm(v)


class TableEmbedder:
    """Vectors chosen by the test, so each arm's ranking is known exactly."""

    profile, dimension = "fake-hash/384", 384

    def __init__(self, table):
        self.table = table

    def embed(self, texts):
        return np.stack([self.table.get(t, unit(0, 0, 0, 1)) for t in texts])


@pytest.fixture
def actor():
    return factories.owner()


@pytest.fixture(autouse=True)
def _clean_vector_index(vacuumed_vectors):
    pass


def index_all(actor):
    while jobs.run_batch(account_id=actor.account_id, kind=EMBED):
        pass


def use_embedder(monkeypatch, embedder):
    monkeypatch.setattr("notebooks.services.indexing.get_embedder", lambda: embedder)
    monkeypatch.setattr("notebooks.selectors.recall.get_embedder", lambda: embedder)


def test_the_fusion_adds_the_arms_scaled_scores(actor, monkeypatch):
    use_embedder(monkeypatch, TableEmbedder({
        "alpha bravo": unit(1, 0),          # the query
        "alpha bravo notes": unit(1, 1),    # lexical 1st, semantic 3rd
        "alpha only": unit(1, 0.3),         # lexical 2nd, semantic 2nd
        "charlie": unit(1, 0.01),           # no shared word, semantic 1st
    }))
    n1 = factories.note(actor, "alpha bravo notes")
    n2 = factories.note(actor, "alpha only")
    n3 = factories.note(actor, "charlie")
    index_all(actor)
    result = recall(actor=actor, query="alpha bravo")
    # Each arm's scores scaled to [0, 1] over its list, then FUSION_ALPHA · lexical +
    # (1 − FUSION_ALPHA) · semantic: the lexical best (n1: 1 and 0) leads, the nearest
    # (n3: 0 and 1) follows, n2 (0 and its scaled similarity) is last.
    assert [i.note.id for i in result.data] == [n1.id, n3.id, n2.id]
    similarity = {i.note.id: 1 - i.distance for i in result.data}
    low, high = min(similarity.values()), max(similarity.values())
    semantic = {note_id: (s - low) / (high - low) for note_id, s in similarity.items()}
    lexical = {n1.id: 1.0, n2.id: 0.0, n3.id: 0.0}
    for item in result.data:
        expected = (FUSION_ALPHA * lexical[item.note.id]
                    + (1 - FUSION_ALPHA) * semantic[item.note.id])
        assert item.score == pytest.approx(expected, abs=1e-6)
    assert [i.matched for i in result.data] == [["lexical", "semantic"], ["semantic"],
                                                 ["lexical", "semantic"]]
    assert result.data[1].distance == pytest.approx(0.0, abs=1e-3)
    meta = result.meta
    assert (meta.mode, meta.returned, meta.available, meta.truncated, meta.pending) == (
        "hybrid", 3, 3, False, 0)
    assert result.data[0].note.versioned_id == f"note:{n1.id}@1"


def test_unrelated_queries_return_nothing(actor):
    factories.note(actor, "The deploy script lives in ops/deploy.sh")
    factories.note(actor, "Prefer tabs over spaces")
    index_all(actor)
    result = recall(actor=actor, query="migratory patterns of arctic terns")
    assert result.data == []
    assert (result.meta.available, result.meta.truncated) == (0, False)


def test_budget_truncates_and_counts_what_matched(actor):
    for i in range(10):
        factories.note(actor, f"Kubernetes cluster note {i}. " + "detail " * 150)
    index_all(actor)
    result = recall(actor=actor, query="kubernetes cluster")
    assert result.meta.available == 10
    assert result.meta.returned == len(result.data) < 8  # the 6,000-character budget bit
    assert result.meta.truncated is True
    spent = sum(len(i.note.content) for i in result.data)
    assert spent <= 6000
    small = recall(actor=actor, query="kubernetes cluster", limit=3, max_chars=50_000)
    assert (small.meta.returned, small.meta.available, small.meta.truncated) == (3, 10, True)
    everything = recall(actor=actor, query="kubernetes cluster", limit=50, max_chars=50_000)
    assert (everything.meta.returned, everything.meta.truncated) == (10, False)


@pytest.mark.parametrize(("limit", "max_chars"), [(0, None), (51, None), (None, 499),
                                                   (None, 50_001), ("8", None), (True, None)])
def test_budget_bounds(actor, limit, max_chars):
    with pytest.raises(Invalid):
        recall(actor=actor, query="x", limit=limit, max_chars=max_chars)


def test_recall_searches_only_the_grant(actor):
    a = factories.notebook(actor, "A")
    b = factories.notebook(actor, "B")
    in_a = factories.note(actor, "postgres tuning tips", notebook_id=a.id)
    factories.note(actor, "postgres tuning secrets", notebook_id=b.id)
    factories.note(actor, "postgres tuning diary")
    index_all(actor)
    key = factories.connection(actor, notebooks=[a.id])
    result = recall(actor=key, query="postgres tuning")
    assert [i.note.id for i in result.data] == [in_a.id]
    assert result.meta.available == 1
    with pytest.raises(NotFound):
        recall(actor=key, query="postgres", place=[b.id])
    stranger = factories.owner()
    assert recall(actor=stranger, query="postgres tuning").data == []
    only_b = recall(actor=actor, query="postgres tuning", place=[b.id],
                    include_personal=False)
    assert {i.note.notebook_id for i in only_b.data} == {b.id}


def test_archived_expired_and_deleted_notes_are_not_recalled(actor):
    from datetime import timedelta

    from django.utils import timezone

    from notebooks.models import Note

    live = factories.note(actor, "redis eviction policy")
    archived = factories.note(actor, "redis eviction archived")
    deleted = factories.note(actor, "redis eviction deleted")
    expired = factories.note(actor, "redis eviction expired", retention_days=1)
    old_book = factories.notebook(actor, "Old")
    in_archived_book = factories.note(actor, "redis eviction shelved", notebook_id=old_book.id)
    index_all(actor)
    services.note_archive(actor=actor, operation_id=op(), items=[archived.id])
    services.note_forget(actor=actor, operation_id=op(), items=[deleted.id])
    services.notebook_archive(actor=actor, operation_id=op(), notebook_id=old_book.id)
    with factories.tenant(actor):
        Note.objects.filter(id=expired.id).update(expires_at=timezone.now() - timedelta(1))
    ids = [i.note.id for i in recall(actor=actor, query="redis eviction").data]
    assert ids == [live.id]
    assert in_archived_book.id not in ids


def test_lexical_mode_when_embeddings_are_disabled(actor, monkeypatch):
    use_embedder(monkeypatch, None)
    monkeypatch.setattr("notebooks.selectors.recall.active_profile_name", lambda: None)
    note = factories.note(actor, "tabs versus spaces")
    assert note.indexing == "ready"
    result = recall(actor=actor, query="spaces")
    assert result.meta.mode == "lexical" and result.meta.pending == 0
    assert [i.note.id for i in result.data] == [note.id]
    assert result.data[0].matched == ["lexical"]


def test_pending_counts_notes_without_a_vector_yet(actor):
    factories.note(actor, "first")
    factories.note(actor, "second")
    assert recall(actor=actor, query="first").meta.pending == 2
    index_all(actor)
    assert recall(actor=actor, query="first").meta.pending == 0


def test_an_edited_note_is_not_found_by_its_old_vector(actor, monkeypatch):
    use_embedder(monkeypatch, TableEmbedder({"zebra": unit(1, 0), "old words": unit(1, 0),
                                             "new words": unit(0, 1)}))
    note = factories.note(actor, "old words")
    index_all(actor)
    assert [i.note.id for i in recall(actor=actor, query="zebra").data] == [note.id]
    services.note_update(actor=actor, operation_id=op(), note_id=note.id, content="new words")
    assert recall(actor=actor, query="zebra").data == []  # the old vector no longer counts
    index_all(actor)
    assert recall(actor=actor, query="zebra").data == []


def test_query_free_recall_is_the_profile(actor):
    factories.note(actor, "Use British English", "preference", pinned=True)
    factories.note(actor, "Office is in Leeds", "fact", importance=0.9)
    factories.note(actor, "We chose PostgreSQL", "decision")
    factories.note(actor, "Fixed the flaky test", "solution")
    handoff = factories.note(actor, "Next: migrate the users table", "handoff", task_id="t-1")
    factories.note(actor, "Other task state", "handoff", task_id="t-2")
    profile = recall(actor=actor)
    assert profile.meta.mode == "profile"
    assert [i.note.kind for i in profile.data] == ["preference", "fact", "decision"]
    assert profile.meta.available == 3
    with_task = recall(actor=actor, task_id="t-1")
    assert with_task.data[0].note.id == handoff.id
    assert [i.note.kind for i in with_task.data][1:] == ["preference", "fact", "decision"]
    assert with_task.meta.no_handoff is None and with_task.meta.available == 4
    # A task id no live handoff has is said, not passed over: the profile comes alone.
    unknown = recall(actor=actor, task_id="t-9")
    assert unknown.meta.no_handoff == "t-9"
    assert [i.note.kind for i in unknown.data] == ["preference", "fact", "decision"]
    assert unknown.meta.model_dump(by_alias=True)["noHandoff"] == "t-9"


def test_the_profile_keeps_every_kind_when_one_kind_floods_it(actor):
    """The reported case: 2 pinned preferences, 4 more preferences, 1 fact — then ten
    newer decisions. Every kind keeps its share of the eight items."""
    pinned = [factories.note(actor, f"Pinned preference {n}", "preference", pinned=True)
              for n in range(2)]
    others = [factories.note(actor, f"Preference {n}", "preference") for n in range(4)]
    fact = factories.note(actor, "The office is in Leeds", "fact")
    for n in range(10):
        factories.note(actor, f"Decided on option {n}", "decision", importance=0.6)
    profile = recall(actor=actor)
    kinds = [item.note.kind for item in profile.data]
    assert [i.note.id for i in profile.data[:2]] == [pinned[1].id, pinned[0].id]  # newest
    assert kinds[2:5] == ["preference", "fact", "decision"]  # then the kinds in turn
    assert kinds.count("preference") >= 4 and kinds.count("decision") >= 2
    assert fact.id in {i.note.id for i in profile.data}
    assert {i.note.id for i in profile.data} & {n.id for n in others}
    assert (profile.meta.returned, profile.meta.available) == (8, 17)
    assert profile.meta.truncated is True
    # Within a kind: importance first, then the newest.
    important = factories.note(actor, "Prefers short answers", "preference", importance=0.95)
    assert recall(actor=actor).data[2].note.id == important.id


@pytest.mark.parametrize("bad", [42, "x" * 2001])
def test_bad_queries_are_refused(actor, bad):
    with pytest.raises(Invalid):
        recall(actor=actor, query=bad)
