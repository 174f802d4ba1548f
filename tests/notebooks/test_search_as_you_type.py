"""Search as you type (issue 20, SPEC §4/§11): the word being typed matches as a prefix,
a word matches its longer and shorter forms and, when the notes never use it, the
words it is a typo of; excerpts are text, not markdown; a query too common to rank is
shown newest first with a bounded count. The variants come from the caller's own
lexicon only, through a security-definer function."""

import pytest
from django.db import connection

from grove.kernel.tenancy import tenant
from notebooks import services
from notebooks.selectors import search
from notebooks.selectors.search import note_search
from notebooks.services.term_stats import term_stats_compact
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


def found(actor, query, **kwargs):
    return [item.note.content for item in note_search(actor=actor, query=query, **kwargs).data]


@pytest.fixture
def actor():
    return factories.owner()


def test_the_word_being_typed_matches_as_a_prefix(actor):
    factories.note(actor, "Shakshuka for Sunday breakfast")
    factories.note(actor, "We moved the job queue to PostgreSQL")
    factories.note(actor, "Bread and butter")
    for typed in ("s", "sh", "shak", "shaksh", "shakshuk"):
        assert "Shakshuka for Sunday breakfast" in found(actor, typed), typed
    for typed in ("p", "po", "pos", "post", "postg", "postgre", "postgresq"):
        assert found(actor, typed) == ["We moved the job queue to PostgreSQL"], typed
    # A space after the word says it is complete: no longer a prefix.
    assert found(actor, "postg ") == []
    assert found(actor, "breakfast  ") == ["Shakshuka for Sunday breakfast"]
    # Earlier words are complete words; only the last one is being typed.
    assert found(actor, "sunday shaksh") == ["Shakshuka for Sunday breakfast"]
    assert found(actor, "monday shakshuka") == []


def test_a_word_matches_its_longer_and_shorter_forms(actor):
    short = factories.note(actor, "Postgres runs the queue")
    long = factories.note(actor, "PostgreSQL 17 tuning notes")
    term_stats_compact(actor=actor)
    for query in ("postgres ", "postgresql ", "Postgres", "POSTGRESQL"):
        assert set(found(actor, query)) == {short.content, long.content}, query
    # The word itself ranks before a form of it.
    assert found(actor, "postgres ")[0] == short.content
    assert found(actor, "postgresql ")[0] == long.content


def test_typos_of_words_the_notes_use(actor):
    factories.note(actor, "Shakshuka with feta")
    factories.note(actor, "Whey protein after breakfast")
    factories.note(actor, "Atrial fibrillation follow-up")
    # Not compacted yet: the lexicon includes what writes appended a moment ago.
    for typo, meant in (("shakshuak ", "Shakshuka with feta"),
                        ("protien ", "Whey protein after breakfast"),
                        ("brekfast ", "Whey protein after breakfast")):
        assert found(actor, typo) == [meant], typo
    term_stats_compact(actor=actor)
    assert found(actor, "protien ") == ["Whey protein after breakfast"]
    # A word the notes do use is not widened to every word that looks like it.
    factories.note(actor, "The trial starts Monday")
    assert found(actor, "trial ") == ["The trial starts Monday"]
    # Nothing like it anywhere: nothing, not filler.
    assert found(actor, "zeppelin ") == []


def test_search_operators_mean_what_they_say(actor):
    factories.note(actor, "red apples and green pears")
    factories.note(actor, "green apples")
    assert found(actor, '"green pears"') == ["red apples and green pears"]
    assert found(actor, "apples -red") == ["green apples"]
    assert set(found(actor, "pears or green")) == {"red apples and green pears", "green apples"}
    # Operators turn prefixes off: "pea" is not "pears" being typed.
    assert found(actor, '"green pea"') == []
    assert found(actor, "green pea") == ["red apples and green pears"]


def test_stop_words_alone_match_nothing_but_a_typed_one_is_a_prefix(actor):
    factories.note(actor, "Theory of everything")
    assert found(actor, "the ") == []
    assert found(actor, "the") == ["Theory of everything"]
    assert found(actor, "the theory") == ["Theory of everything"]


