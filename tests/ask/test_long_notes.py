"""Ask over long notes (issue 37 item 4): a strictly selected long note reaches the model
as its passages that match the question, cited as passages, with coverage saying how
many of how many; a proposal edits one passage's span of the note, its preview diffs
that section (labelled by its heading), and apply changes nothing else — fenced by the
note's version like any edit. The stand-in model returns the proposal (and an attack
naming a passage it was not sent)."""

from __future__ import annotations

import json

import pytest

from passages.rules import pieces
from tests import factories
from tests.ask.helpers import chat_requests
from tests.ask.proposal_helpers import act, asked, proposal, stored

pytestmark = pytest.mark.django_db

TOPICS = ["soil", "compost", "seeds", "watering", "pruning", "greenhouse", "harvest",
          "storage", "pests", "tools"]


def garden_book() -> str:
    sections = []
    for topic in TOPICS:
        body = " ".join(f"The {topic} routine, step {i}, is written down here." for i in range(30))
        extra = " The thermostat keeps the greenhouse at twelve degrees." \
            if topic == "greenhouse" else ""
        sections.append(f"## {topic.capitalize()}\n\n{body}{extra}")
    return "# Garden book\n\n" + "\n\n".join(sections)


def sent(provider) -> str:
    return json.dumps(chat_requests(provider)[-1]["messages"], ensure_ascii=False)


def test_a_picked_long_note_is_sent_as_its_matching_passages_and_a_section_is_edited(
        owner, provider, web):
    text = garden_book()
    note = factories.note(owner, text, kind="note")
    cut = pieces("note", text)
    assert len(cut) > 10
    hot = next(p for p in cut if "thermostat" in p.text)
    cite = f"note:{note.id}@1#{hot.position}"
    edited = hot.text.replace("twelve degrees", "ten degrees")
    conversation, turn = asked(
        owner, provider, "What temperature does the greenhouse thermostat keep?", [note],
        proposal("edit", [cite], content=edited, summary="Ten degrees now."),
        proposal("edit", [f"note:{note.id}@1#1"], content="# Hijacked",
                 summary="A passage it was not sent."),
        cite=cite)
    # The model saw the matching passage, cited as the passage — never the whole book.
    shown = sent(provider)
    assert cite in shown and "thermostat" in shown
    assert "The storage routine" not in shown and len(shown) < len(text)
    coverage = turn.result.context_coverage
    [document] = coverage.documents
    assert (document.id, document.passages, document.title) == (note.id, len(cut),
                                                                "Garden book")
    assert 1 <= document.supplied <= 4 and document.matched and not coverage.complete
    assert coverage.truncated == 0
    # The edit of the passage: its preview diffs that section alone, named by heading.
    [change] = turn.proposals
    [diff] = change.preview.diffs
    sections = [r.text for r in diff.rows if r.kind == "section"]
    assert sections == ["Garden book › Greenhouse"]
    [added] = [r.text for r in diff.rows if r.kind == "add"]
    [deleted] = [r.text for r in diff.rows if r.kind == "del"]
    assert added == deleted.replace("twelve degrees", "ten degrees") != deleted
    assert [p.drop_reason for p in stored(owner) if p.state == "dropped"] == ["unseen_note"]
    applied = act(web, conversation, turn, change.id, "apply")
    assert applied.status_code == 200, applied.content
    after = factories.note_row(owner, note.id)
    assert after.version == 2
    assert after.content == text[:hot.start] + edited + text[hot.end:]
    assert after.content == text.replace("twelve degrees", "ten degrees")


def test_a_passage_edit_is_fenced_by_the_notes_version(owner, provider, web):
    from notebooks import services

    text = garden_book()
    note = factories.note(owner, text, kind="note")
    hot = next(p for p in pieces("note", text) if "thermostat" in p.text)
    cite = f"note:{note.id}@1#{hot.position}"
    conversation, turn = asked(owner, provider, "greenhouse thermostat temperature?", [note],
                               proposal("edit", [cite], content="Fourteen degrees."),
                               cite=cite)
    [change] = turn.proposals
    services.note_update(actor=owner, operation_id=factories.op(), note_id=note.id,
                         content=text + "\n\nA later line.")
    refused = act(web, conversation, turn, change.id, "apply")
    assert refused.status_code == 409, refused.content
    assert factories.note_row(owner, note.id).content == text + "\n\nA later line."
