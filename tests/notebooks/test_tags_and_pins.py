"""Tags and pins in the website and in recall (issue 20, item 5): the editor sets tags,
the note page pins and unpins (fenced by the version shown), the library filters by a
tag or by Pinned with chips that take the filter off, the sidebar counts both — and
recall narrows to one tag in every arm, declared ground truth included, never past a
grant."""

import re
import uuid

import pytest
from django.test import Client

from grove.kernel.errors import Invalid
from notebooks import services
from notebooks.models import Note
from notebooks.selectors.library import notebook_shelf
from notebooks.selectors.recall import recall
from notebooks.selectors.search import note_search
from tests import factories
from tests.api.conftest import Caller, new_key
from tests.factories import op
from tests.mcp.test_protocol import call

pytestmark = pytest.mark.django_db


def rows(html: str) -> list[str]:
    return re.findall(r'<a class="title" href="[^"]+">([^<]+)</a>', html)


def test_the_editor_saves_tags_typed_with_commas_or_spaces(owner, web):
    made = web.post("/notes/new", {"operation_id": uuid.uuid4(), "title": "Rye loaf",
                                   "content": "Bake at 230.", "kind": "fact",
                                   "tags": "Baking, #rye  weekend"})
    assert made.status_code == 302, made.content
    note = factories.note_row(owner, made["Location"].split("/")[2])
    assert note.tags == ["baking", "rye", "weekend"]
    page = web.get(f"/notes/{note.id}/").content.decode()
    assert 'value="baking, rye, weekend"' in page  # the editor shows them back
    assert '<a class="tag" href="/?tag=rye">#rye</a>' in page
    edited = web.post(f"/notes/{note.id}/edit", {
        "operation_id": uuid.uuid4(), "expected_version": 1, "title": "Rye loaf",
        "content": "Bake at 230.", "kind": "fact", "tags": "baking"})
    assert edited.status_code == 302
    note = factories.note_row(owner, note.id)
    assert (note.tags, note.version) == (["baking"], 2)


def test_a_bad_tag_keeps_the_draft_and_saves_nothing(owner, web):
    refused = web.post("/notes/new", {"operation_id": uuid.uuid4(), "title": "Draft",
                                      "content": "kept", "kind": "fact",
                                      "tags": "fine, not;fine"})
    assert refused.status_code == 400
    assert "letters (a–z), digits" in refused.content.decode()
    assert 'value="fine, not;fine"' in refused.content.decode()  # as typed, to correct
    eleven = ", ".join(f"t{i}" for i in range(11))
    assert web.post("/notes/new", {"operation_id": uuid.uuid4(), "title": "Draft",
                                   "content": "kept", "kind": "fact",
                                   "tags": eleven}).status_code == 400
    with factories.tenant(owner):
        assert not Note.objects.filter(content__startswith="Draft").exists()
    note = factories.note(owner, "Edited", tags=["keep"])
    bad_edit = web.post(f"/notes/{note.id}/edit", {
        "operation_id": uuid.uuid4(), "expected_version": 1, "title": "Edited",
        "content": "more", "kind": "fact", "tags": "x" * 40})
    assert bad_edit.status_code == 400
    assert factories.note_row(owner, note.id).tags == ["keep"]
    assert factories.note_row(owner, note.id).version == 1


