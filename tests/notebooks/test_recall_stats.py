"""The lexical arm weighs query words by rarity from the account's term statistics: a
word in most notes carries no signal and does not turn every note into a match."""

import pytest

from grove import jobs
from notebooks.indexing import EMBED
from notebooks.recall import recall, term_weights
from notebooks.services import term_stats_refresh
from tests import factories

pytestmark = pytest.mark.django_db


def test_common_words_are_dropped_and_rare_words_weigh_more():
    actor = factories.owner()
    for i in range(40):
        factories.note(actor, f"Project status report number {i}")
    budget = factories.note(actor, "Project budget approved for the quarter")
    while jobs.run_batch(account_id=actor.account_id, kind=EMBED):
        pass
    assert term_stats_refresh(actor=factories.Actor.system(actor.account_id)) == 41
    with factories.tenant(actor):
        weights = term_weights("project budget")
        assert set(weights.terms) == {"budget"}  # "project" is in every note
        only_common = term_weights("project status")
    assert len(only_common.terms) == 2  # all common: the rarest two are kept
    result = recall(actor=actor, query="project budget")
    assert result.data[0].note.id == budget.id
    lexical = [i for i in result.data if "lexical" in i.matched]
    assert [i.note.id for i in lexical] == [budget.id]
    # Statistics are per account.
    other = factories.owner()
    assert term_stats_refresh(actor=factories.Actor.system(other.account_id)) == 0
