"""Two applies of one proposal at once, on separate connections: one effect, and both
callers get the same applied proposal (SPEC §8)."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from ask.models import Proposal
from ask.services import proposal_apply
from notebooks.models import Revision
from tests import factories
from tests.ask.helpers import generate, start, submit, turn_of
from tests.ask.proposal_helpers import proposal, reply


@pytest.mark.slow
def test_two_concurrent_applies_have_one_effect(committed, provider):
    owner = factories.owner()
    note = factories.note(owner, "Version one.")
    conversation = start(owner)
    provider.chat_replies = [reply(note.versioned_id, proposal(
        "edit", [note.versioned_id], content="Version two."))]
    turn = submit(owner, conversation, "edit it", context={
        "notes": [str(note.id)], "notebooks": [], "only": True})
    generate(owner)
    [shown] = turn_of(owner, conversation, turn).proposals
    barrier = threading.Barrier(4)
    results: list = [None] * 4

    def worker(index):
        try:
            barrier.wait(timeout=10)
            results[index] = proposal_apply(actor=owner, conversation_id=conversation.id,
                                            turn_id=turn.id, proposal_id=shown.id)
        except Exception as exc:  # noqa: BLE001 - asserted below
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(isinstance(r, Exception) for r in results), results
    assert {r.applied_at for r in results} == {results[0].applied_at}
    assert all(r.state == "applied" for r in results)
    with factories.tenant(owner):
        assert Revision.objects.filter(note_id=note.id).count() == 2
        assert Proposal.objects.get(id=shown.id).state == "applied"
    assert factories.note_row(owner, note.id).content == "Version two."
