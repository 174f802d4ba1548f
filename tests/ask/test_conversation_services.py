"""Conversation services (`ask.services`: conversation_create, turn_submit, turn_retry,
conversation_start, turn_reask): turns accepted pending with exact citations once
answered, idempotent and conflicting retries, ids private to each account, the expected
version, the 100-turn limit, source selections refused before any model call, retry of
a failed turn; a new conversation's first question in one transaction, and re-asking."""

from __future__ import annotations

import uuid

import pytest

from ask.models import Conversation, Turn
from ask.rules import GENERATE, QUERY_MAX_CHARS, TURN_LIMIT
from ask.selectors import conversation_get, conversation_list
from ask.services import (
    conversation_create,
    conversation_start,
    turn_reask,
    turn_retry,
    turn_submit,
)
from grove.kernel.errors import Conflict, Invalid, NotFound
from grove.kernel.tenancy import tenant
from grove.models import Job
from notebooks import services as notes
from tests import factories
from tests.api.conftest import new_key
from tests.ask.helpers import generate, start, submit, turn_of
from tests.ask.test_ask import answer, index_all

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_clean_vector_index")]


def test_a_turn_is_pending_then_answered_with_exact_citations(owner, provider):
    note = factories.note(owner, "The staging database is rebuilt every Sunday night.")
    index_all(owner)
    conversation = start(owner)
    assert conversation.version == 0 and conversation.title == ""
    cite = f"note:{note.id}@1"
    provider.chat_replies = [answer("answered", ("Staging is rebuilt on Sundays.", [cite]),
                                    ("And on Mondays.", ["note:" + str(uuid.uuid4()) + "@1"]))]
    turn = submit(owner, conversation, "When is the staging database rebuilt?",
                  format="markdown")
    assert turn.status == "pending" and turn.position == 1 and turn.result is None
    assert generate(owner) == 1
    done = turn_of(owner, conversation, turn)
    assert done.status == "completed" and done.completed_at is not None
    assert done.result.status == "answered"
    assert [(b.citations, b.supported) for b in done.result.blocks] == [
        ([cite], True), ([], False)]
    assert [(s.cite_as, s.version, s.label) for s in done.result.sources] == [
        (cite, 1, "The staging database is rebuilt every Sunday night.")]
    detail = conversation_get(actor=owner, conversation_id=conversation.id)
    assert detail.version == 1 and detail.turn_count == 1
    assert detail.title == "When is the staging database rebuilt?"


def test_another_accounts_ids_are_neither_taken_nor_revealed(owner, provider):
    """A UUID another account already uses for a conversation or a turn is, for this
    account, as fresh as any other: created, not a 409 that says it exists elsewhere."""
    factories.note(owner, "Bins go out on Thursday evenings.")
    conversation_id, turn_id = uuid.uuid4(), uuid.uuid4()
    conversation_create(actor=owner, conversation_id=conversation_id, title="Chores")
    turn_submit(actor=owner, conversation_id=conversation_id, turn_id=turn_id,
                      query="When do the bins go out?", expected_version=0)
    other = factories.owner()
    mine, created = conversation_create(actor=other, conversation_id=conversation_id,
                                              title="Something else")
    assert created and mine.id == conversation_id and mine.title == "Something else"
    turn, created = turn_submit(actor=other, conversation_id=conversation_id,
                                      turn_id=turn_id, query="What is new?",
                                      expected_version=0)
    assert created and turn.id == turn_id and turn.conversation_id == conversation_id
    # Each account sees its own, under the same ids.
    assert conversation_get(actor=owner, conversation_id=conversation_id).title == "Chores"
    assert conversation_get(actor=other, conversation_id=conversation_id).title == \
        "Something else"
    assert [t.query for t in conversation_get(
        actor=owner, conversation_id=conversation_id).turns] == ["When do the bins go out?"]