def test_pinning_from_the_note_page_is_fenced_by_the_version_shown(owner, web):
    note = factories.note(owner, "Pin me")
    page = web.get(f"/notes/{note.id}/").content.decode()
    assert f'action="/notes/{note.id}/pin"' in page and 'name="pinned" value="1"' in page
    pinned = web.post(f"/notes/{note.id}/pin", {"pinned": "1", "expected_version": 1})
    assert pinned.status_code == 302
    row = factories.note_row(owner, note.id)
    assert (row.pinned, row.version) == (True, 2)
    page = web.get(f"/notes/{note.id}/").content.decode()
    assert 'name="pinned" value="0"' in page and ">Unpin</button>" in page
    assert '<span class="badge pinned">pinned</span>' in page
    # A page shown before someone else's change: the unpin is refused, nothing changes.
    services.note_update(actor=owner, operation_id=op(), note_id=note.id, content="Pin me!")
    stale = web.post(f"/notes/{note.id}/pin", {"pinned": "0", "expected_version": 2})
    assert stale.status_code == 409
    assert "changed after the page was shown" in stale.content.decode()
    assert factories.note_row(owner, note.id).pinned is True
    for bad in ({"pinned": "maybe"}, {"pinned": "1", "expected_version": "zero"}, {}):
        assert web.post(f"/notes/{note.id}/pin", bad).status_code == 400
    assert web.post(f"/notes/{uuid.uuid4()}/pin", {"pinned": "1"}).status_code == 404
    # Another account's note is the same 404, and stays as it was.
    other = factories.owner("other")
    theirs = factories.note(other, "theirs")
    assert web.post(f"/notes/{theirs.id}/pin", {"pinned": "1"}).status_code == 404
    assert factories.note_row(other, theirs.id).pinned is False


def test_the_library_filters_by_tag_and_by_pinned_with_chips_to_take_them_off(owner, web):
    kitchen = factories.notebook(owner, "Kitchen")
    factories.note(owner, "Sourdough", tags=["bread"], notebook_id=kitchen.id)
    factories.note(owner, "Focaccia", tags=["bread", "italian"], pinned=True)
    factories.note(owner, "Risotto", tags=["italian"])
    factories.note(owner, "Shopping list", pinned=True)
    assert rows(web.get("/", {"tag": "bread"}).content.decode()) == ["Focaccia", "Sourdough"]
    assert rows(web.get("/", {"tag": "#Bread"}).content.decode()) == ["Focaccia", "Sourdough"]
    both = web.get("/", {"tag": "italian", "pinned": "1"}).content.decode()
    assert rows(both) == ["Focaccia"]
    # Each chip takes its own filter off and keeps the other.
    assert 'href="?tag=italian"' in both and 'href="?pinned=1"' in both
    assert rows(web.get("/", {"pinned": "1"}).content.decode()) == ["Shopping list",
                                                                    "Focaccia"]
    in_kitchen = web.get("/", {"tag": "bread", "notebook": str(kitchen.id)}).content.decode()
    assert rows(in_kitchen) == ["Sourdough"]
    assert rows(web.get("/", {"tag": "bread", "q": "focac"}).content.decode()) == ["Focaccia"]
    # An HTMX search keeps the filter: the form carries it.
    assert '<input type="hidden" name="tag" value="bread">' in web.get(
        "/", {"tag": "bread"}).content.decode()
    refused = web.get("/", {"tag": "not a tag!"})
    assert refused.status_code == 400 and "letters (a–z)" in refused.content.decode()
    assert web.get("/", {"pinned": "yes"}).status_code == 400


def test_the_sidebar_counts_pinned_and_tagged_live_notes(owner, web):
    shelf = factories.notebook(owner, "Shelf")
    factories.note(owner, "a", tags=["bread"], pinned=True)
    factories.note(owner, "b", tags=["bread"], pinned=True, notebook_id=shelf.id)
    gone = factories.note(owner, "c", pinned=True, tags=["bread"])
    services.note_forget(actor=owner, operation_id=op(), items=[gone.id])
    factories.note(factories.owner("stranger"), "theirs", pinned=True, tags=["bread"])
    labels = notebook_shelf(actor=owner).labels
    assert (labels.pinned, labels.tags) == (2, [("bread", 2)])
    html = web.get("/").content.decode()
    assert re.search(r'href="/\?pinned=1"[^>]*><span class="name">Pinned</span> '
                     r'<span class="count">2<', html)
    assert re.search(r'href="/\?tag=bread"[^>]*><span class="name">#bread</span> '
                     r'<span class="count">2<', html)
    services.notebook_archive(actor=owner, operation_id=op(), notebook_id=shelf.id)
    labels = notebook_shelf(actor=owner).labels
    assert (labels.pinned, labels.tags) == (1, [("bread", 1)])
    # A connection reads the sidebar's notebooks, never the account's labels.
    agent = factories.connection(owner, all_notebooks=True, personal=True)
    assert notebook_shelf(actor=agent).labels.tags == []


