"""Recall's lexical arm runs in a security-definer function (migration notebooks 0007)
so the GIN index is usable under row-level security. It applies the account rule and
the live-note conditions itself, so these tests hold it to the selectors' answer for
every note state and scope, and check it cannot reach past the tenant setting."""

import re
from datetime import timedelta

import pytest
from django.contrib.postgres.search import SearchQuery
from django.db import connection
from django.utils import timezone

from grove.runtime.dbroles import DEFINER_FUNCTIONS
from notebooks import services
from notebooks.models import Note
from notebooks.selectors.access import Scope
from notebooks.selectors.recall import (
    BM25_B,
    BM25_K1,
    Searched,
    Weights,
    _lexeme_counts,
    _lexical,
)
from notebooks.selectors.recall_query import clause_query
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db

WORDS = ("glacier", "morain")  # the english stems of "glacier moraine"


def reference(scope: Searched, weights: Weights) -> dict:
    """The same ranking computed through the ORM and `live_filter`: the notes containing
    a selecting clause, each scored with BM25 over every term it contains — the term's
    count and the note's distinct lexemes read from its `search` vector's text."""
    selected = set()
    for clause in weights.selecting():
        query = SearchQuery(clause_query(clause), search_type="raw", config="simple")
        selected |= set(scope.notes().filter(search=query).values_list("id", flat=True))
    scores = {}
    for note_id, vector in scope.notes().filter(id__in=selected).values_list("id", "search"):
        counts = {m.group(1): len(m.group(2).split(","))
                  for m in re.finditer(r"'([^']+)':([0-9,]+)", vector)}
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(counts) / weights.avgdl)
        scores[note_id] = sum(weight * counts[lexeme] * (BM25_K1 + 1)
                              / (counts[lexeme] + norm)
                              for lexeme, weight in weights.terms.items() if lexeme in counts)
    return scores


@pytest.fixture
def world():
    """One account's notes in every state, plus another account's matching note."""
    actor = factories.owner()
    live_book = factories.notebook(actor, "Live")
    other_book = factories.notebook(actor, "Other")
    child = factories.notebook(actor, "Child", parent=live_book.id)
    shelved = factories.notebook(actor, "Shelved")
    doomed = factories.notebook(actor, "Doomed")
    notes = {
        "personal": factories.note(actor, "glacier moraine in Personal"),
        "live": factories.note(actor, "glacier moraine", notebook_id=live_book.id),
        "one word": factories.note(actor, "a glacier only", notebook_id=live_book.id),
        "other": factories.note(actor, "moraine elsewhere", notebook_id=other_book.id),
        "child": factories.note(actor, "glacier in a child", notebook_id=child.id),
        "archived": factories.note(actor, "glacier archived", notebook_id=live_book.id),
        "deleted": factories.note(actor, "glacier deleted", notebook_id=live_book.id),
        "expired": factories.note(actor, "glacier expired", notebook_id=live_book.id,
                                  retention_days=1),
        "shelved": factories.note(actor, "glacier shelved", notebook_id=shelved.id),
        "doomed": factories.note(actor, "glacier doomed", notebook_id=doomed.id),
        "unrelated": factories.note(actor, "tidal flats", notebook_id=live_book.id),
    }
    services.note_archive(actor=actor, operation_id=op(), items=[notes["archived"].id])
    services.note_forget(actor=actor, operation_id=op(), items=[notes["deleted"].id])
    services.notebook_archive(actor=actor, operation_id=op(), notebook_id=shelved.id)
    services.notebook_delete(actor=actor, operation_id=op(), notebook_id=doomed.id)
    with factories.tenant(actor):
        # Past expiry but not yet swept by the expire job: still not live.
        Note.objects.filter(id=notes["expired"].id).update(
            expires_at=timezone.now() - timedelta(minutes=1))
    stranger = factories.owner()
    factories.note(stranger, "glacier moraine of a stranger")
    return actor, notes, {"live": live_book, "other": other_book, "child": child,
                          "shelved": shelved}


