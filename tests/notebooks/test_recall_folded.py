"""Recall's query path in one statement (`notebooks.selectors.recall_query.gather`):
what it sends, that its fused ranking is the two arms' scores fused as each arm alone
ranks, and its edges — a grant of nothing, notes waiting for a vector, the
tenant context made with the HNSW settings in one round trip."""

import random
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from pgvector.django import CosineDistance

from grove.kernel.tenancy import tenant
from notebooks import services
from notebooks.selectors.access import Scope
from notebooks.selectors.recall import (
    CANDIDATES,
    FUSION_ALPHA,
    Searched,
    _lexical,
    recall,
    term_weights,
)
from passages.models import Passage, PassageVector
from tests import factories
from tests.api.conftest import new_key
from tests.factories import op
from tests.notebooks.test_recall import TableEmbedder, index_all, unit, use_embedder

pytestmark = pytest.mark.django_db

WORDS = ["glacier", "moraine", "fjord", "tundra", "permafrost", "iceberg", "crevasse",
         "serac", "cirque", "esker", "drumlin", "kettle"]


@pytest.fixture(autouse=True)
def _clean_vector_index(vacuumed_vectors):
    pass


@pytest.fixture
def owner():
    return factories.owner()


def _statements(captured) -> list[str]:
    return [q["sql"] for q in captured if not re.match(r"(RELEASE )?SAVEPOINT", q["sql"])]


def test_both_arms_the_rows_and_the_counts_are_one_statement(owner, monkeypatch):
    use_embedder(monkeypatch, TableEmbedder({"glacier moraine": unit(1, 0)}))
    factories.note(owner, "A glacier leaves a moraine behind.")
    factories.note(owner, "Fjords were cut by ice.")
    index_all(owner)
    with CaptureQueriesContext(connection) as ctx:
        result = recall(actor=owner, query="glacier moraine")
    assert result.data
    sent = _statements(ctx.captured_queries)
    # The tenant context read, then made together with the HNSW settings; the scope's
    # known-false claims; the query's lexemes with their counts; the one statement; the
    # ground-truth marks of the items' places (declarations, then claims:
    # `truth_marks`, two small reads when nothing is declared); and the context put back
    # for the surrounding (test) transaction.
    assert len(sent) == 8, sent
    assert "notebooks_truthdeclaration" in sent[5] and "notebooks_negativeclaim" in sent[6]
    assert "hnsw.ef_search" in sent[1] and "grove.account_mac" in sent[1]
    folded = [sql for sql in sent if "grove_passage_matches(" in sql]
    assert len(folded) == 1 and "<=>" in folded[0] and "notebooks_note" in folded[0]


def _reference(actor, query, vector, profile):
    """The ranking as the two arms alone give it, fused in Python: each arm's scores
    min-max scaled over its list, FUSION_ALPHA · lexical + (1 − FUSION_ALPHA) · semantic."""
    weights = term_weights(query)
    scope = Searched(Scope(actor=actor, notebook_ids=None, personal=True))
    lexical, _ = _lexical(weights, scope)
    # Each note's nearest passage (these notes are one passage each), exactly.
    nearest = (PassageVector.objects.filter(scope.q(prefix="note__"), profile=profile)
               .annotate(distance=CosineDistance("embedding", vector))
               .order_by("note_id", "distance").distinct("note_id")
               .values_list("note_id", "distance"))
    semantic = sorted(((note_id, 1 - d) for note_id, d in nearest if d <= 0.7),
                      key=lambda hit: (-hit[1], str(hit[0])))[:CANDIDATES]

    def scaled(hits):
        if not hits:
            return {}
        low, high = min(s for _, s in hits), max(s for _, s in hits)
        return {i: (s - low) / (high - low) if high > low else 1.0 for i, s in hits}

    lex, sem = scaled(lexical), scaled(semantic)
    fused = {i: FUSION_ALPHA * lex.get(i, 0.0) + (1 - FUSION_ALPHA) * sem.get(i, 0.0)
             for i in set(lex) | set(sem)}
    return sorted(fused, key=lambda i: (-fused[i], str(i))), fused