def test_excerpts_are_text_not_markdown(actor):
    factories.note(actor, "# Launch plan\n\n## Rollout\n\n| Phase | Owner |\n|---|---|\n"
                   "| Canary | **Ana** |\n\n- [ ] tell the [support team](https://example.com)\n"
                   "> `rollout` is gradual")
    [item] = note_search(actor=actor, query="rollout", matches=True).data
    snippet = item.matches.snippet
    assert "«Rollout»" in snippet and "«rollout»" in snippet
    assert "Canary" in snippet and "Ana" in snippet and "support team" in snippet
    for mark in ("#", "|", "---", "**", "[ ]", "](", "https://", "`", ">"):
        assert mark not in snippet, mark
    assert item.matches.terms == ["rollout"]


def test_matched_terms_name_the_forms_that_matched(actor):
    factories.note(actor, "PostgreSQL replication lag")
    [item] = note_search(actor=actor, query="postg", matches=True).data
    assert item.matches.terms == ["postgresql"]
    assert "«PostgreSQL»" in item.matches.snippet


def test_a_query_too_common_to_rank_is_newest_first_and_counted_up_to_a_bound(
        actor, monkeypatch):
    monkeypatch.setattr(search, "SEARCH_RANK_MAX", 3)
    notes = [factories.note(actor, f"walnut note {'walnut ' * i}") for i in range(6)]
    factories.note(actor, "pecan")
    exact = note_search(actor=actor, query="walnut", limit=4)
    assert exact.sort == "updated_desc" and not exact.lower_bound
    assert exact.meta.available == 6  # the API counts every match
    assert [i.note.id for i in exact.data] == [n.id for n in reversed(notes)][:4]
    bounded = note_search(actor=actor, query="walnut", limit=4, exact_count=False)
    # At least the 4 on the page and one after it (the index's first 3 + 1 are fewer).
    assert bounded.lower_bound and bounded.meta.available == 5
    # The cursor keeps the order the first page chose, whatever the count does since.
    second = note_search(actor=actor, query="walnut", limit=4,
                         cursor=exact.meta.next_cursor)
    assert [i.note.id for i in second.data] == [notes[1].id, notes[0].id]
    assert second.sort == "updated_desc"
    # A rare query is ranked: the note with the most walnuts first.
    monkeypatch.setattr(search, "SEARCH_RANK_MAX", 100)
    ranked = note_search(actor=actor, query="walnut", limit=4)
    assert ranked.sort == "relevance" and ranked.data[0].note.id == notes[-1].id
    # An explicit order is kept either way.
    monkeypatch.setattr(search, "SEARCH_RANK_MAX", 3)
    oldest = note_search(actor=actor, query="walnut", sort="updated_asc", limit=2)
    assert oldest.sort == "updated_asc"
    assert [i.note.id for i in oldest.data] == [notes[0].id, notes[1].id]


def test_the_common_query_path_still_honours_grants_and_status(monkeypatch):
    monkeypatch.setattr(search, "SEARCH_RANK_MAX", 1)
    owner = factories.owner()
    shared = factories.notebook(owner, "Shared")
    hidden = factories.notebook(owner, "Hidden")
    for place in (shared, hidden):
        for i in range(3):
            factories.note(owner, f"walnut {place.name} {i}", notebook_id=place.id)
    archived = factories.note(owner, "walnut archived", notebook_id=shared.id)
    services.note_archive(actor=owner, operation_id=op(), items=[archived.id])
    agent = factories.connection(owner, notebooks=[shared.id])
    for exact_count in (True, False):
        page = note_search(actor=agent, query="walnu", exact_count=exact_count)
        assert page.sort == "updated_desc"
        assert sorted(i.note.content for i in page.data) == [
            "walnut Shared 0", "walnut Shared 1", "walnut Shared 2"]
        assert page.meta.available <= 3
    assert note_search(actor=agent, query="walnu").meta.available == 3


def test_variants_come_from_the_callers_own_lexicon_only():
    alice, bob = factories.owner("alice"), factories.owner("bob")
    factories.note(bob, "Quetzalcoatl guards the secret")
    factories.note(alice, "Nothing of interest")
    term_stats_compact(actor=bob)
    assert found(bob, "quetzalcoatk ") == ["Quetzalcoatl guards the secret"]
    assert found(alice, "quetzalcoatk ") == []
    call = "SELECT grove_search_variants('quetzalcoatk', 'quetzalcoatk', 0.45, 10)"
    with connection.cursor() as cursor:
        cursor.execute(call)
        assert cursor.fetchall() == []  # no tenant: nothing
    with tenant(alice), connection.cursor() as cursor:
        cursor.execute(call)
        assert cursor.fetchall() == []
    with tenant(bob), connection.cursor() as cursor:
        cursor.execute(call)
        assert cursor.fetchall() == [("quetzalcoatl",)]