def scopes(actor, books):
    key_live = factories.connection(actor, notebooks=[books["live"].id])
    key_personal = factories.connection(actor, personal=True, notebooks=[books["child"].id])
    key_all = factories.connection(actor, all_notebooks=True)
    def scope(who, notebooks, personal):
        return Searched(Scope(actor=who, notebook_ids=notebooks, personal=personal))

    yield "owner, everything", scope(actor, None, True)
    yield "owner, notebooks only", scope(actor, None, False)
    yield "owner, one notebook", scope(actor, (books["live"].id,), False)
    yield "owner, archived notebook", scope(actor, (books["shelved"].id,), False)
    yield "key granted one notebook", scope(key_live, None, False)
    yield "key with Personal", scope(key_personal, None, True)
    yield "key with all notebooks", scope(key_all, None, False)


def test_lexical_arm_matches_the_selectors_for_every_state_and_scope(world):
    actor, notes, books = world
    with factories.tenant(actor):
        assert sorted(_lexeme_counts("glacier moraine")[0]) == sorted(WORDS)
    checked = 0
    for label, scope, weights in [
        (f"{label}, {how}", scope, weights)
        for label, scope in scopes(actor, books)
        for how, weights in (
            ("both terms select", Weights(terms={"glacier": 2.0, "morain": 0.5})),
            ("only the rarer selects", Weights(terms={"morain": 2.0, "glacier": 0.5},
                                               clauses=(("morain",),))),
        )
    ]:
        with factories.tenant(scope.scope.actor):
            expected = reference(scope, weights)
            ranked, total = _lexical(weights, scope)
        assert {i: s for i, s in ranked} == pytest.approx(expected), label
        assert total == len(expected), label
        scores = [s for _, s in ranked]
        assert scores == sorted(scores, reverse=True), label
        checked += len(expected)
    # The owner's full scope sees exactly the live notes that match.
    weights = Weights(terms={"glacier": 2.0, "morain": 0.5})
    with factories.tenant(actor):
        owner_scope = Searched(Scope(actor=actor, notebook_ids=None, personal=True))
        everything, _ = _lexical(weights, owner_scope)
        rare_only, _ = _lexical(
            Weights(terms={"morain": 2.0, "glacier": 0.5}, clauses=(("morain",),)),
            owner_scope)
    names = {n.id: name for name, n in notes.items()}
    assert {names[i] for i, _ in everything} == {"personal", "live", "one word", "other",
                                                 "child"}
    # Only notes with the distinctive word match; the common word adds to their score.
    rare = {names[i]: s for i, s in rare_only}
    assert set(rare) == {"personal", "live", "other"}
    assert rare["live"] > rare["other"] and rare["personal"] > rare["other"]
    assert checked > 10


LEXICAL_MATCHES = next(f for f in DEFINER_FUNCTIONS if f.startswith("grove_lexical_matches("))
CALL = ("SELECT count(*) FROM grove_lexical_matches(ARRAY['glacier'::tsquery], "
        "ARRAY[1.0::float8], ARRAY['glacier'], ARRAY[1.0::float8], ARRAY[]::uuid[], true, "
        "200, 50, 2000, NULL, NULL, NULL, false, 0.9, 0.5, 2.0)")


def test_lexical_function_sees_nothing_without_a_tenant():
    actor = factories.owner()
    factories.note(actor, "glacier moraine")
    with connection.cursor() as cursor:
        cursor.execute(CALL)
        assert cursor.fetchone()[0] == 0
    with factories.tenant(actor), connection.cursor() as cursor:
        cursor.execute(CALL)
        assert cursor.fetchone()[0] == 1


def test_lexical_function_is_not_executable_by_public():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.grantee, a.privilege_type FROM pg_proc p, aclexplode(p.proacl) a "
            "WHERE p.oid = to_regprocedure(%s)", [LEXICAL_MATCHES])
        grantees = {row[0] for row in cursor.fetchall()}
        cursor.execute("SELECT oid FROM pg_roles WHERE rolname = current_user")
        runtime = cursor.fetchone()[0]
    assert runtime in grantees
    assert 0 not in grantees  # 0 = PUBLIC
