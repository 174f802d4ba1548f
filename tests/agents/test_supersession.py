"""Supersession (issue 39 item 7): a new memory that likely replaces an older one says
which (`replaces`, from the duplicates check by meaning); `supersedes` archives the older
note and marks it as replaced by the new one in the same transaction — the older note,
when it is asked for, says by which; restoring it clears the mark; export and import
keep it."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from grove.kernel import jobs
from grove.kernel.tenancy import tenant
from grove.models import Account
from notebooks import services
from notebooks.models import Note, Revision
from notebooks.services.indexing import EMBED
from notebooks.services.portability import account_import, export_records
from tests import factories
from tests.api.conftest import Caller, data, error, new_key
from tests.mcp.helpers import modern

pytestmark = pytest.mark.django_db

OLD = ("Team standup happens every weekday at ten in the morning in the large meeting "
       "room on the third floor next to the kitchen")
NEW = ("Team standup happens every weekday at eleven in the morning in the large meeting "
       "room on the third floor next to the kitchen")


@pytest.fixture(autouse=True)
def _clean_vector_index(vacuumed_vectors):
    pass


def _indexed(actor):
    while jobs.run_batch(account_id=actor.account_id, kind=EMBED):
        pass


def _world():
    owner = factories.owner()
    key, _ = new_key(owner)
    return owner, Caller(Client(), key)


def test_a_save_says_what_it_likely_replaces_and_supersedes_archives_it():
    owner, api = _world()
    old = data(api.post("/notes", {"content": OLD, "kind": "fact"}))
    twin = data(api.post("/notes", {"content": OLD.upper(), "kind": "fact"}))
    _indexed(owner)
    hinted = api.post("/notes", {"content": NEW, "kind": "fact", "findSimilar": True})
    meta = hinted.json()["meta"]
    assert set(meta["similar"]) >= {old["id"], twin["id"]}
    assert set(meta["replaces"]) == {old["id"], twin["id"]}  # same kind, other words
    api.post("/notes/forget", {"items": [data(hinted)["id"]]})
    saved = api.post("/notes", {"content": NEW, "kind": "fact",
                                "supersedes": f"note:{old['id']}@1"})
    assert saved.status_code == 201, saved.content
    new_id = data(saved)["id"]
    assert saved.json()["meta"]["superseded"] == old["id"]
    older = data(api.get(f"/notes/{old['id']}"))
    assert (older["status"], older["version"], older["supersededBy"]) == (
        "archived", 2, new_id)
    with tenant(owner):
        assert Revision.objects.get(note_id=old["id"], version=2).reason == "archive"
    recalled = data(api.post("/recall", {"query": "standup weekday morning"}))
    assert old["id"] not in [item["note"]["id"] for item in recalled]
    services.note_restore(actor=owner, operation_id=factories.op(), items=[old["id"]])
    assert "supersededBy" not in data(api.get(f"/notes/{old['id']}"))


def test_supersedes_is_fenced_and_refused_by_code_with_nothing_saved():
    owner, api = _world()
    old = data(api.post("/notes", {"content": OLD, "kind": "fact"}))
    data(api.patch(f"/notes/{old['id']}", {"tags": ["meetings"]}))  # now version 2
    with tenant(owner):
        before = Note.objects.count()
    error(api.post("/notes", {"content": NEW, "kind": "fact",
                              "supersedes": f"note:{old['id']}@1"}), 409, "version_conflict")
    error(api.post("/notes", {"content": NEW, "kind": "fact",
                              "supersedes": f"note:{uuid.uuid4()}"}), 404, "note_not_found")
    garden = factories.notebook(owner, "Garden")
    hidden = factories.note(owner, OLD, notebook_id=garden.id)
    narrow, _ = new_key(owner, all_notebooks=False)
    error(Caller(Client(), narrow).post("/notes", {
        "content": NEW, "kind": "fact", "supersedes": str(hidden.id)}), 404, "note_not_found")
    with tenant(owner):
        assert Note.objects.count() == before + 1  # only the owner's own `hidden`
        assert Note.objects.get(id=old["id"]).status == "active"


def test_the_remember_tool_supersedes_and_a_batch_item_can_too():
    owner, api = _world()
    old = factories.note(owner, OLD)
    result = modern(api.key, "tools/call", {"name": "remember", "arguments": {
        "content": NEW, "kind": "fact", "supersedes": old.versioned_id}}).json()["result"]
    assert result["structuredContent"]["superseded"] == f"note:{old.id}"
    other = factories.note(owner, "Lunch is at noon.")
    items = data(api.post("/notes/batch", {"items": [
        {"content": "Lunch is at one.", "kind": "fact", "supersedes": other.versioned_id},
        {"content": "Dinner is at six.", "kind": "fact",
         "supersedes": f"note:{other.id}@1"}]}))["items"]
    assert items[0]["superseded"] == str(other.id)
    assert items[1]["error"]["code"] == "version_conflict"  # archived by the first item
    get = modern(api.key, "tools/call", {"name": "get_note", "arguments": {
        "noteId": str(old.id)}}).json()["result"]
    new_id = result["structuredContent"]["id"].split(":")[1].split("@")[0]
    assert get["structuredContent"]["record"]["supersededBy"] == new_id
    assert json.loads(get["content"][0]["text"])["record"]["supersededBy"] == new_id


def test_export_and_import_keep_which_note_replaced_which():
    owner = factories.owner()
    old = factories.note(owner, OLD)
    new = services.note_remember(actor=owner, operation_id=factories.op(), content=NEW,
                                 kind="fact", supersedes=(old.id, 1)).note
    exported = list(export_records(actor=owner))
    [record] = [r for r in exported if r.get("id") == str(old.id)]
    assert record["supersededBy"] == str(new.id)
    other = factories.owner("importer")
    account_import(actor=other, records=exported)
    with tenant(other):
        imported_old = Note.objects.get(content=OLD)
        imported_new = Note.objects.get(content=NEW)
    assert imported_old.superseded_by_id == imported_new.id


def test_the_older_note_page_says_which_note_superseded_it():
    owner, api = _world()
    old = data(api.post("/notes", {"content": "# Standup\n\nAt ten.", "kind": "decision"}))
    new = data(api.post("/notes", {"content": "# Standup moved\n\nAt eleven.",
                                   "kind": "decision", "supersedes": f"note:{old['id']}@1"}))
    web = Client()
    web.force_login(Account.objects.get(id=owner.account_id))
    page = web.get(f"/notes/{old['id']}/").content.decode()
    assert "Superseded by" in page and f'href="/notes/{new["id"]}/"' in page
    assert "Standup moved" in page
    # The newer note's own page says nothing of the kind.
    assert "Superseded by" not in web.get(f"/notes/{new['id']}/").content.decode()
    # Once the newer note is gone, the older page names nothing the owner cannot open.
    api.post("/notes/forget", {"items": [new["id"]]})
    assert "Superseded by" not in web.get(f"/notes/{old['id']}/").content.decode()
