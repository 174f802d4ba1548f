"""Tags (SPEC §3): a short list of normalised labels on a note, part of each revision,
in the REST schemas, filterable in search, counted for the library's sidebar — and
never a way around a grant."""

import pytest
from django.test import Client

from grove.kernel.errors import Forbidden, Invalid
from notebooks import services
from notebooks.models import Note
from notebooks.rules import clean_tags
from notebooks.selectors.library import tag_counts
from notebooks.selectors.search import note_search
from notebooks.services.portability import account_import, export_records
from tests import factories
from tests.api.conftest import Caller, new_key
from tests.factories import op

pytestmark = pytest.mark.django_db


def tagged(actor, tag, **kwargs):
    return sorted(i.note.content for i in note_search(actor=actor, tag=tag, **kwargs).data)


def test_tags_are_normalised_deduplicated_and_few():
    assert clean_tags([" Big Idea", "#big-idea", "Recipes", "a/b.c_d", "two\nlines"]) == [
        "a/b.c_d", "big-idea", "recipes", "two-lines"]
    assert clean_tags([]) == []
    for bad in (["x" * 33], [""], ["   "], ["-lead"], ["semi;colon"], ["#"], ["café"], [3],
                "recipes", [f"t{i}" for i in range(11)]):
        with pytest.raises(Invalid) as refused:
            clean_tags(bad)
        assert refused.value.code == "invalid_tags"


def test_tags_are_part_of_each_revision():
    owner = factories.owner()
    note = factories.note(owner, "Sourdough starter feeding", tags=["Baking", "kitchen"])
    assert note.tags == ["baking", "kitchen"]
    changed = services.note_update(actor=owner, operation_id=op(), note_id=note.id,
                                   tags=["baking"])
    assert (changed.tags, changed.version) == (["baking"], 2)
    kept = services.note_update(actor=owner, operation_id=op(), note_id=note.id,
                                content="Sourdough starter: feed twice a day")
    assert kept.tags == ["baking"]  # omitted: unchanged
    assert [r.tags for r in factories.revisions(owner, note.id)] == [
        ["baking", "kitchen"], ["baking"], ["baking"]]
    restored = services.note_restore_revision(actor=owner, operation_id=op(),
                                              note_id=note.id, revision=1)
    assert restored.tags == ["baking", "kitchen"]
    with pytest.raises(Invalid):
        services.note_update(actor=owner, operation_id=op(), note_id=note.id,
                             tags=["no good!"])
    assert factories.note_row(owner, note.id).tags == ["baking", "kitchen"]  # unchanged


def test_search_filters_by_tag_within_the_grant():
    owner = factories.owner()
    open_book = factories.notebook(owner, "Open")
    closed = factories.notebook(owner, "Closed")
    factories.note(owner, "open bread", notebook_id=open_book.id, tags=["bread"])
    factories.note(owner, "closed bread", notebook_id=closed.id, tags=["bread"])
    factories.note(owner, "personal bread", tags=["Bread"])
    factories.note(owner, "open cake", notebook_id=open_book.id, tags=["cake"])
    archived = factories.note(owner, "old bread", tags=["bread"])
    services.note_archive(actor=owner, operation_id=op(), items=[archived.id])
    assert tagged(owner, "bread") == ["closed bread", "open bread", "personal bread"]
    assert tagged(owner, "#Bread") == tagged(owner, "bread")
    assert tagged(owner, "bread", status="archived") == ["old bread"]
    assert tagged(owner, "bread", query="open") == ["open bread"]
    assert tagged(owner, "nothing") == []
    agent = factories.connection(owner, notebooks=[open_book.id])
    assert tagged(agent, "bread") == ["open bread"]
    with pytest.raises(Invalid):
        note_search(actor=owner, tag="bad tag!")


def test_the_sidebar_counts_live_tagged_notes_of_the_account_only():
    owner, other = factories.owner("tagger"), factories.owner("stranger")
    shelf = factories.notebook(owner, "Shelf")
    factories.note(owner, "a", tags=["bread", "kitchen"])
    factories.note(owner, "b", tags=["bread"], notebook_id=shelf.id)
    gone = factories.note(owner, "c", tags=["bread"])
    services.note_forget(actor=owner, operation_id=op(), items=[gone.id])
    factories.note(owner, "untagged")
    factories.note(other, "theirs", tags=["secret", "bread"])
    assert tag_counts(actor=owner) == [("bread", 2), ("kitchen", 1)]
    services.notebook_archive(actor=owner, operation_id=op(), notebook_id=shelf.id)
    assert tag_counts(actor=owner) == [("bread", 1), ("kitchen", 1)]
    with pytest.raises(Forbidden):
        tag_counts(actor=factories.connection(owner, all_notebooks=True, personal=True))


def test_tags_over_rest():
    owner = factories.owner()
    key, _ = new_key(owner)
    api = Caller(Client(), key)
    made = api.post("/notes", {"content": "Rye ratios", "kind": "fact",
                               "tags": ["Baking", "rye"]})
    assert made.status_code == 201, made.content
    note = made.json()["data"]
    assert note["tags"] == ["baking", "rye"]
    listed = api.get("/notes?tag=rye").json()
    assert [n["note"]["id"] for n in listed["data"]] == [note["id"]]
    assert listed["meta"]["sort"] == "updated_desc"
    found = api.post("/notes/search", {"query": "rye", "tag": "baking"}).json()
    assert found["meta"]["available"] == 1 and found["meta"]["sort"] == "relevance"
    patched = api.patch(f"/notes/{note['id']}", {"tags": []})
    assert patched.status_code == 200 and patched.json()["data"]["tags"] == []
    bad = api.patch(f"/notes/{note['id']}", {"tags": ["two words!"]})
    assert bad.status_code == 422, bad.content  # the schema's pattern refuses it first
    too_many = api.post("/notes", {"content": "x", "kind": "fact",
                                   "tags": [f"t{i}" for i in range(11)]})
    assert too_many.status_code in (400, 422)
    assert Note.objects.filter(content="x").count() == 0


def test_export_and_import_keep_tags():
    owner = factories.owner()
    note = factories.note(owner, "Tagged once", tags=["one"])
    services.note_update(actor=owner, operation_id=op(), note_id=note.id, tags=["two"])
    exported = list(export_records(actor=owner))
    [record] = [r for r in exported if r["type"] == "note"]
    assert record["tags"] == ["two"]
    assert [r["tags"] for r in exported if r["type"] == "revision"] == [["one"], ["two"]]
    fresh = factories.owner()
    account_import(actor=fresh, records=exported)
    [copy] = note_search(actor=fresh, tag="two").data
    assert copy.note.content == "Tagged once"
    # An archive from before tags (no `tags` field) imports with none.
    old = [{k: v for k, v in r.items() if k != "tags"} for r in exported]
    later = factories.owner()
    account_import(actor=later, records=old)
    assert [i.note.tags for i in note_search(actor=later).data] == [[]]