def test_identical_retries_replay_and_changed_payloads_conflict(owner, provider):
    factories.note(owner, "Bins go out on Thursday evenings.")
    conversation_id = uuid.uuid4()
    first, created = conversation_create(actor=owner, conversation_id=conversation_id,
                                               title="Chores")
    again, created_again = conversation_create(actor=owner,
                                                     conversation_id=conversation_id,
                                                     title="Chores")
    assert created and not created_again and again == first
    with pytest.raises(Conflict) as changed:
        conversation_create(actor=owner, conversation_id=conversation_id,
                                  title="Other")
    assert changed.value.code == "conversation_conflict"

    turn_id = uuid.uuid4()
    kwargs = {"conversation_id": conversation_id, "turn_id": turn_id,
              "query": "When do the bins go out?", "expected_version": 0}
    turn, created = turn_submit(actor=owner, **kwargs)
    replay, created_again = turn_submit(actor=owner, **kwargs)
    assert created and not created_again and replay.id == turn.id
    for change in ({"query": "When do the bins go out??"}, {"format": "markdown"},
                   {"expected_version": 1}, {"context": {"notes": [str(uuid.uuid4())]}}):
        with pytest.raises(Conflict) as conflict:
            turn_submit(actor=owner, **{**kwargs, **change})
        assert conflict.value.code == "turn_conflict"
    detail = conversation_get(actor=owner, conversation_id=conversation_id)
    assert detail.version == 1 and len(detail.turns) == 1
    with tenant(owner):
        assert Job.objects.filter(kind=GENERATE).count() == 1  # the replays queued nothing


def test_a_stale_expected_version_conflicts_and_changes_nothing(owner):
    conversation = start(owner)
    submit(owner, conversation, "First question?", version=0)
    with pytest.raises(Conflict) as stale:
        submit(owner, conversation, "Second question?", version=0)
    assert stale.value.code == "version_conflict"
    with pytest.raises(Invalid):
        submit(owner, conversation, "Third?", version=-1)
    assert conversation_get(actor=owner, conversation_id=conversation.id).version == 1


def test_the_101st_turn_is_refused(owner):
    conversation = start(owner)
    for version in range(TURN_LIMIT):
        submit(owner, conversation, f"Question number {version}?", version=version)
    with pytest.raises(Conflict) as full:
        submit(owner, conversation, "One more?", version=TURN_LIMIT)
    assert full.value.code == "turn_limit"
    detail = conversation_get(actor=owner, conversation_id=conversation.id)
    assert detail.version == detail.turn_count == TURN_LIMIT == len(detail.turns)


@pytest.mark.parametrize("context", [
    {"notes": [str(uuid.uuid4())]},                                  # no such note
    {"notebooks": [str(uuid.uuid4())], "only": True},                # no such notebook
    {"notes": [], "notebooks": []},                                  # nothing selected
    {"notes": [str(uuid.uuid4())] * 2},                              # duplicates
    {"notes": [str(uuid.uuid4()) for _ in range(13)]},               # too many notes
    {"notebooks": [str(uuid.uuid4()) for _ in range(7)]},            # too many notebooks
    {"notes": ["not-a-uuid"]},
])
def test_unavailable_context_is_refused_before_any_model_call(owner, provider, context):
    conversation = start(owner)
    with pytest.raises(Conflict) as refused:
        submit(owner, conversation, "Anything?", version=0, context=context)
    assert refused.value.code == "context_unavailable" and refused.value.status == 409
    detail = conversation_get(actor=owner, conversation_id=conversation.id)
    assert detail.version == 0 and detail.turns == []
    assert provider.requests == []
    with tenant(owner):
        assert not Job.objects.filter(kind=GENERATE).exists()


