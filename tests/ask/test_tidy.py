"""Tidy-up (SPEC §8): a turn that tidies one notebook sends the model exactly the groups of
likely duplicates found with the stored vectors, keeps only merges and edits within one
group, and is applied like any proposal; from REST, and from the notebook page."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from ask.models import Turn
from grove.kernel.tenancy import tenant
from tests import factories
from tests.api.conftest import Caller, new_key
from tests.ask.helpers import chat_requests, generate, start, submit, turn_of
from tests.ask.proposal_helpers import act, proposal, reply, stored
from tests.ask.test_ask import index_all

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_clean_vector_index")]

BASE = ("Quarterly budget review moved to Thursday afternoon because finance needs "
        "updated vendor invoices from procurement before approving travel spending limits")
NEAR = "Note: " + BASE  # one word more: a near-duplicate for the fake embedder
UNRELATED = "The cat sleeps on the warm windowsill every sunny morning."


def test_a_tidy_up_proposes_over_exactly_the_groups_it_found(owner, provider, web):
    ops = factories.notebook(owner, "Ops")
    elsewhere = factories.notebook(owner, "Elsewhere")
    base = factories.note(owner, BASE, notebook_id=ops.id)
    near = factories.note(owner, NEAR, notebook_id=ops.id)
    lone = factories.note(owner, UNRELATED, notebook_id=ops.id)
    copy = factories.note(owner, BASE, notebook_id=elsewhere.id)  # another notebook
    index_all(owner)
    conversation = start(owner, notebook_id=ops.id)
    provider.chat_replies = [reply(base.versioned_id,
                                   proposal("merge", [base.versioned_id, near.versioned_id],
                                            content=BASE + " (moved in May)."),
                                   proposal("edit", [lone.versioned_id], content="Cats."),
                                   proposal("archive", [near.versioned_id]))]
    turn = submit(owner, conversation, "Tidy this notebook", tidy={"notebookId": ops.id})
    generate(owner)

    sent = json.dumps(chat_requests(provider)[-1]["messages"])
    prompt = chat_requests(provider)[-1]["messages"][-1]["content"]
    [group] = [line for line in prompt.splitlines() if line.startswith("- group ")]
    assert group.startswith("- group 1: ")
    assert set(group.removeprefix("- group 1: ").split(", ")) == {base.versioned_id,
                                                                  near.versioned_id}
    assert str(lone.id) not in sent and str(copy.id) not in sent
    done = turn_of(owner, conversation, turn)
    assert done.tidy.notebook_id == ops.id
    coverage = done.result.tidy_coverage
    assert (coverage.scanned, coverage.groups, coverage.groups_shown, coverage.notes_shown) \
        == (3, 1, 1, 2)
    assert {s.note_id for s in done.result.sources} == {base.id, near.id}
    [merge] = done.proposals
    assert merge.kind == "merge"
    assert sorted(p.drop_reason for p in stored(owner) if p.state == "dropped") == [
        "not_applicable", "unseen_note"]  # the lone note was never shown

    assert act(web, conversation, done, merge.id, "apply").status_code == 200
    assert factories.note_row(owner, near.id).status == "archived"
    assert factories.note_row(owner, base.id).content == BASE + " (moved in May)."


def test_edits_and_merges_must_stay_within_one_group(owner, provider):
    ops = factories.notebook(owner, "Ops")
    a1, a2 = (factories.note(owner, BASE, notebook_id=ops.id),
              factories.note(owner, NEAR, notebook_id=ops.id))
    other = "Backups of the mail server run nightly at two and are kept for thirty days"
    b1, b2 = (factories.note(owner, other, notebook_id=ops.id),
              factories.note(owner, "Note: " + other, notebook_id=ops.id))
    index_all(owner)
    conversation = start(owner)
    provider.chat_replies = [reply(a1.versioned_id, proposal(
        "merge", [a1.versioned_id, b1.versioned_id], content="Both."), proposal(
        "edit", [b2.versioned_id], content="Note: " + other + ", and tested monthly."))]
    turn = submit(owner, conversation, "tidy", tidy={"notebookId": ops.id})
    generate(owner)
    done = turn_of(owner, conversation, turn)
    assert done.result.tidy_coverage.groups == 2
    assert [p.kind for p in done.proposals] == ["edit"]
    assert [p.drop_reason for p in stored(owner) if p.state == "dropped"] == ["outside_group"]
    assert {a2.id, b1.id} <= {s.note_id for s in done.result.sources}


def test_nothing_to_tidy_calls_no_model(owner, provider):
    ops = factories.notebook(owner, "Ops")
    factories.note(owner, BASE, notebook_id=ops.id)
    factories.note(owner, UNRELATED, notebook_id=ops.id)
    index_all(owner)
    conversation = start(owner)
    turn = submit(owner, conversation, "tidy", tidy={"notebookId": ops.id})
    generate(owner)
    done = turn_of(owner, conversation, turn)
    assert done.result.status == "no_evidence" and done.proposals == []
    assert done.result.tidy_coverage.scanned == 2 and done.result.tidy_coverage.groups == 0
    assert chat_requests(provider) == []


def test_a_tidy_up_is_refused_before_anything_for_a_place_out_of_reach(owner, provider):
    ops = factories.notebook(owner, "Ops")
    theirs = factories.notebook(factories.owner(), "Theirs")
    key, _ = new_key(owner, all_notebooks=False, personal=False, notebooks=[ops.id])
    api = Caller(Client(), key)
    conversation_id = str(uuid.uuid4())
    assert api.post("/conversations", {"id": conversation_id}).status_code == 201
    for tidy, extra in (({"notebookId": str(theirs.id)}, {}),
                        ({"notebookId": None}, {}),  # Personal is not granted
                        ({"notebookId": str(ops.id)},
                         {"context": {"notebooks": [str(ops.id)]}})):
        refused = api.post(f"/conversations/{conversation_id}/turns", {
            "id": str(uuid.uuid4()), "query": "tidy", "expectedVersion": 0, "tidy": tidy,
            **extra})
        assert refused.status_code == 409, refused.content
        assert refused.json()["error"]["code"] == "context_unavailable"
    made = api.post(f"/conversations/{conversation_id}/turns", {
        "id": str(uuid.uuid4()), "query": "tidy", "expectedVersion": 0,
        "tidy": {"notebookId": str(ops.id)}})
    assert made.status_code == 202
    assert made.json()["data"]["tidy"] == {"notebookId": str(ops.id)}
    assert chat_requests(provider) == []


def test_the_notebook_page_starts_a_tidy_up(owner, provider, web):
    ops = factories.notebook(owner, "Ops")
    page = web.get(f"/notebooks/{ops.id}/").content.decode()
    assert f'action="/ask/tidy/{ops.id}"' in page and "Tidy this notebook" in page
    ids = {"conversation_id": str(uuid.uuid4()), "turn_id": str(uuid.uuid4())}
    response = web.post(f"/ask/tidy/{ops.id}", ids)
    assert response.status_code == 302
    assert response["Location"] == f"/ask/{ids['conversation_id']}/"
    assert web.post(f"/ask/tidy/{ops.id}", ids).status_code == 302  # a double submit
    with tenant(owner):
        [turn] = Turn.objects.all()
    assert turn.tidy == {"notebookId": str(ops.id)}
    assert web.post(f"/ask/tidy/{ops.id}", {"conversation_id": "x"}).status_code == 400
