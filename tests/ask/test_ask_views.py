"""The website's Ask mode through Django's test client (the owner's session): start a
conversation, a pending turn that polls, cited answers whose chips link to the exact
revision, "note changed since (v1 → v2)" with re-ask, strict selection refused before
any model call, history search, the note page's `?v=`."""

from __future__ import annotations

import re
import uuid

import pytest
from django.test import override_settings

from ask.rules import QUERY_MAX_CHARS
from ask.selectors import conversation_get, conversation_list
from ask.services import conversation_create, turn_submit
from notebooks import services as notes
from tests import factories
from tests.ask.helpers import generate
from tests.ask.proposal_helpers import proposal, reply
from tests.ask.test_ask import answer, index_all

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_clean_vector_index")]


def ask_form(query: str, **extra) -> dict:
    return {"conversation_id": str(uuid.uuid4()), "turn_id": str(uuid.uuid4()),
            "expected_version": "0", "query": query, "format": "markdown", **extra}


def test_ask_cite_then_the_note_changes(owner, web, provider):
    note = factories.note(owner, "The boiler is serviced every **October**.")
    index_all(owner)
    home = web.get("/ask/")
    assert home.status_code == 200 and b"Ask your notes" in home.content
    assert b"No conversations yet" in home.content
    form = ask_form("When is the boiler serviced?")
    started = web.post("/ask/new", form)
    assert started.status_code == 302
    url = started["Location"]
    assert web.post("/ask/new", form)["Location"] == url  # a double submit asks once
    page = web.get(url).content.decode()
    assert 'data-status="pending"' in page and "hx-trigger=\"every 1s\"" in page

    provider.chat_replies = [answer("answered", ("Every **October**.", [f"note:{note.id}@1"]))]
    me = factories.Actor.for_session(owner.account_id)
    assert generate(me) == 1
    page = web.get(url).content.decode()
    assert 'data-status="completed"' in page and "<strong>October</strong>" in page
    assert f'href="/notes/{note.id}/?v=1"' in page
    assert "note changed since" not in page

    conversation_id = uuid.UUID(url.rstrip("/").rsplit("/", 1)[1])
    [turn] = conversation_get(actor=owner, conversation_id=conversation_id).turns
    partial = web.get(f"/ask/{conversation_id}/turns/{turn.id}",
                      headers={"HX-Request": "true"}).content.decode()
    assert partial.strip().startswith("<li") and "hx-trigger" not in partial  # polling stops

    notes.note_update(actor=owner, operation_id=uuid.uuid4(), note_id=note.id,
                      content="The boiler is serviced every **November**.")
    old = web.get(f"/notes/{note.id}/?v=1").content.decode()
    assert "<strong>October</strong>" in old and "it is now at v2" in old
    assert "no version" in web.get(f"/notes/{note.id}/?v=9").content.decode()
    page = web.get(url).content.decode()
    assert "note changed since (v1 → v2)" in page
    reask_id = re.search(r'class="reask">.*?name="turn_id" value="([0-9a-f-]+)"', page,
                         re.DOTALL)[1]
    provider.chat_replies = [
        '{"question": "When is the boiler serviced?"}',
        answer("answered", ("Every **November**.", [f"note:{note.id}@2"]))]
    assert web.post(f"/ask/{conversation_id}/turns/{turn.id}/reask",
                    {"turn_id": reask_id}).status_code == 302
    web.post(f"/ask/{conversation_id}/turns/{turn.id}/reask", {"turn_id": reask_id})
    detail = conversation_get(actor=owner, conversation_id=conversation_id)
    assert [t.query for t in detail.turns] == ["When is the boiler serviced?"] * 2
    generate(me)
    page = web.get(url).content.decode()
    assert f'href="/notes/{note.id}/?v=2"' in page and "<strong>November</strong>" in page