def test_selectors_outside_the_grant_or_deleted_are_unavailable(owner, provider):
    shared = factories.notebook(owner, "Shared")
    private = factories.notebook(owner, "Private")
    secret = factories.note(owner, "Private plans.", notebook_id=private.id)
    gone = factories.note(owner, "Soon forgotten.", notebook_id=shared.id)
    notes.note_forget(actor=owner, operation_id=uuid.uuid4(), items=[{"id": gone.id}])
    stranger = factories.owner()
    theirs = factories.note(stranger, "Someone else's note.")
    _, agent = new_key(owner, all_notebooks=False, personal=False, notebooks=[shared.id])
    conversation = start(agent)
    for context in ({"notes": [str(secret.id)]}, {"notebooks": [str(private.id)]},
                    {"notes": [str(gone.id)]}, {"notes": [str(theirs.id)]}):
        with pytest.raises(Conflict) as refused:
            submit(agent, conversation, "What are the plans?", version=0, context=context)
        assert refused.value.code == "context_unavailable"
    assert conversation_get(actor=agent, conversation_id=conversation.id).version == 0
    assert provider.requests == []


def test_a_failed_turn_can_be_retried(owner, provider):
    note = factories.note(owner, "Passports are in the top drawer.")
    index_all(owner)
    conversation = start(owner)
    provider.chat_replies = [500] * 3
    turn = submit(owner, conversation, "Where are the passports?")
    generate(owner)
    failed = turn_of(owner, conversation, turn)
    assert failed.status == "failed" and failed.error.code == "provider_unavailable"
    assert failed.result is None
    provider.chat_replies = [answer("answered", ("Top drawer.", [f"note:{note.id}@1"]))]
    retried = turn_retry(actor=owner, conversation_id=conversation.id, turn_id=turn.id)
    assert retried.status == "pending" and retried.completed_at is None
    assert retried.error is None and retried.result is None
    with pytest.raises(Conflict) as twice:
        turn_retry(actor=owner, conversation_id=conversation.id, turn_id=turn.id)
    assert twice.value.code == "turn_not_failed"
    generate(owner)
    assert turn_of(owner, conversation, turn).status == "completed"


def test_conversation_start_asks_the_first_question_in_one_transaction(owner, provider):
    conversation_id, turn_id = uuid.uuid4(), uuid.uuid4()
    kwargs = {"conversation_id": conversation_id, "turn_id": turn_id,
              "query": "When do the bins go out?", "format": "markdown"}
    made, turn = conversation_start(actor=owner, **kwargs)
    assert made.id == conversation_id and made.version == 1 and made.scope == "everywhere"
    assert made.title == "When do the bins go out?"
    assert turn.id == turn_id and turn.position == 1 and turn.status == "pending"
    again, replayed = conversation_start(actor=owner, **kwargs)  # a double submit asks once
    assert again.id == conversation_id and again.version == 1 and replayed is None
    detail = conversation_get(actor=owner, conversation_id=conversation_id)
    assert [t.id for t in detail.turns] == [turn_id]
    with tenant(owner):
        assert Job.objects.filter(kind=GENERATE).count() == 1
    with pytest.raises(Conflict) as other:
        conversation_start(actor=owner, **kwargs, title="Chores")
    assert other.value.code == "conversation_conflict"
    # A conversation made without a question gets its first one.
    empty = start(owner, title="Later")
    _, first = conversation_start(actor=owner, conversation_id=empty.id, title="Later",
                                  turn_id=uuid.uuid4(), query="Anything new?")
    assert first.position == 1
    assert conversation_get(actor=owner, conversation_id=empty.id).version == 1


