"""One reading of "what may this caller read here" (STYLE §13): every scoped read —
recall, the brief, library search, activity, a tidy-up's duplicate scan, Ask's
evidence, a new conversation — takes its place (everything, Personal, a notebook) and
include-personal through `resolve_scope`, so the same question gets the same answer
and the same refusal everywhere."""

from __future__ import annotations

import uuid

import pytest

from ask import services as ask_services
from grove.kernel.errors import Forbidden, NotFound
from notebooks import selectors
from notebooks.rules import EVERYWHERE
from notebooks.selectors.access import resolve_scope
from notebooks.selectors.activity import activity_list
from notebooks.selectors.brief import brief_get
from notebooks.selectors.duplicates import duplicate_groups
from notebooks.selectors.recall import recall
from notebooks.selectors.search import note_search
from tests import factories

pytestmark = pytest.mark.django_db

WORD = "heliotrope"


@pytest.fixture
def world():
    owner = factories.owner()
    granted = factories.notebook(owner, "Granted")
    other = factories.notebook(owner, "Other")
    notes = {
        "granted": factories.note(owner, f"{WORD} in granted", notebook_id=granted.id),
        "other": factories.note(owner, f"{WORD} in other", notebook_id=other.id),
        "personal": factories.note(owner, f"{WORD} in personal"),
    }
    no_personal = factories.connection(owner, notebooks=[granted.id])
    with_personal = factories.connection(owner, personal=True, notebooks=[granted.id])
    return owner, no_personal, with_personal, {"granted": granted, "other": other}, notes


def _ids(found) -> set[uuid.UUID]:
    return {uuid.UUID(str(i).split(":")[1].split("@")[0]) if ":" in str(i) else i
            for i in found}


# Each scoped read, called with a place and include-personal, answering the ids it found.
READS = {
    "recall": lambda actor, place, personal: {
        hit.note.id for hit in recall(actor=actor, query=WORD, place=place,
                                      include_personal=personal).data},
    "brief": lambda actor, place, personal: _ids(
        n.id for part in ("facts", "handoffs")
        for n in getattr(brief_get(actor=actor, notebook_id=place, include_personal=personal,
                                   format="json"), part) or []),
    "ask evidence": lambda actor, place, personal: {
        s.note.id for s in ask_services.ask(actor=actor, query=WORD, notebook_id=place,
                                            include_personal=personal, mode="search").sources},
}
# Reads whose place alone decides (no include-personal argument).
PLACE_READS = {
    "library search": lambda actor, place: {
        item.note.id for item in note_search(actor=actor, query=WORD,
                                             notebook_id=place).data},
    "activity": lambda actor, place: _ids(
        item.id for item in activity_list(actor=actor, notebook_id=place).data),
    "note list": lambda actor, place: {n.id for n in selectors.note_list(actor=actor,
                                                                         notebook_id=place)},
    "new conversation": lambda actor, place: ask_services.conversation_create(
        actor=actor, conversation_id=uuid.uuid4(), notebook_id=place)[0],
}
# Reads of one place only (never everything).
ONE_PLACE_READS = {
    "duplicate scan": lambda actor, place: duplicate_groups(actor=actor, notebook_id=place),
}


@pytest.mark.parametrize("read", [*READS, *PLACE_READS, *ONE_PLACE_READS])
def test_every_scoped_read_refuses_personal_outside_the_grant_the_same_way(world, read):
    _, no_personal, _, _, _ = world
    call = READS.get(read) or PLACE_READS.get(read) or ONE_PLACE_READS[read]
    with pytest.raises(Forbidden) as refused:
        call(no_personal, None, True) if read in READS else call(no_personal, None)
    assert refused.value.code == "personal_not_granted"


@pytest.mark.parametrize("read", [*READS, *PLACE_READS, *ONE_PLACE_READS])
def test_every_scoped_read_hides_a_notebook_outside_the_grant_the_same_way(world, read):
    _, no_personal, _, books, _ = world
    call = READS.get(read) or PLACE_READS.get(read) or ONE_PLACE_READS[read]
    with pytest.raises(NotFound) as hidden:
        (call(no_personal, books["other"].id, True) if read in READS
         else call(no_personal, books["other"].id))
    assert hidden.value.code == "notebook_not_found"


@pytest.mark.parametrize("read", list(READS))
def test_include_personal_means_the_same_in_every_read(world, read):
    _, _, with_personal, books, notes = world
    call = READS[read]
    everything = call(with_personal, EVERYWHERE, True)
    without_personal = call(with_personal, EVERYWHERE, False)
    assert notes["personal"].id in everything
    assert notes["granted"].id in everything
    assert notes["personal"].id not in without_personal  # the brief kept it before
    assert notes["granted"].id in without_personal
    assert notes["other"].id not in everything | without_personal
    assert call(with_personal, None, False) == {notes["personal"].id}


@pytest.mark.parametrize("read", list(PLACE_READS)[:3])
def test_everything_is_the_grant_and_a_notebook_is_that_notebook(world, read):
    _, _, with_personal, books, notes = world
    call = PLACE_READS[read]
    assert call(with_personal, EVERYWHERE) >= {notes["granted"].id, notes["personal"].id}
    assert notes["other"].id not in call(with_personal, EVERYWHERE)
    assert notes["personal"].id not in call(with_personal, books["granted"].id)


def test_the_scope_object_answers_what_it_covers(world):
    owner, no_personal, with_personal, books, _ = world
    with factories.tenant(with_personal):
        everything = resolve_scope(with_personal)
        assert everything.everywhere and everything.personal
        personal = resolve_scope(with_personal, None)
        assert personal.personal_only and personal.notebook is None
        one = resolve_scope(with_personal, books["granted"].id)
        assert one.notebook_ids == (books["granted"].id,) and not one.personal
        assert one.notebook is not None and one.notebook.id == books["granted"].id
        both = resolve_scope(with_personal, books["granted"].id, include_personal=True)
        assert both.personal and [p.notebook_ids for p in both.places()] == [
            (books["granted"].id,), ()]
    with factories.tenant(no_personal):
        # Asked for Personal beside everything, a grant without it simply leaves it out.
        assert not resolve_scope(no_personal, include_personal=True).personal
