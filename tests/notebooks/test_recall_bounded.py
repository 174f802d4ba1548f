"""Recall's lexical arm reads a bounded number of matches whatever the corpus size
(issue 21, migration notebooks 0027): the clauses that select matches are chosen from
the term statistics to fit `MATCH_BUDGET` notes (`recall_terms.choose_clauses`), and the
arm reads at most `MATCH_BUDGET` + 1 matches of any clause — saying so
(`meta.availableAtLeast`, `truncated`) when a clause had more."""

import pytest
from django.db import connection

from notebooks.selectors import recall as recall_module
from notebooks.selectors.access import Scope
from notebooks.selectors.recall import Searched, _lexical, recall, term_weights
from notebooks.selectors.recall_terms import Weights, choose_clauses
from tests import factories

RULE = {"distinctive_share": 0.01, "min_distinctive": 2, "pair_terms": 4}


# -- the rule ------------------------------------------------------------------------------


def test_rare_terms_select_alone_rarest_first_while_their_notes_fit_the_budget():
    ranked = [("morain", 40), ("fjord", 300), ("glacier", 900), ("ice", 5000)]
    # 40 + 300 fit 1,000; glacier would make 1,240.
    assert choose_clauses(ranked, total=100_000, budget=1000, **RULE) == (
        ("morain",), ("fjord",))
    # A bigger budget takes glacier too; ice is not distinctive (5 % of the notes).
    assert choose_clauses(ranked, total=100_000, budget=10_000, **RULE) == (
        ("morain",), ("fjord",), ("glacier",))


def test_the_two_rarest_select_even_when_common_if_they_fit():
    ranked = [("cell", 400), ("protein", 700), ("human", 900)]
    # 40 % and 70 % of 1,000 notes: not distinctive, but the two rarest are.
    assert choose_clauses(ranked, total=1000, budget=2000, **RULE) == (
        ("cell",), ("protein",))


def test_when_the_rarest_term_is_too_common_a_note_must_hold_two_of_the_rarest_four():
    ranked = [("cell", 3000), ("protein", 4000), ("human", 5000), ("gene", 6000),
              ("blood", 7000)]
    clauses = choose_clauses(ranked, total=1_000_000, budget=2000, **RULE)
    assert clauses == (("cell", "protein"), ("cell", "human"), ("cell", "gene"),
                       ("protein", "human"), ("protein", "gene"), ("human", "gene"))


def test_a_single_common_term_still_selects_and_no_term_selects_nothing():
    assert choose_clauses([("cell", 50_000)], total=1_000_000, budget=2000,
                          **RULE) == (("cell",),)
    assert choose_clauses([], total=1_000_000, budget=2000, **RULE) == ()


def test_single_terms_read_the_whole_budget_and_pairs_share_it():
    singles = Weights(terms={"a": 1.0, "b": 1.0}, clauses=(("a",), ("b",)))
    pairs = Weights(terms={"a": 1.0, "b": 1.0, "c": 1.0},
                    clauses=(("a", "b"), ("a", "c"), ("b", "c")))
    assert singles.read_cap(2000) == 2000 and pairs.read_cap(2000) == 666
    assert pairs.read_cap(2) == 1  # never nothing


def test_a_clause_weighs_its_terms_idf_sum_and_selects_notes_holding_all_of_it():
    weights = Weights(terms={"cell": 2.0, "protein": 1.5, "gene": 1.0},
                      clauses=(("cell", "protein"), ("gene",)))
    assert weights.weight(("cell", "protein")) == 3.5
    assert weights.selects({"cell", "protein", "other"})
    assert weights.selects({"gene"})
    assert not weights.selects({"cell", "other"})


# -- through the database ------------------------------------------------------------------


@pytest.fixture
def owner(db):
    return factories.owner()


@pytest.mark.django_db
def test_the_budget_chooses_the_clauses_from_the_statistics(owner, monkeypatch):
    monkeypatch.setattr(recall_module, "MATCH_BUDGET", 3)
    for i in range(6):
        factories.note(owner, f"Glacier survey number {i}.")
    factories.note(owner, "A glacier leaves a moraine.")
    factories.note(owner, "The moraine was mapped.")
    with factories.tenant(owner):
        weights = term_weights("glacier moraine")
    # Two notes hold "moraine" (fits 3); seven hold "glacier" (does not).
    assert weights.selecting() == [("morain",)]
    assert set(weights.terms) == {"morain", "glacier"}  # both still score


