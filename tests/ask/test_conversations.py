"""Conversations (`ask.conversations`, the `ask.generate` job, `/v1/conversations…`)
against the fake OpenAI-compatible server through the real `openai` client: turns
answered by the job with exact citations, idempotent and conflicting retries, the
100-turn limit, strict source selection (asserted on what the provider received),
context_unavailable before any model call, follow-ups resolved against history, lease
expiry recovered, final checks, and history paging stable under deletion."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from ask import generation
from ask.models import Conversation
from ask.rules import GENERATE, TURN_LIMIT
from ask.selectors import conversation_get, conversation_list, conversation_search, turn_get
from ask.services import conversation_create, conversation_delete, turn_retry, turn_submit
from grove.kernel import jobs
from grove.kernel.errors import Conflict, Invalid, NotFound
from grove.kernel.tenancy import tenant
from grove.models import Job
from notebooks import services as notes
from tests import factories
from tests.api.conftest import Caller, new_key
from tests.ask.test_ask import answer, index_all

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_clean_vector_index")]

GENERATE = GENERATE


def start(actor, **kwargs):
    made, created = conversation_create(actor=actor, conversation_id=uuid.uuid4(),
                                              **kwargs)
    assert created
    return made


def submit(actor, conversation, query, *, version=None, turn_id=None, **kwargs):
    if version is None:
        version = conversation_get(actor=actor, conversation_id=conversation.id).version
    turn, _ = turn_submit(actor=actor, conversation_id=conversation.id,
                                turn_id=turn_id or uuid.uuid4(), query=query,
                                expected_version=version, **kwargs)
    return turn


def generate(actor):
    """Run the queued generate jobs, as a worker would."""
    done = 0
    while jobs.run_batch(account_id=actor.account_id, kind=GENERATE):
        done += 1
    return done


def turn_of(actor, conversation, turn):
    return turn_get(actor=actor, conversation_id=conversation.id, turn_id=turn.id)


def chat_requests(server):
    return [r["body"] for r in server.requests if r["path"] == "/v1/chat/completions"]


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


def test_strict_selection_sends_nothing_outside_it(owner, provider):
    garden = factories.notebook(owner, "Garden")
    kitchen = factories.notebook(owner, "Kitchen")
    picked = factories.note(owner, "Tomatoes need staking in June.")
    in_garden = factories.note(owner, "Tomatoes like full sun.", notebook_id=garden.id)
    factories.note(owner, "Tomatoes are best roasted.", notebook_id=kitchen.id)
    factories.note(owner, "Tomatoes were cheap at the market.")
    index_all(owner)
    conversation = start(owner)
    provider.chat_replies = [answer("answered", ("Stake them.", [f"note:{picked.id}@1"]))]
    submit(owner, conversation, "How do I grow tomatoes?")
    generate(owner)
    provider.requests.clear()
    provider.chat_replies = [answer("answered", ("Full sun.", [f"note:{in_garden.id}@1"]))]
    strict = submit(owner, conversation, "What do tomatoes need?",
                    context={"notes": [str(picked.id)], "notebooks": [str(garden.id)],
                             "only": True})
    generate(owner)
    sent = chat_requests(provider)
    assert len(sent) == 1  # no follow-up rewrite: history is outside the selection
    prompt = json.dumps(sent[0]["messages"])
    assert f"note:{picked.id}@1" in prompt and f"note:{in_garden.id}@1" in prompt
    assert prompt.count("<note id=") == 2
    assert "roasted" not in prompt and "market" not in prompt
    assert "How do I grow tomatoes" not in prompt and "Stake them" not in prompt
    done = turn_of(owner, conversation, strict)
    assert done.context.only and done.context.notes == [picked.id]
    coverage = done.result.context_coverage
    assert (coverage.notes_selected, coverage.notes_supplied, coverage.supplied,
            coverage.complete) == (1, 1, 2, True)
    assert [(nb.name, nb.notes, nb.supplied, nb.searched) for nb in coverage.notebooks] == [
        ("Garden", 1, 1, False)]


def test_a_large_notebook_is_searched_in_scope(owner, provider):
    archive = factories.notebook(owner, "Archive")
    for i in range(20):
        factories.note(owner, f"Meeting minutes {i}: budget review item {i}.",
                       notebook_id=archive.id)
    wanted = factories.note(owner, "The espresso machine descaling happens monthly.",
                            notebook_id=archive.id)
    factories.note(owner, "The espresso machine at home is broken.")
    index_all(owner)
    conversation = start(owner)
    provider.chat_replies = [answer("answered", ("Monthly.", [f"note:{wanted.id}@1"]))]
    turn = submit(owner, conversation, "How often is the espresso machine descaled?",
                  context={"notebooks": [str(archive.id)], "only": True})
    generate(owner)
    done = turn_of(owner, conversation, turn)
    coverage = done.result.context_coverage
    assert coverage.notebooks[0].notes == 21 and coverage.notebooks[0].searched
    assert 1 <= coverage.supplied <= 12 and not coverage.complete
    assert wanted.id in [s.note_id for s in done.result.sources]
    prompt = json.dumps(chat_requests(provider)[-1]["messages"])
    assert "at home is broken" not in prompt


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


def test_a_follow_up_is_resolved_against_completed_turns(owner, provider):
    boiler = factories.note(owner, "The boiler was serviced by Hendrik in October.")
    factories.note(owner, "Hendrik's phone number is 555-0199.")
    index_all(owner)
    conversation = start(owner)
    provider.chat_replies = [answer("answered", ("October.", [f"note:{boiler.id}@1"]))]
    submit(owner, conversation, "When was the boiler serviced?")
    generate(owner)
    provider.requests.clear()

    def standalone(body):
        assert body["response_format"]["json_schema"]["name"] == "grove_standalone_question"
        return json.dumps({"question": "What is Hendrik's phone number?"})

    provider.chat_replies = [standalone, answer("answered", ("555-0199.", []))]
    follow_up = submit(owner, conversation, "And how do I call him?")
    generate(owner)
    rewrite, answering = chat_requests(provider)
    assert "When was the boiler serviced?" in json.dumps(rewrite["messages"])
    assert "October." in json.dumps(rewrite["messages"])
    prompt = json.dumps(answering["messages"])
    assert "555-0199" in prompt  # evidence retrieved afresh for the resolved question
    assert "Earlier turns" in prompt and "When was the boiler serviced?" in prompt
    done = turn_of(owner, conversation, follow_up)
    assert done.result.resolved_question == "What is Hendrik's phone number?"


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


def test_an_expired_lease_is_recovered_and_the_turn_generated(owner, provider):
    note = factories.note(owner, "The spare key is under the blue pot.")
    index_all(owner)
    conversation = start(owner)
    turn = submit(owner, conversation, "Where is the spare key?")
    leased = jobs.claim(account_id=owner.account_id, kind=GENERATE, limit=1)
    job = leased.jobs[0]
    assert timedelta(minutes=4, seconds=59) < job.lease_expires_at - timezone.now() \
        <= timedelta(minutes=5)
    # The worker died mid-call: nothing comes back, the lease runs out.
    assert turn_of(owner, conversation, turn).status == "pending"
    assert jobs.recover(now=timezone.now() + timedelta(minutes=5, seconds=1))["expired"] == 1
    with tenant(owner):  # the backoff has passed
        assert Job.objects.filter(id=job.id, status="queued").update(
            run_after=timezone.now()) == 1
    provider.chat_replies = [answer("answered", ("Under the blue pot.", [f"note:{note.id}@1"]))]
    assert generate(owner) == 1
    done = turn_of(owner, conversation, turn)
    assert done.status == "completed" and done.result.blocks[0].supported
    with tenant(owner):
        assert Job.objects.get(id=job.id).attempts == 2  # the dead attempt, then this one


def test_final_checks_refuse_an_answer_whose_source_vanished(owner, provider):
    note = factories.note(owner, "The alarm code is 4321.")
    index_all(owner)
    conversation = start(owner)
    turn = submit(owner, conversation, "What is the alarm code?")
    provider.chat_replies = [answer("answered", ("4321.", [f"note:{note.id}@1"]))]
    handler = jobs.handler_for(GENERATE)
    leased = jobs.claim(account_id=owner.account_id, kind=GENERATE, limit=1)
    with tenant(owner):
        inputs = handler.load(leased.jobs)
    outputs = handler.execute([inputs[j.id] for j in leased.jobs])
    # While the model answered, the note was forgotten.
    notes.note_forget(actor=owner, operation_id=uuid.uuid4(), items=[{"id": note.id}])
    with tenant(owner):
        stored = generation.complete(
            list(Job.objects.filter(id=leased.jobs[0].id)), inputs,
            dict(zip([j.id for j in leased.jobs], outputs, strict=True)))
    assert stored == {leased.jobs[0].id}
    done = turn_of(owner, conversation, turn)
    assert done.status == "failed" and done.error.code == "sources_changed"
    assert done.result is None


def test_a_provider_change_during_generation_is_not_stored(owner, provider):
    note = factories.note(owner, "The gate code is 1234.")
    index_all(owner)
    conversation = start(owner)
    turn = submit(owner, conversation, "What is the gate code?")
    with override_settings(GROVE_LLM_MODEL="another-model"):
        generate(owner)
    done = turn_of(owner, conversation, turn)
    assert done.status == "failed" and done.error.code == "provider_changed"
    assert provider.requests == []
    provider.chat_replies = [answer("answered", ("1234.", [f"note:{note.id}@1"]))]
    turn_retry(actor=owner, conversation_id=conversation.id, turn_id=turn.id)
    generate(owner)
    assert turn_of(owner, conversation, turn).status == "completed"


def test_without_a_provider_a_turn_completes_with_the_sources(owner):
    note = factories.note(owner, "The bike lock code is kept in the blue notebook.")
    index_all(owner)
    with override_settings(GROVE_LLM_BASE_URL=None, GROVE_LLM_MODEL=None):
        conversation = start(owner)
        turn = submit(owner, conversation, "Where is the bike lock code?")
        generate(owner)
    done = turn_of(owner, conversation, turn)
    assert done.status == "completed" and done.result.status == "disabled"
    assert [s.note_id for s in done.result.sources] == [note.id]


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


def test_over_rest_each_connection_sees_its_own(owner, provider):
    shared = factories.notebook(owner, "Shared")
    note = factories.note(owner, "The router admin page is at 192.168.1.1.",
                          notebook_id=shared.id)
    index_all(owner)
    key, agent = new_key(owner, all_notebooks=False, personal=False, notebooks=[shared.id])
    other_key, _ = new_key(owner)
    api, other = Caller(Client(), key), Caller(Client(), other_key)
    conversation_id = str(uuid.uuid4())
    body = {"id": conversation_id, "notebookId": str(shared.id), "title": "Network"}
    made = api.post("/conversations", body)
    assert made.status_code == 201 and made.json()["data"]["scope"] == "notebook"
    assert api.post("/conversations", body).status_code == 200
    assert api.post("/conversations", {**body, "title": "Else"}).status_code == 409
    turn_id = str(uuid.uuid4())
    turn_body = {"id": turn_id, "query": "Where is the router admin page?",
                 "expectedVersion": 0,
                 "context": {"notes": [str(note.id)], "only": True}}
    asked = api.post(f"/conversations/{conversation_id}/turns", turn_body)
    assert asked.status_code == 202 and asked.json()["data"]["status"] == "pending"
    assert api.post(f"/conversations/{conversation_id}/turns", turn_body).status_code == 200
    conflict = api.post(f"/conversations/{conversation_id}/turns",
                        {**turn_body, "query": "Something else?"})
    assert conflict.status_code == 409 and conflict.json()["error"]["code"] == "turn_conflict"
    stale = api.post(f"/conversations/{conversation_id}/turns",
                     {**turn_body, "id": str(uuid.uuid4())})
    assert stale.json()["error"]["code"] == "version_conflict"
    provider.chat_replies = [answer("answered", ("At 192.168.1.1.", [f"note:{note.id}@1"]))]
    generate(agent)
    turn = api.get(f"/conversations/{conversation_id}/turns/{turn_id}").json()["data"]
    assert turn["status"] == "completed"
    assert turn["result"]["blocks"][0]["citations"] == [f"note:{note.id}@1"]
    assert turn["result"]["contextCoverage"]["complete"] is True
    assert other.get(f"/conversations/{conversation_id}").status_code == 404
    listed = api.get("/conversations").json()
    assert [c["id"] for c in listed["data"]] == [conversation_id]
    assert other.get("/conversations").json()["data"] == []
    found = api.post("/conversations/search", {"query": "ROUTER admin"}).json()
    assert [c["id"] for c in found["data"]] == [conversation_id]
    exported = api.get(f"/conversations/{conversation_id}/export")
    assert exported.status_code == 200 and "attachment" in exported["Content-Disposition"]
    record = exported.json()
    assert record["type"] == "grove-conversation"
    assert record["turns"][0]["context"] == {"notes": [str(note.id)], "notebooks": [],
                                             "only": True}
    assert api.call("DELETE", f"/conversations/{conversation_id}").status_code == 204
    assert api.get(f"/conversations/{conversation_id}").status_code == 404
    assert api.post("/conversations", body).status_code == 409  # the id stays taken
    with tenant(owner):
        assert Conversation.objects.filter(client_id=conversation_id).exists()  # retained


def test_the_owner_asking_in_an_agents_conversation_gets_the_agents_grant(owner, provider):
    shared = factories.notebook(owner, "Shared")
    private = factories.notebook(owner, "Private")
    factories.note(owner, "The shed key hangs by the door.", notebook_id=shared.id)
    factories.note(owner, "The safe key is in the freezer.", notebook_id=private.id)
    index_all(owner)
    _, agent = new_key(owner, all_notebooks=False, personal=False, notebooks=[shared.id])
    conversation = start(agent)
    provider.chat_replies = [answer("insufficient_evidence")]
    submit(owner, conversation, "Where is the safe key kept?")  # the owner, in the website
    generate(owner)
    prompt = json.dumps(chat_requests(provider))
    assert "freezer" not in prompt  # answered within the agent's grant
    [turn] = conversation_get(actor=agent, conversation_id=conversation.id).turns
    assert turn.status == "completed"


def test_a_picked_note_and_its_notebook_are_read_once(owner, provider):
    book = factories.notebook(owner, "Bikes")
    picked = factories.note(owner, "Chain oil every 300 km.", notebook_id=book.id)
    factories.note(owner, "Tyres at 4 bar.", notebook_id=book.id)
    index_all(owner)
    conversation = start(owner)
    provider.chat_replies = [answer("answered", ("Oil it.", [f"note:{picked.id}@1"]))]
    turn = submit(owner, conversation, "How do I look after the bike?",
                  context={"notes": [str(picked.id)], "notebooks": [str(book.id)],
                           "only": True})
    generate(owner)
    coverage = turn_of(owner, conversation, turn).result.context_coverage
    assert (coverage.supplied, coverage.notebooks[0].notes, coverage.notebooks[0].supplied,
            coverage.complete) == (2, 1, 1, True)


def test_model_calls_fit_inside_the_lease():
    import time

    from ask import providers

    now = time.monotonic()
    with override_settings(GROVE_LLM_TIMEOUT=60.0):
        assert providers._within(None) == {}
        assert providers._within(now + 270) == {"timeout": 60.0, "max_retries": 2}
        assert providers._within(now + 130) == {"timeout": 60.0, "max_retries": 1}
        short = providers._within(now + 30)
        assert short["max_retries"] == 0 and 28 < short["timeout"] <= 30
        with pytest.raises(providers.ProviderUnavailable):
            providers._within(now - 1)
    # Whatever the configured timeout, every try of a call started with the job's
    # budget ends inside the lease.
    for timeout in (10.0, 60.0, 100.0, 200.0, 400.0):
        with override_settings(GROVE_LLM_TIMEOUT=timeout):
            given = providers._within(time.monotonic() + generation.CALL_BUDGET_SECONDS)
        worst = given["timeout"] * (given["max_retries"] + 1)
        assert worst <= generation.CALL_BUDGET_SECONDS < generation.LEASE.total_seconds()
