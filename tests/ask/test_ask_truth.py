"""Ask under ground truth (SPEC §10), against the fake OpenAI-compatible server through the
real `openai` client: under `restrict` an uncovered question is `not_covered` without a
model call; the negatives reach the model as known falsehoods; and a stand-in model that
states one anyway has that block marked `contradictsKnownFalse` — in the stateless answer
and in a conversation."""

from __future__ import annotations

import json

import pytest

from ask.services import ask
from notebooks import services
from tests import factories
from tests.ask.helpers import chat_requests, generate, start, submit, turn_of
from tests.ask.test_ask import answer, index_all

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_clean_vector_index")]

FALSE = "The staging database is db-stage-1."


@pytest.fixture
def ops(owner):
    notebook = factories.notebook(owner, "Ops")
    right = factories.note(owner, "Staging database: db-stage-2, rebuilt on Sundays.",
                           notebook_id=notebook.id)
    factories.note(owner, "The staging database was db-stage-1 in 2024.",
                   notebook_id=notebook.id)
    services.negative_add(actor=owner, notebook_id=notebook.id, claim=FALSE)
    index_all(owner)
    return notebook, right


def test_the_model_is_told_the_negatives_and_a_block_stating_one_is_marked(owner, provider,
                                                                          ops):
    notebook, right = ops
    cite = f"note:{right.id}@1"
    provider.chat_replies = [answer(
        "answered", ("Staging is rebuilt on Sundays.", [cite]),
        ("The staging database is db-stage-1.", [cite]))]  # the attack: a known falsehood
    result = ask(actor=owner, query="Which host is the staging database?",
                 notebook_id=notebook.id)
    assert [b.contradicts_known_false for b in result.blocks] == [[], [FALSE]]
    assert result.to_json()["blocks"][1]["contradictsKnownFalse"] == [FALSE]
    sent = provider.requests[-1]["body"]["messages"][1]["content"]
    assert "Known false" in sent and FALSE in sent
    # The stable reference (the notes) comes before the claims and the question.
    assert sent.index("<note ") < sent.index(FALSE) < sent.index("Question:")


def test_restrict_says_not_covered_without_asking_the_model(owner, provider, ops):
    notebook, right = ops
    services.truth_declare(actor=owner, notebook_id=notebook.id, note_ids=[right.id],
                           policy="restrict")
    before = len(provider.requests)
    result = ask(actor=owner, query="What is the office wifi password?",
                 notebook_id=notebook.id)
    assert (result.status, result.blocks) == ("not_covered", [])
    assert len(provider.requests) == before
    provider.chat_replies = [answer("answered", ("db-stage-2.", [f"note:{right.id}@1"]))]
    covered = ask(actor=owner, query="Which host is the staging database?",
                  notebook_id=notebook.id)
    assert covered.status == "answered"
    assert [s.cite_as for s in covered.sources if s.note.kind == "fact"] == [
        f"note:{right.id}@1"]  # the neighbour about db-stage-1 is not evidence


def test_a_conversation_marks_the_block_and_says_not_covered(owner, provider, ops):
    notebook, right = ops
    conversation = start(owner, notebook_id=notebook.id)
    provider.chat_replies = [answer("answered", ("The staging database is db-stage-1.",
                                                 [f"note:{right.id}@1"]))]
    turn = submit(owner, conversation, "Which host is staging?")
    generate(owner)
    done = turn_of(owner, conversation, turn)
    assert done.result.blocks[0].contradicts_known_false == [FALSE]
    assert FALSE in chat_requests(provider)[-1]["messages"][1]["content"]
    services.truth_declare(actor=owner, notebook_id=notebook.id, note_ids=[right.id],
                           policy="restrict")
    # A follow-up: the model rewrites it as a standalone question, and is asked nothing more.
    provider.chat_replies = [json.dumps({"question": "What is the office wifi password?"})]
    asked = len(chat_requests(provider))
    uncovered = submit(owner, conversation, "And the wifi password?")
    generate(owner)
    assert len(chat_requests(provider)) == asked + 1
    answered = turn_of(owner, conversation, uncovered)
    assert answered.result is not None, answered
    assert answered.result.status == "not_covered"