@pytest.mark.parametrize("signature", ["grove_search_variants(text, text, float8, integer)",
                                       "grove_search_matches(tsquery, integer)",
                                       "grove_lookup_matches(tsquery)",
                                       "grove_lookup_matches(tsquery, integer)"])
def test_the_new_functions_are_not_executable_by_public(signature):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.grantee FROM pg_proc p, aclexplode(p.proacl) a "
            "WHERE p.oid = to_regprocedure(%s)", [signature])
        grantees = {row[0] for row in cursor.fetchall()}
        cursor.execute("SELECT oid FROM pg_roles WHERE rolname = current_user")
        runtime = cursor.fetchone()[0]
    assert runtime in grantees and 0 not in grantees  # 0 = PUBLIC


# -- every prefix finds the note (issue 36 item 3.2) -----------------------------------------

PLACES = ("Staging deploy of pg-prod-3 on 2026-12-01 by runner ci-1, from Belém "
          "(and “Zürich”: Привет!)")
# What a person types, letter by letter: dates and hyphenated identifiers (which the
# text search parser splits into signed numbers), a word whose stem is shorter than its
# prefixes ("staging" is `stage`), accents typed without them or with them, another
# script's capitals typed in lower case, and the second word of a query.
TYPED = ["2026-12-01", "pg-prod-3", "ci-1", "staging", "belem", "Belém", "zurich",
         "Zürich", "привет", "deploy 2026-12-01", "staging pg-prod-3"]


@pytest.fixture
def places(actor):
    note = factories.note(actor, PLACES)
    factories.note(actor, "Production deploy on 2025-01-02 by runner ci-2 in Lisbon")
    return note


@pytest.mark.parametrize("typed", TYPED)
def test_every_prefix_of_what_is_typed_finds_the_note(actor, places, typed):
    missed = [typed[:n] for n in range(1, len(typed) + 1)
              if places.id not in {i.note.id for i in note_search(
                  actor=actor, query=typed[:n], limit=100).data}]
    assert missed == []
    # The word complete (a space after it) finds it too, and only it.
    assert [i.note.id for i in note_search(actor=actor, query=typed + " ").data] \
        == [places.id]


@pytest.mark.parametrize("typed", TYPED)
def test_every_prefix_finds_the_note_over_rest(actor, places, typed):
    from django.test import Client

    from tests.api.conftest import Caller, new_key

    key, _ = new_key(actor)
    api = Caller(Client(), key)
    for n in range(1, len(typed) + 1):
        response = api.post("/notes/search", {"query": typed[:n], "limit": 100})
        assert response.status_code == 200, response.content
        assert str(places.id) in {item["note"]["id"] for item in response.json()["data"]}, \
            typed[:n]
    complete = api.post("/notes/search", {"query": typed + " "}).json()["data"]
    assert [item["note"]["id"] for item in complete] == [str(places.id)]


def test_what_typing_matched_is_marked_in_the_excerpt(actor, places):
    [item] = note_search(actor=actor, query="belem ", matches=True).data
    assert "«Belém»" in item.matches.snippet
    assert "belem" in item.matches.terms


def test_a_date_or_an_id_is_its_pieces_in_order(actor):
    """The pieces of one run of text ("2026-12-01", "pg-prod-3") stand side by side, in
    their order: not any note holding the same numbers in another arrangement."""
    day = factories.note(actor, "Deployed on 2026-12-01 to pg-prod-3.")
    other = factories.note(actor, "Deployed on 2026-01-12 to pg-3-prod.")
    for typed, hit in (("2026-12-01", day), ("2026-01-12", other), ("pg-prod-3", day),
                       ("pg-3-prod", other), ("deployed 2026-12-01", day),
                       ("2026-12-01 pg-prod-3", day)):
        for query in (typed, typed + " "):
            assert [i.note.id for i in note_search(actor=actor, query=query).data] == \
                [hit.id], query
    # Words typed apart still match in any order; a stop word inside a run keeps its
    # place ("state-of-the-art" is state, then art three words on).
    assert {i.note.id for i in note_search(actor=actor, query="12 2026 ").data} == \
        {day.id, other.id}
    art = factories.note(actor, "A state-of-the-art runner, and the art of state.")
    factories.note(actor, "The art of the state.")
    assert [i.note.id for i in note_search(actor=actor, query="state-of-the-art ").data] \
        == [art.id]
