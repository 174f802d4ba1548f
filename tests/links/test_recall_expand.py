"""Recall follows links on request (issue 38 item 4): with `expand: "links"` the notes
linked to and from what matched join the answer, each marked as reached through a link
(`matched: ["link"]`, `via`), ranked below the note it was reached from; without it the
answer is as before. A link into a notebook outside the caller's grant brings nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from tests import factories
from tests.api.conftest import Caller, data, error, new_key
from tests.mcp.helpers import modern

pytestmark = pytest.mark.django_db


def _world():
    owner = factories.owner()
    shared = factories.notebook(owner, "Shared")
    private = factories.notebook(owner, "Private")
    billing = factories.note(owner, "# Billing\n\nBilling is owned by the [[Payments team]] "
                             "and reported by [[Finance desk]].", kind="note",
                             notebook_id=shared.id)
    team = factories.note(owner, "# Payments team\n\nLed by Priya Raman since March.",
                          kind="note", notebook_id=shared.id)
    factories.note(owner, "# Finance desk\n\nRun by Tomas Ek.", kind="note",
                   notebook_id=private.id)
    key, _ = new_key(owner, personal=False, all_notebooks=False, notebooks=[shared.id])
    return key, billing, team


def test_expand_links_adds_the_linked_note_marked_as_reached_through_the_link():
    key, billing, team = _world()
    api = Caller(Client(), key)
    plain = data(api.post("/recall", {"query": "who owns billing"}))
    assert [item["note"]["id"] for item in plain] == [str(billing.id)]
    expanded = api.post("/recall", {"query": "who owns billing", "expand": "links"})
    items = data(expanded)
    assert [(i["note"]["id"], i["matched"], i.get("via")) for i in items] == [
        (str(billing.id), ["lexical"], None), (str(team.id), ["link"], str(billing.id))]
    assert items[1]["score"] == pytest.approx(items[0]["score"] / 2, abs=1e-6)
    assert "Priya Raman" in items[1]["note"]["content"]
    assert "Tomas" not in expanded.content.decode()  # linked, but outside the grant
    assert expanded.json()["meta"]["available"] == 2

    said = modern(key, "tools/call", {"name": "recall", "arguments": {
        "query": "who owns billing", "expand": "links"}}).json()["result"]
    assert said["structuredContent"]["data"][1]["via"] == f"note:{billing.id}"
    assert f"reached through a link from note:{billing.id}" in said["content"][0]["text"]


def test_expand_takes_only_links():
    key, _, _ = _world()
    error(Caller(Client(), key).post("/recall", {"query": "billing", "expand": "tags"}),
          422, "invalid_request")


def test_under_restrict_a_link_reaches_only_what_may_answer():
    """In a notebook whose ground truth restricts answers to its declared notes, a link
    from a declared note to an undeclared fact brings nothing: only declared notes (and
    the kinds restrict leaves open, such as preferences) answer there."""
    from notebooks import services
    from notebooks.selectors.recall import recall

    owner = factories.owner()
    ops = factories.notebook(owner, "Ops")
    rule = factories.note(owner, "# Billing rule\n\nBilling is owned by the "
                          "[[Payments team]].", kind="fact", notebook_id=ops.id)
    undeclared = factories.note(owner, "# Payments team\n\nLed by Priya Raman.",
                                kind="fact", notebook_id=ops.id)
    liked = factories.note(owner, "# Pref\n\nBilling mails in plain text, see "
                           "[[Billing rule]].", kind="preference", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[rule.id],
                           policy="restrict")
    found = recall(actor=owner, query="who owns billing", place=ops.id, expand="links")
    ids = [item.note.id for item in found.data]
    assert rule.id in ids and undeclared.id not in ids
    assert liked.id in ids
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[rule.id],
                           policy="prioritize")
    opened = recall(actor=owner, query="who owns billing", place=ops.id, expand="links")
    assert undeclared.id in [item.note.id for item in opened.data]