def test_search_over_rest_filters_pinned():
    owner = factories.owner()
    factories.note(owner, "pinned plan", pinned=True)
    factories.note(owner, "loose plan")
    api = Caller(Client(), new_key(owner)[0])
    only = api.post("/notes/search", {"query": "plan", "pinned": True}).json()
    assert [i["note"]["content"] for i in only["data"]] == ["pinned plan"]
    others = api.post("/notes/search", {"query": "plan", "pinned": False}).json()
    assert [i["note"]["content"] for i in others["data"]] == ["loose plan"]
    assert api.post("/notes/search", {"pinned": "sometimes"}).status_code == 422
    # The filter is part of the cursor: a page of one search does not continue another.
    factories.note(owner, "third plan")
    cursor = api.post("/notes/search", {"pinned": False, "limit": 1}).json()["meta"][
        "nextCursor"]
    assert cursor
    assert api.post("/notes/search", {"pinned": True, "cursor": cursor}).status_code == 400


def _contents(result) -> list[str]:
    return sorted(item.note.content for item in result.data)


def test_recall_narrows_to_a_tag_in_both_arms_and_the_profile():
    owner = factories.owner()
    factories.note(owner, "Glacier moraine survey notes", tags=["field"])
    factories.note(owner, "Glacier moraine lecture slides", tags=["teaching"])
    factories.note(owner, "Prefers field work at dawn", kind="preference", tags=["field"])
    factories.note(owner, "Prefers tea", kind="preference")
    assert _contents(recall(actor=owner, query="glacier moraine", tag="field")) == [
        "Glacier moraine survey notes"]
    assert len(recall(actor=owner, query="glacier moraine").data) == 2
    assert _contents(recall(actor=owner, tag="#Field")) == [
        "Glacier moraine survey notes", "Prefers field work at dawn"]
    assert recall(actor=owner, query="glacier", tag="nothing").data == []
    with pytest.raises(Invalid) as refused:
        recall(actor=owner, query="glacier", tag="no good!")
    assert refused.value.code == "invalid_tags"


def test_recall_by_tag_keeps_declared_truth_to_the_tag_and_the_grant():
    owner = factories.owner()
    ops = factories.notebook(owner, "Ops")
    hidden = factories.notebook(owner, "Hidden")
    rule = factories.note(owner, "Deploys need a second reviewer", notebook_id=ops.id,
                          tags=["deploy"])
    factories.note(owner, "Deploy windows are Tuesdays", notebook_id=ops.id)
    factories.note(owner, "Deploy secrets rotate monthly", notebook_id=hidden.id,
                   tags=["deploy"])
    untagged_rule = factories.note(owner, "Deploys freeze in December", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id,
                           note_ids=[rule.id, untagged_rule.id], policy="prioritize")
    agent = factories.connection(owner, notebooks=[ops.id])
    found = recall(actor=agent, query="deploy", tag="deploy", place=[ops.id])
    assert _contents(found) == ["Deploys need a second reviewer"]
    profile = recall(actor=agent, tag="deploy")
    assert _contents(profile) == ["Deploys need a second reviewer"]
    key, _ = new_key(owner, notebooks=[ops.id], all_notebooks=False)
    over_rest = Caller(Client(), key).post("/recall", {"query": "deploy", "tag": "deploy"})
    assert over_rest.status_code == 200, over_rest.content
    assert all("deploy" in item["note"]["tags"] for item in over_rest.json()["data"])
    over_mcp = call(key, "recall", {"query": "deploy", "tag": "deploy"})
    assert not over_mcp.get("isError"), over_mcp
    assert over_mcp["structuredContent"]["meta"]["returned"] == len(
        over_rest.json()["data"])
    assert call(key, "recall", {"query": "deploy", "tag": "no good!"})["isError"] is True


def test_search_by_pinned_is_a_selector_filter():
    owner = factories.owner()
    factories.note(owner, "one", pinned=True)
    factories.note(owner, "two")
    assert [i.note.content for i in note_search(actor=owner, pinned=True).data] == ["one"]
    assert [i.note.content for i in note_search(actor=owner, pinned=False).data] == ["two"]