def test_a_failing_embedding_provider_leaves_the_lexical_check(owner, provider, ops,
                                                               monkeypatch):
    """Checking an answer against the negatives embeds its blocks; when the provider
    fails then, the answer still comes, checked by words alone."""
    from grove.embeddings import EmbeddingUnavailable

    notebook, right = ops

    class Down:
        profile, dimension = "down", 384

        def embed(self, texts):
            raise EmbeddingUnavailable("the embedding provider is down")

    monkeypatch.setattr("grove.embeddings.get_embedder", lambda: Down())
    provider.chat_replies = [answer("answered", ("The staging database is db-stage-1.",
                                                 [f"note:{right.id}@1"]))]
    result = ask(actor=owner, query="Which host is the staging database?",
                 notebook_id=notebook.id)
    assert result.blocks[0].contradicts_known_false == [FALSE]


def test_a_strict_selection_is_held_to_the_known_falsehoods_too(owner, provider, ops):
    """A turn answered only from the notes the owner picked recalls nothing — and is
    told the scope's known falsehoods and checked against them all the same."""
    notebook, right = ops
    conversation = start(owner, notebook_id=notebook.id)
    provider.chat_replies = [answer("answered", ("The staging database is db-stage-1.",
                                                 [f"note:{right.id}@1"]))]
    turn = submit(owner, conversation, "Which host is staging?",
                  context={"notes": [str(right.id)], "only": True})
    generate(owner)
    done = turn_of(owner, conversation, turn)
    assert done.result.blocks[0].contradicts_known_false == [FALSE]
    [request] = chat_requests(provider)
    assert FALSE in request["messages"][1]["content"]


def test_a_question_over_everything_is_held_to_every_notebooks_truth(owner, provider, ops):
    """Asked without a notebook, the question is held to what the owner marked false in
    any notebook it reads from: the model is told, the block stating it is marked, each
    source carries its own place's marks (declared ground truth, known false) — in REST's
    answer, in the prompt, and in the `ask` tool's words."""
    from ask.mcp import _ask
    from ask.schemas import AskArgs

    notebook, right = ops
    stale = factories.note(owner, "Reminder: the staging database is db-stage-1.",
                           notebook_id=notebook.id)
    services.truth_declare(actor=owner, notebook_id=notebook.id, note_ids=[right.id],
                           policy="prioritize")
    index_all(owner)
    cite = f"note:{right.id}@1"
    attack = answer("answered", ("The staging database is db-stage-1.", [cite]))
    provider.chat_replies = [attack]
    result = ask(actor=owner, query="Which host is the staging database?")
    assert result.blocks[0].contradicts_known_false == [FALSE]
    sources = {s.note.id: s for s in result.sources}
    assert sources[right.id].authority and not sources[right.id].known_false
    assert [k.claim for k in sources[stale.id].known_false] == [FALSE]
    assert not sources[stale.id].authority
    sent = provider.requests[-1]["body"]["messages"][1]["content"]
    assert "Known false" in sent and FALSE in sent
    assert f'<note id="{cite}" kind="fact" notebook="{notebook.id}" ground-truth="declared">' \
        in sent
    assert f"states what the owner marked false: {FALSE}" in sent

    provider.chat_replies = [attack]
    tool = _ask(owner, AskArgs(query="Which host is the staging database?"))
    text = tool.mcp_text()
    assert f"This block states what the owner marked false: “{FALSE}”" in text
    assert "declared ground truth" in text and "Known to be false (the owner says)" in text
    marked = {s.id: s for s in tool.sources}
    assert marked[f"note:{right.id}@1"].authority is True
    assert [k.claim for k in marked[f"note:{stale.id}@1"].known_false] == [FALSE]
