"""The `ask.generate` job (`ask.generation`) against the fake OpenAI-compatible server
through the real `openai` client: strict source selection (asserted on what the provider
received), large notebooks searched in scope, follow-ups resolved against history, the
starter's grant, lease expiry recovered, final checks before storing, and model calls
that fit inside the lease."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from ask import generation
from ask.rules import GENERATE
from ask.selectors import conversation_get
from ask.services import turn_retry
from grove.kernel import jobs
from grove.kernel.tenancy import tenant
from grove.models import Job
from notebooks import services as notes
from tests import factories
from tests.api.conftest import new_key
from tests.ask.helpers import chat_requests, generate, start, submit, turn_of
from tests.ask.test_ask import answer, index_all

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_clean_vector_index")]


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
