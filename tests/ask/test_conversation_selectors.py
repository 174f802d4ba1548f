"""Conversation reads (`ask.selectors`): history search and the history list, paging
stable under deletion; what the Ask pages read (picked notes, the cited notes whose text
changed since, a conversation's page), grant-scoped."""

from __future__ import annotations

import json
import uuid

import pytest

from ask.rules import CONTEXT_NOTES_MAX
from ask.selectors import (
    conversation_get,
    conversation_list,
    conversation_page,
    conversation_search,
    notes_picked,
    source_choices,
)
from ask.services import conversation_delete
from grove.kernel.errors import Invalid, NotFound
from notebooks import services as notes
from tests import factories
from tests.api.conftest import new_key
from tests.ask.helpers import generate, start, submit
from tests.ask.test_ask import answer, index_all

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_clean_vector_index")]


def test_history_search_paging_is_stable_when_the_last_row_is_deleted(owner):
    made = []
    for i in range(65):
        made.append(start(owner, title=f"Trip plan {i}" if i % 2 else f"Budget {i}"))
    asked = made[0]  # "Budget 0", found by its question instead
    submit(owner, asked, "What should we pack for the TRIP?", version=0)
    trips = sorted([c for c in made if c.title.startswith("Trip") or c.id == asked.id],
                   key=lambda c: (c.created_at, c.id), reverse=True)
    assert len(trips) == 33
    first, cursor, total = conversation_search(actor=owner, query="trip")
    assert total == 33 and [c.id for c in first] == [c.id for c in trips[:30]]
    conversation_delete(actor=owner, conversation_id=first[-1].id)
    second, cursor2, _ = conversation_search(actor=owner, query="trip", cursor=cursor)
    assert [c.id for c in second] == [c.id for c in trips[30:]] and cursor2 is None
    found = {c.id: c for c in first + second}
    assert found[asked.id].matched_question == "What should we pack for the TRIP?"
    payload = json.dumps([c.to_json() for c in first + second])
    assert "blocks" not in payload and "sources" not in payload
    with pytest.raises(Invalid) as other_query:
        conversation_search(actor=owner, query="budget", cursor=cursor)
    assert other_query.value.code == "cursor_mismatch"
    with pytest.raises(Invalid) as foreign:
        conversation_search(actor=factories.owner(), query="trip", cursor=cursor)
    assert foreign.value.code == "invalid_cursor"
    with pytest.raises(Invalid):
        conversation_search(actor=owner, query="x" * 201)
    everything, _, total_all = conversation_search(actor=owner)
    assert total_all == 64 and len(everything) == 30  # one was deleted


def test_the_history_list_pages_past_a_deleted_row(owner):
    made = [start(owner, title=f"Conversation {i}") for i in range(35)]
    newest_first = sorted(made, key=lambda c: (c.created_at, c.id), reverse=True)
    page, after, total = conversation_list(actor=owner)
    assert total == 35 and [c.id for c in page] == [c.id for c in newest_first[:30]]
    conversation_delete(actor=owner, conversation_id=after)
    rest, more, _ = conversation_list(actor=owner, after=after)
    assert [c.id for c in rest] == [c.id for c in newest_first[30:]] and more is None
    with pytest.raises(NotFound):
        conversation_get(actor=owner, conversation_id=after)


def test_picked_notes_are_grant_scoped(owner):
    shared = factories.notebook(owner, "Shared")
    private = factories.notebook(owner, "Private")
    mine = factories.note(owner, "Mine.", notebook_id=shared.id)
    secret = factories.note(owner, "Secret.", notebook_id=private.id)
    gone = factories.note(owner, "Gone.", notebook_id=shared.id)
    notes.note_forget(actor=owner, operation_id=uuid.uuid4(), items=[{"id": gone.id}])
    theirs = factories.note(factories.owner(), "Theirs.")
    _, agent = new_key(owner, all_notebooks=False, personal=False, notebooks=[shared.id])
    asked = [str(secret.id), "not-a-uuid", str(theirs.id), str(gone.id), str(mine.id)]
    assert [n.id for n in notes_picked(actor=agent, note_ids=asked)] == [mine.id]
    assert [n.id for n in notes_picked(actor=owner, note_ids=asked)] == [secret.id, mine.id]
    assert notes_picked(actor=owner, note_ids=[]) == []
    # At most a selection's worth of ids is read.
    many = [str(uuid.uuid4()) for _ in range(CONTEXT_NOTES_MAX)] + [str(mine.id)]
    assert notes_picked(actor=owner, note_ids=many) == []


def test_source_choices_are_the_picked_then_the_rest_that_match(owner):
    picked = factories.note(owner, "Packing list for the Lisbon trip.")
    other = factories.note(owner, "Lisbon restaurants to try.")
    factories.note(owner, "Groceries.")
    factories.note(factories.owner(), "Lisbon, someone else's.")
    chosen, matches = source_choices(actor=owner, note_ids=[str(picked.id)], find="Lisbon",
                                     limit=10)
    assert [n.id for n in chosen] == [picked.id] and [n.id for n in matches] == [other.id]
    assert source_choices(actor=owner, note_ids=[], find="", limit=10) == ([], [])


def test_conversation_page_reads_what_changed_and_the_last_selection(owner, provider):
    cited = factories.note(owner, "The boiler is serviced every October.")
    index_all(owner)
    conversation = start(owner)
    provider.chat_replies = [answer("answered", ("October.", [f"note:{cited.id}@1"]))]
    submit(owner, conversation, "When is the boiler serviced?")
    generate(owner)

    def changed() -> list[tuple]:
        page = conversation_page(actor=owner, conversation_id=conversation.id)
        return [(c.note_id, c.cited_version, c.version)
                for t in page.detail.turns for c in t.sources_changed]

    page = conversation_page(actor=owner, conversation_id=conversation.id)
    assert page.detail == conversation_get(actor=owner, conversation_id=conversation.id)
    assert changed() == [] and page.picked == []
    notes.note_update(actor=owner, operation_id=uuid.uuid4(), note_id=cited.id,
                      content="The boiler is serviced every November.")
    picked = factories.note(owner, "The boiler's manual is in the loft.")
    submit(owner, conversation, "Where is the manual?",
           context={"notes": [str(picked.id)], "only": True})
    page = conversation_page(actor=owner, conversation_id=conversation.id)
    assert changed() == [(cited.id, 1, 2)]  # the second turn is pending: no sources yet
    assert [n.id for n in page.picked] == [picked.id]
    notes.note_forget(actor=owner, operation_id=uuid.uuid4(), items=[{"id": cited.id}])
    assert changed() == [(cited.id, 1, None)]
    with pytest.raises(NotFound):
        conversation_page(actor=factories.owner(), conversation_id=conversation.id)