@pytest.mark.django_db
def test_pairs_keep_the_notes_holding_two_of_the_rarest_words(owner, monkeypatch):
    # Each word is in 7 notes, more than 6: pairs, each read up to 6 // 3 = 2 (+ 1).
    monkeypatch.setattr(recall_module, "MATCH_BUDGET", 6)
    both = {factories.note(owner, f"Alpine glacier {i} above the fjord.").id for i in range(2)}
    for i in range(5):
        factories.note(owner, f"Alpine meadow {i}.")
        factories.note(owner, f"Fjord ferry {i}.")
        factories.note(owner, f"Glacier walk {i}.")
    for i in range(25):  # so that each word is in at most a fifth of the notes (kept)
        factories.note(owner, f"Tidal flats {i}.")
    with factories.tenant(owner):
        weights = term_weights("alpine fjord glacier")
    assert weights.selecting() == [("alpin", "fjord"), ("alpin", "glacier"), ("fjord", "glacier")]
    assert weights.read_cap(6) == 2
    result = recall(actor=owner, query="alpine fjord glacier")
    assert {item.note.id for item in result.data} == both
    assert result.meta.available == 2 and result.meta.available_at_least is None
    assert not result.meta.truncated
    # Pairs share the budget: with 3, each pair is read to 1 (+ 1) — both of its two
    # matches, and more are not known to be absent: a lower bound.
    monkeypatch.setattr(recall_module, "MATCH_BUDGET", 3)
    shared = recall(actor=owner, query="alpine fjord glacier")
    assert shared.meta.available == 2 and shared.meta.available_at_least is True


@pytest.mark.django_db
def test_a_clause_with_more_matches_than_the_arm_reads_says_the_count_is_a_lower_bound(
        owner, monkeypatch):
    monkeypatch.setattr(recall_module, "MATCH_BUDGET", 3)
    for i in range(7):
        factories.note(owner, f"Glacier survey number {i}.")
    result = recall(actor=owner, query="glacier", limit=10)
    # The arm read budget + 1 = 4 of the 7 matches.
    assert len(result.data) == 4
    assert result.meta.available == 4 and result.meta.available_at_least is True
    assert result.meta.truncated  # there is more than this answer
    body = result.model_dump(mode="json", by_alias=True)["meta"]
    assert body["availableAtLeast"] is True and body["available"] == 4
    # Under the budget the count is exact and the flag is left out.
    monkeypatch.setattr(recall_module, "MATCH_BUDGET", 10)
    exact = recall(actor=owner, query="glacier", limit=10)
    assert exact.meta.available == 7 and not exact.meta.truncated
    assert "availableAtLeast" not in exact.model_dump(mode="json", by_alias=True)["meta"]


@pytest.mark.django_db
def test_the_cap_applies_within_the_grant(owner, monkeypatch):
    """The read limit counts only notes the caller may see: a key granted one notebook
    gets every match there, however many the owner's other notebooks hold."""
    monkeypatch.setattr(recall_module, "MATCH_BUDGET", 3)
    granted = factories.notebook(owner, "Granted")
    other = factories.notebook(owner, "Other")
    for i in range(8):
        factories.note(owner, f"Glacier elsewhere {i}.", notebook_id=other.id)
    mine = {factories.note(owner, f"Glacier here {i}.", notebook_id=granted.id).id
            for i in range(3)}
    key = factories.connection(owner, notebooks=[granted.id])
    result = recall(actor=key, query="glacier", limit=10)
    assert {item.note.id for item in result.data} == mine
    assert result.meta.available == 3 and result.meta.available_at_least is None


@pytest.mark.django_db
def test_the_function_reads_at_most_cap_plus_one_matches_per_clause(owner):
    for i in range(9):
        factories.note(owner, f"Glacier {i}.")
    for i in range(2):
        factories.note(owner, f"Moraine {i}.")
    call = ("SELECT DISTINCT total, capped FROM grove_lexical_matches(%s::tsquery[], "
            "%s::float8[], ARRAY['glacier', 'morain'], ARRAY[1.0, 1.0]::float8[], "
            "ARRAY[]::uuid[], true, 200, 50, %s, NULL, NULL, NULL, false, 0.9, 0.5, 2.0)")
    with factories.tenant(owner), connection.cursor() as cursor:
        cursor.execute(call, [["glacier", "morain"], [1.0, 2.0], 4])
        assert cursor.fetchall() == [(5 + 2, True)]
        cursor.execute(call, [["glacier", "morain"], [1.0, 2.0], 9])
        assert cursor.fetchall() == [(9 + 2, False)]
        cursor.execute(call, [["morain"], [2.0], 1])
        assert cursor.fetchall() == [(2, True)]


@pytest.mark.django_db
def test_the_lexical_arm_alone_agrees_with_recall_under_the_budget(owner, monkeypatch):
    monkeypatch.setattr(recall_module, "MATCH_BUDGET", 3)
    for i in range(6):
        factories.note(owner, f"Glacier survey number {i}.")
    moraines = {factories.note(owner, f"A glacier and its moraine {i}.").id for i in range(2)}
    with factories.tenant(owner):
        weights = term_weights("glacier moraine")
        everything = Searched(Scope(actor=owner, notebook_ids=None, personal=True))
        ranked, total = _lexical(weights, everything)
    assert {i for i, _ in ranked} == moraines and total == 2