def test_the_folded_ranking_is_the_arms_fused(owner, monkeypatch):
    rng = random.Random(7)
    table = {}
    for i in range(60):
        text = " ".join(rng.sample(WORDS, 4)) + f" note {i}"
        table[text] = unit(*[rng.random() for _ in range(6)])
        factories.note(owner, text)
    queries = {"glacier fjord": unit(1, 0.2, 0.1), "esker kettle drumlin": unit(0.1, 1, 0.5),
               "serac": unit(0.3, 0.3, 1, 0.2)}
    embedder = TableEmbedder({**table, **queries})
    use_embedder(monkeypatch, embedder)
    index_all(owner)
    for query, vector in queries.items():
        got = recall(actor=owner, query=query, limit=50, max_chars=50_000)
        with tenant(owner):
            expected, scores = _reference(owner, query, vector, embedder.profile)
        assert len(expected) > 20  # both arms found many: the order is a real test
        assert [item.note.id for item in got.data] == expected[:50], query
        for item in got.data:
            assert item.score == pytest.approx(scores[item.note.id], abs=1e-6)
        assert got.meta.mode == "hybrid"


def test_a_grant_of_nothing_recalls_nothing(owner, monkeypatch):
    use_embedder(monkeypatch, TableEmbedder({"glacier": unit(1)}))
    book = factories.notebook(owner, "Ice")
    factories.note(owner, "The glacier retreats.", notebook_id=book.id)
    factories.note(owner, "A glacier in Personal.")
    index_all(owner)
    _, nothing = new_key(owner, all_notebooks=False, notebooks=[], personal=False)
    result = recall(actor=nothing, query="glacier")
    assert (result.data, result.meta.available, result.meta.pending) == ([], 0, 0)
    _, personal = new_key(owner, all_notebooks=False, notebooks=[], personal=True)
    result = recall(actor=personal, query="glacier")
    assert [item.note.content for item in result.data] == ["A glacier in Personal."]


def test_notes_waiting_for_a_vector_are_counted_within_the_scope(owner, monkeypatch):
    use_embedder(monkeypatch, TableEmbedder({"glacier": unit(1)}))
    book = factories.notebook(owner, "Ice")
    factories.note(owner, "The glacier retreats.", notebook_id=book.id)
    index_all(owner)
    factories.note(owner, "A new glacier note.", notebook_id=book.id)
    factories.note(owner, "Another new one.", notebook_id=book.id)
    factories.note(owner, "Unembedded, in Personal.")
    _, key = new_key(owner, all_notebooks=False, notebooks=[book.id], personal=False)
    result = recall(actor=key, query="glacier")
    assert result.meta.pending == 2
    assert recall(actor=owner, query="glacier").meta.pending == 3
    # A note waiting for its vector is still found by the lexical arm.
    assert "A new glacier note." in [item.note.content for item in result.data]


def test_a_stale_vector_is_not_a_semantic_hit(owner, monkeypatch):
    use_embedder(monkeypatch, TableEmbedder({"zebra": unit(1), "A striped zebra.": unit(1)}))
    note = factories.note(owner, "A striped zebra.")
    index_all(owner)
    assert recall(actor=owner, query="zebra").data[0].matched == ["lexical", "semantic"]
    services.note_update(actor=owner, operation_id=op(), note_id=note.id,
                         content="A striped horse.", expected_version=1)
    # The old text's passage went with the edit, and its vector with it: no hit, and
    # nothing stale left to be one.
    with tenant(owner):
        assert not PassageVector.objects.filter(note_id=note.id).exists()
        assert list(Passage.objects.filter(note_id=note.id).values_list("text", flat=True)) \
            == ["A striped horse."]
    assert recall(actor=owner, query="zebra").data == []
