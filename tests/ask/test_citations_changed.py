"""A citation goes stale only when what it cited changed (issue 36 item 3.3): pinning,
tagging and moving a cited note — and undoing each — make new versions but leave its
text, so neither the turn's JSON (`sourcesChanged`) nor the Ask page says "changed
since"; editing its words does (and editing them back undoes that); deleting it, or a
grant that no longer reaches it, does too."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from notebooks import services as notes
from notebooks.selectors import note_get
from tests import factories
from tests.api.conftest import Caller, data, new_key
from tests.ask.helpers import generate
from tests.ask.test_ask import answer, index_all
from tests.ask.test_ask_views import ask_form
from tests.factories import op

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_clean_vector_index")]

TEXT = "The boiler is serviced every October by Hendrik."


def retag_pin_and_move(owner, note_id, elsewhere) -> int:
    """Pin and unpin, tag and undo the tag, move and undo the move — as the website does
    them. Returns the note's version after (seven versions on)."""
    notes.note_update(actor=owner, operation_id=op(), note_id=note_id, pinned=True)
    notes.note_update(actor=owner, operation_id=op(), note_id=note_id, pinned=False)
    tagged = op()
    assert notes.note_tag(actor=owner, operation_id=tagged, items=[str(note_id)],
                          add="heating").items[0].status == "tagged"
    notes.note_batch_undo(actor=owner, operation_id=op(), batch_id=tagged)
    moved = op()
    assert notes.note_move_many(actor=owner, operation_id=moved, items=[str(note_id)],
                                notebook_id=elsewhere).items[0].status == "moved"
    notes.note_batch_undo(actor=owner, operation_id=op(), batch_id=moved)
    return 7


def test_the_turn_json_marks_only_a_change_of_the_cited_text(owner, provider):
    house = factories.notebook(owner, "House")
    archive = factories.notebook(owner, "Archive")
    note = factories.note(owner, TEXT, notebook_id=house.id)
    index_all(owner)
    key, agent = new_key(owner)
    api = Caller(Client(), key)
    conversation = data(api.post("/conversations", {"id": str(uuid.uuid4())}))
    turn = data(api.post(f"/conversations/{conversation['id']}/turns", {
        "id": str(uuid.uuid4()), "query": "When is the boiler serviced?",
        "expectedVersion": 0}))
    assert turn["sourcesChanged"] == []  # pending: nothing cited yet
    provider.chat_replies = [answer("answered", ("In October.", [f"note:{note.id}@1"]))]
    generate(agent)
    url = f"/conversations/{conversation['id']}/turns/{turn['id']}"

    def changed() -> list[dict]:
        one = data(api.get(url))["sourcesChanged"]
        whole = data(api.get(f"/conversations/{conversation['id']}"))["turns"][0]
        assert whole["sourcesChanged"] == one  # the same on every read of the turn
        return one

    assert data(api.get(url))["result"]["sources"][0]["version"] == 1 and changed() == []
    version = retag_pin_and_move(owner, note.id, archive.id)
    assert note_get(actor=owner, note_id=note.id).version == version
    assert changed() == []  # seven new versions, the same words

    notes.note_update(actor=owner, operation_id=op(), note_id=note.id,
                      content=TEXT.replace("October", "November"))
    assert changed() == [{"noteId": str(note.id), "citedVersion": 1, "version": 8}]
    notes.note_update(actor=owner, operation_id=op(), note_id=note.id, content=TEXT)
    assert changed() == []  # the cited words again
    notes.note_forget(actor=owner, operation_id=op(), items=[{"id": str(note.id)}])
    assert changed() == [{"noteId": str(note.id), "citedVersion": 1, "version": None}]


def test_the_ask_page_says_changed_since_only_when_the_words_changed(owner, web, provider):
    house = factories.notebook(owner, "House")
    archive = factories.notebook(owner, "Archive")
    note = factories.note(owner, TEXT, notebook_id=house.id)
    index_all(owner)
    url = web.post("/ask/new", ask_form("When is the boiler serviced?"))["Location"]
    provider.chat_replies = [answer("answered", ("In October.", [f"note:{note.id}@1"]))]
    generate(factories.Actor.for_session(owner.account_id))

    retag_pin_and_move(owner, note.id, archive.id)
    page = web.get(url).content.decode()
    assert f'href="/notes/{note.id}/?v=1"' in page  # the chip still opens what was cited
    assert "note changed since" not in page and 'class="chip changed"' not in page
    assert "Re-ask with the notes as they are now" not in page

    notes.note_update(actor=owner, operation_id=op(), note_id=note.id,
                      content=TEXT.replace("October", "November"))
    page = web.get(url).content.decode()
    assert "note changed since (v1 → v8)" in page and 'class="chip changed"' in page
    assert "Re-ask with the notes as they are now" in page


def test_a_source_out_of_the_readers_grant_reads_as_changed(owner, provider):
    house = factories.notebook(owner, "House")
    note = factories.note(owner, TEXT, notebook_id=house.id)
    index_all(owner)
    key, agent = new_key(owner, personal=False, all_notebooks=False, notebooks=[house.id])
    api = Caller(Client(), key)
    conversation = data(api.post("/conversations", {"id": str(uuid.uuid4())}))
    turn = data(api.post(f"/conversations/{conversation['id']}/turns", {
        "id": str(uuid.uuid4()), "query": "When is the boiler serviced?",
        "expectedVersion": 0}))
    provider.chat_replies = [answer("answered", ("In October.", [f"note:{note.id}@1"]))]
    generate(agent)
    url = f"/conversations/{conversation['id']}/turns/{turn['id']}"
    assert data(api.get(url))["sourcesChanged"] == []
    elsewhere = factories.notebook(owner, "Elsewhere")
    notes.note_move(actor=owner, operation_id=op(), note_ids=[note.id],
                    notebook_id=elsewhere.id)
    assert data(api.get(url))["sourcesChanged"] == [
        {"noteId": str(note.id), "citedVersion": 1, "version": None}]
