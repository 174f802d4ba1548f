"""The verdict on a held change to declared ground truth (SPEC §10), from the fake
OpenAI-compatible server through the real `openai` client: the model is sent the declared
set as it stood before the change — the prior head among it — first, and the revision
after it; the verdict is computed from its per-claim findings; anything unusable fails
closed to needs_review."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from ask.verification import verdict_of
from grove.kernel import jobs
from grove.kernel.tenancy import tenant
from notebooks import services
from notebooks.models import PendingRevision
from notebooks.rules import VERIFY_JOB
from tests import factories
from tests.ask.helpers import chat_requests
from tests.factories import op

pytestmark = pytest.mark.django_db


@pytest.fixture
def held(owner):
    ops = factories.notebook(owner, "Ops")
    contract = factories.note(owner, "Orders carry id and total.", notebook_id=ops.id)
    currency = factories.note(owner, "Totals are in euros.", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id,
                           note_ids=[contract.id, currency.id], policy="restrict")
    writer = factories.connection(owner, notebooks=[ops.id])
    change = services.note_update(actor=writer, operation_id=op(), note_id=contract.id,
                                  content="Orders carry id and total, in dollars.")
    return contract, currency, change.pending_revision.id


def verify(owner):
    while jobs.run_batch(account_id=owner.account_id, kind=VERIFY_JOB):
        pass


def stored(owner, pending_id):
    with tenant(owner):
        return PendingRevision.objects.get(id=pending_id)


def reply(*findings):
    return json.dumps({"findings": [
        {"claim": c, "finding": f, "note_id": n, "why": "because"} for c, f, n in findings]})


def test_the_reference_comes_first_with_the_prior_head(owner, provider, held):
    contract, currency, pending_id = held
    provider.chat_replies = [reply(
        ("Orders carry id and total.", "supported", f"note:{contract.id}@1"),
        ("Totals are in dollars.", "contradicts", f"note:{currency.id}@1"))]
    verify(owner)
    row = stored(owner, pending_id)
    assert row.verdict == "contradicts"
    assert [f["finding"] for f in row.findings] == ["supported", "contradicts"]
    [request] = chat_requests(provider)
    sent = request["messages"][1]["content"]
    prior, other = f'<note id="note:{contract.id}@1">', f'<note id="note:{currency.id}@1">'
    assert sent.index(prior) < sent.index(other) < sent.index("<revision>")
    assert "Orders carry id and total.\n</note>" in sent  # the prior head, not the change
    assert sent.index("in dollars") > sent.index("<revision>")
    assert request["response_format"]["json_schema"]["name"] == "grove_verification"


@pytest.mark.parametrize("answer", ["not json", json.dumps({"findings": []})])
def test_an_unusable_answer_fails_closed(owner, provider, held, answer):
    _, _, pending_id = held
    provider.chat_replies = [answer]
    verify(owner)
    assert stored(owner, pending_id).verdict == "needs_review"


def test_without_a_model_the_change_needs_review(owner, held):
    _, _, pending_id = held
    with override_settings(GROVE_LLM_BASE_URL=""):
        verify(owner)
    assert stored(owner, pending_id).verdict == "needs_review"


def test_the_verdict_is_computed_from_the_findings():
    from ask.verification import Finding

    def of(*kinds):
        return verdict_of([Finding(claim="c", finding=k, note_id="", why="") for k in kinds])

    assert of("supported", "supported") == "supported"
    assert of("supported", "unverifiable") == "unverifiable"
    assert of("unverifiable", "contradicts", "supported") == "contradicts"
    assert of() == "needs_review"