def test_a_strict_question_with_an_unreachable_source_is_refused(owner, web, provider):
    stranger = factories.owner()
    theirs = factories.note(stranger, "Not yours.")
    response = web.post("/ask/new", ask_form("What is this?", notes=[str(theirs.id)],
                                             only="on"))
    assert response.status_code == 409
    assert "no longer reachable" in response.content.decode() or \
        "not reachable" in response.content.decode()
    assert conversation_list(actor=owner)[0] == []  # nothing left behind
    assert provider.requests == []
    # The form comes back with the question and fresh ids: fixing the pick works.
    page = response.content.decode()
    assert "What is this?" in page
    fresh = dict(re.findall(r'name="(conversation_id|turn_id)" value="([0-9a-f-]+)"', page))
    mine = factories.note(owner, "This is the thing.")
    retried = web.post("/ask/new", {**ask_form("What is this?"), **fresh,
                                    "notes": [str(mine.id)], "only": "on"})
    assert retried.status_code == 302


def test_too_many_picked_sources_is_a_form_error(owner, web):
    picked = [str(factories.note(owner, f"Note {i}").id) for i in range(13)]
    response = web.post("/ask/new", ask_form("Which?", notes=picked))
    assert response.status_code == 400 and "Pick at most 12 notes." in response.content.decode()
    assert conversation_list(actor=owner)[0] == []


def test_source_picker_and_history_search(owner, web):
    note = factories.note(owner, "Packing list for the Lisbon trip.")
    factories.note(owner, "Groceries.")
    picker = web.get("/ask/sources", {"find": "Lisbon"}).content.decode()
    assert f'value="{note.id}"' in picker and "Groceries" not in picker
    kept = web.get("/ask/sources", {"find": "Groceries", "notes": [str(note.id)]}).content
    assert kept.decode().count('checked') == 1 and b"Lisbon" in kept
    for title in ("Lisbon trip", "Tax return"):
        conversation_create(actor=owner, conversation_id=uuid.uuid4(), title=title)
    found = web.get("/ask/", {"q": "LISBON", "history": "1"},
                    headers={"HX-Request": "true"}).content.decode()
    assert found.strip().startswith('<section class="card ask-history"')
    assert "Lisbon trip" in found and "Tax return" not in found
    assert "Ask about this note" in web.get(f"/notes/{note.id}/").content.decode()
    preset = web.get("/ask/", {"note": str(note.id)}).content.decode()
    assert f'value="{note.id}" checked' in preset


def test_generation_off_says_so_and_shows_sources(owner, web):
    factories.note(owner, "The spare tyre is in the garage loft.")
    index_all(owner)
    with override_settings(GROVE_LLM_BASE_URL=None, GROVE_LLM_MODEL=None):
        home = web.get("/ask/").content.decode()
        assert "Answer generation is off" in home
        url = web.post("/ask/new", ask_form("Where is the spare tyre?"))["Location"]
        generate(factories.Actor.for_session(owner.account_id))
        page = web.get(url).content.decode()
    assert "Answer generation is off on this server" in page
    assert "spare tyre is in the garage loft" in page


def test_deleting_hides_the_conversation(owner, web):
    made, _ = conversation_create(actor=owner, conversation_id=uuid.uuid4(),
                                        title="Old chat")
    assert web.post(f"/ask/{made.id}/delete").status_code == 302
    assert web.get(f"/ask/{made.id}/").status_code == 404
    assert "Old chat" not in web.get("/ask/").content.decode()


def test_a_question_over_the_limit_is_a_form_error(owner, web):
    response = web.post("/ask/new", ask_form("x" * (QUERY_MAX_CHARS + 1)))
    assert response.status_code == 400
    assert f"at most {QUERY_MAX_CHARS} characters" in response.content.decode()
    assert conversation_list(actor=owner)[0] == []
    assert f'maxlength="{QUERY_MAX_CHARS}"' in web.get("/ask/").content.decode()


# What the Ask pages cost, pinned (STYLE §9): the session and the account, the page's one
# read in one tenant transaction (conversation, turns, their proposals with the versions
# of what they cover and which of it the reader still sees, the cited revisions the reader
# still reaches with their notes' versions now and whether they still read the same, the
# last turn's picked notes), the notebook tree (with its note counts, and the Pinned
# and tag counts: one more statement) and the history
# panel — each tenant transaction is a savepoint, the context set, the reads, the context
# restored.
CONVERSATION_PAGE_QUERIES = 29
HOME_QUERIES = 17
HOME_WITH_PICKED_NOTES_QUERIES = 23