@pytest.mark.parametrize(("refusal", "code"), [
    ({"context": {"notes": [str(uuid.uuid4())]}}, "context_unavailable"),
    ({"context": {"notes": []}}, "context_unavailable"),
    ({"expected_version": 1}, "version_conflict"),
    ({"query": "  "}, "invalid_query"),
    ({"query": "x" * (QUERY_MAX_CHARS + 1)}, "invalid_query"),
    ({"format": "html"}, "invalid_format"),
])
def test_a_refused_first_question_stores_nothing(owner, provider, refusal, code):
    conversation_id, turn_id = uuid.uuid4(), uuid.uuid4()
    with pytest.raises((Conflict, Invalid)) as refused:
        conversation_start(actor=owner, **{"conversation_id": conversation_id,
                                           "turn_id": turn_id, "query": "What is this?",
                                           **refusal})
    assert refused.value.code == code
    with tenant(owner):  # not even a hidden conversation: the transaction rolled back
        assert not Conversation.objects.filter(client_id=conversation_id).exists()
        assert not Turn.objects.filter(client_id=turn_id).exists()
        assert not Job.objects.filter(kind=GENERATE).exists()
    assert conversation_list(actor=owner)[0] == []
    assert provider.requests == []
    made, turn = conversation_start(actor=owner, conversation_id=conversation_id,
                                    turn_id=turn_id, query="What is this?")
    assert made.version == 1 and turn.id == turn_id  # the ids are still free


def test_a_refused_first_question_keeps_a_conversation_made_before(owner):
    empty = start(owner)
    with pytest.raises(Conflict):
        conversation_start(actor=owner, conversation_id=empty.id, turn_id=uuid.uuid4(),
                           query="What is this?", context={"notes": [str(uuid.uuid4())]})
    assert conversation_get(actor=owner, conversation_id=empty.id).version == 0


def test_turn_reask_asks_again_as_the_next_turn(owner, provider):
    note = factories.note(owner, "The boiler is serviced every October.")
    index_all(owner)
    conversation = start(owner)
    asked = submit(owner, conversation, "When is the boiler serviced?", format="markdown",
                   context={"notes": [str(note.id)]})
    provider.chat_replies = [answer("answered", ("October.", [f"note:{note.id}@1"]))]
    generate(owner)
    new_id = uuid.uuid4()
    again = turn_reask(actor=owner, conversation_id=conversation.id, turn_id=asked.id,
                       new_turn_id=new_id, expected_version=1)
    assert (again.id, again.position, again.status) == (new_id, 2, "pending")
    assert (again.query, again.format, again.context) == (asked.query, asked.format,
                                                           asked.context)
    # A repeated click (the version has moved on since) returns the turn it made.
    for version in (1, None):
        repeat = turn_reask(actor=owner, conversation_id=conversation.id, turn_id=asked.id,
                            new_turn_id=str(new_id), expected_version=version)
        assert repeat.id == new_id and repeat.position == 2
    assert conversation_get(actor=owner, conversation_id=conversation.id).version == 2
    with tenant(owner):
        assert Job.objects.filter(kind=GENERATE, status="queued").count() == 1
    # Without a version: against the conversation as it is now.
    latest = turn_reask(actor=owner, conversation_id=conversation.id, turn_id=asked.id,
                        new_turn_id=uuid.uuid4())
    assert latest.position == 3
    with pytest.raises(Conflict) as stale:
        turn_reask(actor=owner, conversation_id=conversation.id, turn_id=asked.id,
                   new_turn_id=uuid.uuid4(), expected_version=1)
    assert stale.value.code == "version_conflict"
    with pytest.raises(Invalid) as bad:
        turn_reask(actor=owner, conversation_id=conversation.id, turn_id=asked.id,
                   new_turn_id="not-a-uuid")
    assert bad.value.code == "invalid_id"
    with pytest.raises(NotFound) as unknown:
        turn_reask(actor=owner, conversation_id=conversation.id, turn_id=uuid.uuid4(),
                   new_turn_id=uuid.uuid4())
    assert unknown.value.code == "turn_not_found"
    with pytest.raises(NotFound) as foreign:
        turn_reask(actor=factories.owner(), conversation_id=conversation.id,
                   turn_id=asked.id, new_turn_id=uuid.uuid4())
    assert foreign.value.code == "conversation_not_found"
    assert conversation_get(actor=owner, conversation_id=conversation.id).version == 3
