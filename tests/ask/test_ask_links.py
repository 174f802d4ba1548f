"""Ask follows links (issue 38 item 5): when a passage found for the question links to
another note, that note's best passage joins the evidence, marked for the model and on
the page as reached through the link. Grants are checked on every hop — a link into a
notebook the asking connection was not granted reaches nothing — and a strict selection
never follows a link out of itself. The stand-in model answers from what it was sent,
and one that cites a note it was never shown (an injected id) has that citation
dropped."""

from __future__ import annotations

import json

import pytest

from ask.services import ask
from grove.kernel.tenancy import tenant
from links.models import Link
from tests import factories
from tests.ask.helpers import chat_requests, generate, start, submit, turn_of
from tests.ask.proposal_helpers import act, asked, proposal
from tests.ask.test_ask import answer, index_all

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_clean_vector_index")]

QUESTION = "Who owns billing?"
LINKING = "Billing is owned by the [[Payments squad]] since the spring reorganisation."
LINKED = "# Payments squad\n\nDana Okafor is in charge; standups at nine."


def prompt_of(provider) -> str:
    return json.dumps(chat_requests(provider)[-1]["messages"], ensure_ascii=False)


def test_a_linked_note_answers_and_is_shown_as_reached_through_the_link(owner, provider, web):
    linking = factories.note(owner, LINKING, kind="note")
    linked = factories.note(owner, LINKED, kind="note")
    factories.note(owner, "The garden shed needs a new roof.", kind="note")
    index_all(owner)
    conversation = start(owner)
    provider.chat_replies = [answer("answered", (
        "Dana Okafor leads the squad that owns billing.",
        [linking.versioned_id, linked.versioned_id]))]
    turn = submit(owner, conversation, QUESTION)
    generate(owner)
    sent = prompt_of(provider)
    # The model was shown the linked note, marked as reached from the linking one.
    assert f'<note id=\\"{linked.versioned_id}\\"' in sent
    assert f'reached-through-link-from=\\"{linking.versioned_id}\\"' in sent
    assert "Dana Okafor" in sent and "garden shed" not in sent
    done = turn_of(owner, conversation, turn)
    assert done.result.status == "answered"
    assert [b.citations for b in done.result.blocks] == [[linking.versioned_id,
                                                         linked.versioned_id]]
    by_note = {s.note_id: s for s in done.result.sources}
    assert by_note[linked.id].via == linking.id
    assert by_note[linked.id].via_label == "Billing is owned by the Payments squad since " \
                                           "the spring reorganisation."
    assert by_note[linking.id].via is None
    page = web.get(f"/ask/{conversation.id}/").content.decode()
    assert "reached through a link from “Billing is owned by the Payments squad" in page
    # The same answer over the stateless route says the same of the source.
    provider.chat_replies = [answer("answered", ("Dana Okafor.", [linked.versioned_id]))]
    stateless = ask(actor=owner, query=QUESTION)
    assert {s.note.id: s.via for s in stateless.sources}[linked.id] == linking.id


def test_a_link_into_a_notebook_outside_the_grant_reaches_nothing(owner, provider):
    work = factories.notebook(owner, "Work")
    private = factories.notebook(owner, "Private")
    linking = factories.note(owner, LINKING, kind="note", notebook_id=work.id)
    hidden = factories.note(owner, LINKED, kind="note", notebook_id=private.id)
    index_all(owner)
    agent = factories.connection(owner, notebooks=[work.id])
    # The stand-in model cites the hidden note anyway (an id injected into a note).
    provider.chat_replies = [answer("answered", (
        "Dana Okafor leads it.", [linking.versioned_id, hidden.versioned_id]))]
    result = ask(actor=agent, query=QUESTION)
    sent = prompt_of(provider)
    assert linking.versioned_id in sent
    assert str(hidden.id) not in sent and "Dana Okafor" not in sent
    assert [s.note.id for s in result.sources] == [linking.id]
    assert [b.citations for b in result.blocks] == [[linking.versioned_id]]
    # The owner, who can read both, is shown the linked note.
    provider.chat_replies = [answer("answered", ("Dana.", [hidden.versioned_id]))]
    mine = ask(actor=owner, query=QUESTION)
    assert hidden.id in [s.note.id for s in mine.sources]
    # A conversation in the Work notebook does not leave it through the link either.
    conversation = start(owner, notebook_id=work.id)
    provider.chat_replies = [answer("answered", ("Billing.", [linking.versioned_id]))]
    turn = submit(owner, conversation, QUESTION)
    generate(owner)
    assert str(hidden.id) not in prompt_of(provider)
    assert [s.note_id for s in turn_of(owner, conversation, turn).result.sources] == [
        linking.id]


def test_a_strict_selection_never_follows_a_link_out_of_itself(owner, provider):
    team = factories.notebook(owner, "Team")
    elsewhere = factories.notebook(owner, "Elsewhere")
    for i in range(14):  # more than a turn is sent: the notebook is searched
        factories.note(owner, f"Sprint retro {i}: action item {i} was closed.",
                       kind="note", notebook_id=team.id)
    factories.note(owner, "Billing is owned by the [[Payments squad]]; see also "
                          "[[Invoices desk]].", kind="note", notebook_id=team.id)
    inside = factories.note(owner, LINKED, kind="note", notebook_id=team.id)
    outside = factories.note(owner, "# Invoices desk\n\nRun by Lee Moreau.", kind="note",
                             notebook_id=elsewhere.id)
    picked = factories.note(owner, "Billing questions go to the [[Invoices desk]].",
                            kind="note")
    index_all(owner)
    conversation = start(owner)
    provider.chat_replies = [answer("answered", ("Dana.", [inside.versioned_id]))]
    turn = submit(owner, conversation, QUESTION, context={
        "notes": [str(picked.id)], "notebooks": [str(team.id)], "only": True})
    generate(owner)
    sent = prompt_of(provider)
    # Inside the selection the link is followed; out of it, from the searched notebook
    # or from the picked note, it is not.
    assert f'<note id=\\"{inside.versioned_id}\\"' in sent
    assert "reached-through-link-from" in sent
    assert str(outside.id) not in sent and "Lee Moreau" not in sent
    done = turn_of(owner, conversation, turn)
    assert done.result.context_coverage.notebooks[0].searched
    assert outside.id not in [s.note_id for s in done.result.sources]
    assert {s.note_id: s.via for s in done.result.sources}[inside.id] is not None


def test_a_note_an_applied_proposal_creates_resolves_the_links_waiting_for_it(
        owner, provider, web):
    hub = factories.note(owner, "# Hub\n\nWho runs the [[Payments squad]]?", kind="note")
    with tenant(owner):
        assert Link.objects.get(note_id=hub.id).target_note_id is None
    conversation, turn = asked(owner, provider, "Write down who runs the squad", [hub],
                               proposal("create", content=LINKED, note_kind="fact",
                                        notebook="personal"))
    [shown] = turn.proposals
    assert act(web, conversation, turn, shown.id, "apply").status_code == 200
    with tenant(owner):
        made = Link.objects.select_related("target_note").get(note_id=hub.id).target_note
    assert made is not None and made.content == LINKED
    assert act(web, conversation, turn, shown.id, "undo").status_code == 200
    with tenant(owner):
        assert Link.objects.get(note_id=hub.id).target_note_id is None