def test_the_ask_pages_make_a_fixed_number_of_queries(owner, web, provider,
                                                      django_assert_num_queries):
    facts = [factories.note(owner, f"The boiler fact number {i}.") for i in range(3)]
    index_all(owner)
    made, _ = conversation_create(actor=owner, conversation_id=uuid.uuid4(), title="Boiler")
    for title in ("Other 1", "Other 2"):
        conversation_create(actor=owner, conversation_id=uuid.uuid4(), title=title)
    me = factories.Actor.for_session(owner.account_id)

    def ask(count):
        for _ in range(count):
            version = conversation_get(actor=owner, conversation_id=made.id).version
            turn_submit(actor=owner, conversation_id=made.id, turn_id=uuid.uuid4(),
                        query=f"Question {version} about the boiler?",
                        expected_version=version, context={"notes": [str(facts[1].id)]})
            cite = f"note:{facts[0].id}@1"  # each answer proposes two changes, too
            provider.chat_replies = ([] if version == 0 else
                                     ['{"question": "About the boiler?"}']) + [
                reply(cite, proposal("archive", [cite]),
                      proposal("edit", [cite], content="The boiler fact, reworded."))]
            generate(me)

    asked = 0
    for turns in (2, 6):  # more turns, the same queries: no read per turn or source
        ask(turns - asked)
        asked = turns
        with django_assert_num_queries(CONVERSATION_PAGE_QUERIES):
            page = web.get(f"/ask/{made.id}/").content.decode()
        assert page.count('data-status="completed"') == turns  # each answered, with sources
        assert page.count('class="proposal card"') == 2 * turns  # and its proposals
        assert f'value="{facts[1].id}" checked' in page  # the last selection, kept
    with django_assert_num_queries(HOME_QUERIES):
        assert web.get("/ask/").status_code == 200
    with django_assert_num_queries(HOME_WITH_PICKED_NOTES_QUERIES):
        home = web.get("/ask/", {"note": [str(n.id) for n in facts]}).content.decode()
    assert all(f'value="{n.id}" checked' in home for n in facts)


@pytest.mark.parametrize("version", ["²", "٣x", "9" * 5000, "-1", ""])
def test_a_malformed_reask_version_is_no_server_error(web, owner, version):
    """What the page posts as the conversation's version is read, never trusted: odd
    digits and huge numbers are as good as none (the question is asked again as it is)."""
    conversation, _ = conversation_create(actor=owner, conversation_id=uuid.uuid4())
    turn, _ = turn_submit(actor=owner, conversation_id=conversation.id, turn_id=uuid.uuid4(),
                          query="oven calibration", expected_version=0)
    response = web.post(f"/ask/{conversation.id}/turns/{turn.id}/reask",
                        {"turn_id": str(uuid.uuid4()), "expected_version": version})
    assert response.status_code == 302


def test_the_heading_says_what_a_conversation_really_searches(owner, web, provider):
    manual = factories.note(owner, "The boiler manual is in the loft.")
    archive = factories.notebook(owner, "Archive")
    index_all(owner)
    strict = web.post("/ask/new", ask_form("Where is the manual?", notes=[str(manual.id)],
                                           notebooks=[str(archive.id)], only="on"))
    page = web.get(strict["Location"]).content.decode()
    assert ("Searching only the picked sources: “The boiler manual is in the loft.”, "
            "Archive") in page
    assert "Searching All notebooks and Personal" not in page
    preferred = web.post("/ask/new", ask_form("Where is the manual?",
                                              notes=[str(manual.id)]))
    page = web.get(preferred["Location"]).content.decode()
    assert ("Searching All notebooks and Personal, the picked sources first "
            "(“The boiler manual is in the loft.”)") in page
    plain = web.get(web.post("/ask/new", ask_form("Where?"))["Location"]).content.decode()
    assert "Searching All notebooks and Personal ·" in plain
