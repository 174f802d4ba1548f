"""REST routes over the library: listing and search cursors, notebooks, batches, recall,
typed ids and account settings."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from grove.models import Account
from notebooks import services
from tests import factories
from tests.api.conftest import Caller, data, error, new_key
from tests.api.test_api_core import session_caller
from tests.factories import op

pytestmark = pytest.mark.django_db


def bulk(owner, n: int, prefix: str = "note") -> list[uuid.UUID]:
    return [factories.note(owner, f"{prefix} {i}").id for i in range(n)]


def test_paging_through_1000_notes_while_inserting_has_no_duplicates_or_skips(owner, api):
    originals = set(bulk(owner, 1000))
    seen: list[str] = []
    page = api.get("/notes?limit=100")
    pages = 0
    while True:
        body = page.json()
        assert body["success"] is True
        seen += [item["note"]["id"] for item in body["data"]]
        assert body["meta"]["available"] == 1000  # the ceiling fixed by the first page
        pages += 1
        bulk(owner, 3, prefix=f"added during page {pages}")
        cursor = body["meta"]["nextCursor"]
        if not cursor:
            break
        page = api.get(f"/notes?limit=100&cursor={cursor}")
    assert len(seen) == len(set(seen)) == 1000
    assert {uuid.UUID(i) for i in seen} == originals
    assert pages == 10


def test_cursor_tampering_and_reuse_elsewhere_are_400(owner, api):
    bulk(owner, 5)
    cursor = data_meta(api.post("/notes/search", {"limit": 2}))["nextCursor"]
    tampered = cursor[:-3] + ("AAA" if not cursor.endswith("AAA") else "BBB")
    error(api.post("/notes/search", {"limit": 2, "cursor": tampered}), 400, "invalid_cursor")
    error(api.post("/notes/search", {"limit": 2, "cursor": cursor, "kind": ["decision"]}), 400,
          "cursor_mismatch")
    other_key, _ = new_key(owner)  # same account, another connection
    error(Caller(Client(), other_key).post("/notes/search", {"limit": 2, "cursor": cursor}),
          400, "invalid_cursor")
    stranger_key, _ = new_key(factories.owner())
    error(Caller(Client(), stranger_key).post("/notes/search", {"limit": 2, "cursor": cursor}),
          400, "invalid_cursor")
    assert len(api.post("/notes/search", {"limit": 2, "cursor": cursor}).json()["data"]) == 2


def data_meta(response) -> dict:
    body = response.json()
    assert body["success"] is True, body
    return body["meta"]


def test_search_with_query_matches_and_filters(owner, api):
    factories.note(owner, "Postgres vacuum settings for big tables", kind="solution")
    factories.note(owner, "Lunch preferences", kind="preference")
    found = api.post("/notes/search", {"query": "vacuum", "matches": True})
    items = data(found)
    assert [i["note"]["kind"] for i in items] == ["solution"]
    assert items[0]["matches"]["terms"] and items[0]["matches"]["noteVersion"] == 1
    assert data(api.post("/notes/search", {"query": "vacuum", "kind": ["preference"]})) == []
    error(api.post("/notes/search", {"sort": "relevance"}), 400, "invalid_sort")


def test_grant_scoping_over_rest(owner):
    shared = factories.notebook(owner, "Shared")
    private = factories.notebook(owner, "Private")
    inside = factories.note(owner, "deploy notes shared", notebook_id=shared.id)
    outside = factories.note(owner, "deploy notes private", notebook_id=private.id)
    personal = factories.note(owner, "deploy notes personal")
    key, _ = new_key(owner, personal=False, all_notebooks=False, notebooks=[shared.id])
    narrow = Caller(Client(), key)
    assert [n["note"]["id"] for n in data(narrow.get("/notes"))] == [str(inside.id)]
    assert [n["name"] for n in data(narrow.get("/notebooks"))] == ["Shared"]
    for hidden in (outside.id, personal.id):
        error(narrow.get(f"/notes/{hidden}"), 404, "note_not_found")
    recalled = narrow.post("/recall", {"query": "deploy notes"})
    assert [i["note"]["id"] for i in data(recalled)] == [str(inside.id)]
    assert recalled.json()["meta"]["available"] == 1
    error(narrow.post("/recall", {"query": "deploy", "notebookId": str(private.id)}), 404,
          "notebook_not_found")
    # Moving a note out of the grant is refused without revealing the destination.
    error(narrow.post("/notes/move", {"noteIds": [str(inside.id)],
                                      "notebookId": str(private.id)}), 404,
          "notebook_not_found")
    # Personal is outside this grant: said plainly (it always exists, so nothing leaks).
    error(narrow.post("/notes", {"content": "x", "kind": "fact"}), 403, "personal_not_granted")
    error(narrow.post("/recall", {"query": "deploy", "notebookId": None}), 403,
          "personal_not_granted")


def test_notebooks_create_rename_move_and_cycles(owner, api):
    root = data(api.post("/notebooks", {"name": "Root"}))
    child = data(api.post("/notebooks", {"name": "Child", "parentId": root["id"]}))
    assert child["parentId"] == root["id"]
    renamed = data(api.patch(f"/notebooks/{child['id']}", {"name": "Kid"}))
    assert renamed["name"] == "Kid" and renamed["parentId"] == root["id"]
    moved = data(api.patch(f"/notebooks/{child['id']}", {"parentId": None}))
    assert moved["parentId"] is None
    api.patch(f"/notebooks/{child['id']}", {"parentId": root["id"]})
    error(api.patch(f"/notebooks/{root['id']}", {"parentId": child["id"]}), 409,
          "notebook_cycle")
    assert data(api.get(f"/notebooks/{root['id']}/counts")) == {"notebooks": 2, "notes": 0}


def test_session_runs_subtree_lifecycle(owner):
    site = session_caller(owner)
    book = factories.notebook(owner, "Project")
    factories.note(owner, "inside", notebook_id=book.id)
    archived = site.post(f"/notebooks/{book.id}/archive",
                         headers={"Idempotency-Key": str(uuid.uuid4())})
    assert data(archived) == {"notebooks": 1, "notes": 1}
    assert data(site.post(f"/notebooks/{book.id}/restore", {"operationId": str(uuid.uuid4())}))
    assert data(site.post(f"/notebooks/{book.id}/delete")) == {"notebooks": 1, "notes": 1}


def test_batches_report_per_item(owner, api):
    a, b = factories.note(owner, "a"), factories.note(owner, "b")
    missing = uuid.uuid4()
    archived = data(api.post("/notes/archive", {"items": [str(a.id), str(missing)]}))
    assert [i["status"] for i in archived["items"]] == ["archived", "not_found"]
    restored = data(api.post("/notes/restore", {"items": [str(a.id)]}))
    assert restored["items"][0]["status"] == "restored"
    forgotten = data(api.post("/notes/forget", {"items": [
        {"id": str(b.id), "expectedVersion": 7}, str(a.id)]}))
    assert [i["status"] for i in forgotten["items"]] == ["version_conflict", "deleted"]
    error(api.post("/notes/forget", {"items": []}), 422, "invalid_request")
    error(api.post("/notes/forget", {"items": [str(uuid.uuid4())] * 101}), 422,
          "invalid_request")


def test_revisions_restore_and_typed_ids(owner, api):
    note = data(api.post("/notes", {"content": "first", "kind": "handoff", "taskId": "t1"}))
    api.patch(f"/notes/{note['id']}", {"content": "second"})
    revisions = data(api.get(f"/notes/{note['id']}/revisions"))
    assert [r["version"] for r in revisions] == [2, 1]
    restored = data(api.post(f"/notes/{note['id']}/restore-revision",
                             {"revision": 1, "durable": True}))
    assert (restored["content"], restored["kind"], restored["version"]) == ("first", "fact", 3)
    assert data(api.get(f"/get/note:{note['id']}@2"))["content"] == "second"
    assert data(api.get(f"/get/note:{note['id']}"))["version"] == 3
    book = data(api.post("/notebooks", {"name": "Typed"}))
    assert data(api.get(f"/get/{book['typedId']}"))["name"] == "Typed"
    for bad in ("note:nope", f"note:{note['id']}@x", "conversation:1", "plain"):
        assert api.get(f"/get/{bad}").status_code in (400, 404)
    error(api.get(f"/get/note:{note['id']}@9"), 404, "version_not_found")


def test_recall_profile_and_budget(owner, api):
    factories.note(owner, "Prefers tabs over spaces", kind="preference", pinned=True)
    factories.note(owner, "Handoff for task x", kind="handoff", task_id="x")
    profile = api.post("/recall", {})
    assert profile.json()["meta"]["mode"] == "profile"
    assert [i["note"]["kind"] for i in data(profile)] == ["preference"]
    with_task = data(api.post("/recall", {"taskId": "x"}))
    assert [i["note"]["kind"] for i in with_task] == ["handoff", "preference"]
    error(api.post("/recall", {"query": "x", "limit": 51}), 422, "invalid_request")
    error(api.post("/recall", {"query": "x", "maxChars": 100}), 422, "invalid_request")
    error(api.post("/recall", {"query": "x", "notebookId": None,
                               "notebookIds": [str(uuid.uuid4())]}), 400, "invalid_scope")


def test_account_settings_pause_capture(owner, api):
    assert data(api.get("/account/settings"))["capturePaused"] is False
    error(api.patch("/account/settings", {"capturePaused": True}), 403, "session_required")
    site = session_caller(owner)
    assert data(site.patch("/account/settings", {"capturePaused": True}))["capturePaused"]
    error(api.post("/notes", {"content": "auto", "kind": "fact", "capture": "automatic"}), 409,
          "capture_paused")
    assert api.post("/notes", {"content": "explicit", "kind": "fact"}).status_code == 201
    assert Account.objects.get(id=owner.account_id).capture_paused_at is not None


def test_move_is_all_or_nothing(owner, api):
    book = data(api.post("/notebooks", {"name": "Dest"}))
    note = factories.note(owner, "movable")
    stranger_note = factories.note(factories.owner(), "not yours")
    error(api.post("/notes/move", {"noteIds": [str(note.id), str(stranger_note.id)],
                                   "notebookId": book["id"]}), 404, "note_not_found")
    assert data(api.get(f"/notes/{note.id}"))["notebookId"] is None
    moved = data(api.post("/notes/move", {"noteIds": [str(note.id)], "notebookId": book["id"]}))
    assert moved[0]["notebookId"] == book["id"]


def test_retry_indexing_requeues_a_failed_note(owner, api):
    from grove.kernel.tenancy import tenant
    from grove.models import Job
    from notebooks.models import Indexing, Note

    note = factories.note(owner, "indexed later")
    unchanged = data(api.post(f"/notes/{note.id}/retry-indexing"))
    assert unchanged["indexing"] == "pending"  # not failed: nothing to retry
    with tenant(owner):
        Note.objects.filter(id=note.id).update(indexing=Indexing.FAILED)
        jobs_before = Job.objects.filter(target_id=note.id).count()
    retried = data(api.post(f"/notes/{note.id}/retry-indexing"))
    assert retried["indexing"] == "pending"
    with tenant(owner):
        assert Job.objects.filter(target_id=note.id).count() == jobs_before + 1
    services.note_forget(actor=owner, operation_id=op(), items=[note.id])
    error(api.post(f"/notes/{note.id}/retry-indexing"), 404, "note_not_found")


def test_notebook_list_pages_by_cursor_and_hides_unseen_parents(owner, api):
    parent = factories.notebook(owner, "Secret parent")
    child = factories.notebook(owner, "Shared child", parent=parent.id)
    for i in range(5):
        factories.notebook(owner, f"Book {i}")
    first = api.get("/notebooks?limit=3")
    meta = first.json()["meta"]
    assert (meta["returned"], meta["available"], meta["truncated"]) == (3, 7, True)
    seen = [n["id"] for n in data(first)]
    cursor = meta["nextCursor"]
    factories.notebook(owner, "Added while paging")  # after the ceiling: not in this walk
    while cursor:
        page = api.get(f"/notebooks?limit=3&cursor={cursor}")
        seen += [n["id"] for n in data(page)]
        cursor = page.json()["meta"]["nextCursor"]
    assert len(seen) == len(set(seen)) == 7
    error(api.get("/notebooks?cursor=forged"), 400, "invalid_cursor")

    key, _ = new_key(owner, personal=False, all_notebooks=False, notebooks=[child.id])
    narrow = Caller(Client(), key)
    listed = data(narrow.get("/notebooks"))
    assert [(n["name"], n["parentId"]) for n in listed] == [("Shared child", None)]
    assert data(narrow.get(f"/get/notebook:{child.id}"))["parentId"] is None
    assert data(api.get(f"/get/notebook:{child.id}"))["parentId"] == str(parent.id)
    exported = b"".join(narrow.get("/export").streaming_content).decode()
    assert "Shared child" in exported and str(parent.id) not in exported


@pytest.mark.parametrize(("value", "expected"), [
    ("4633-05-16T22:36:46.997-20:29", 0),     # far future, offset beyond PostgreSQL's
    ("2026-01-01T00:00:00+23:59", 1),         # = 2025-12-31T00:01Z: the note is newer
    ("9999-12-31T23:59:59-23:00", None),      # past the last representable instant
])
def test_extreme_zone_offsets_in_filters_are_handled(owner, api, value, expected):
    """Found by the fuzzer: ISO 8601 allows offsets PostgreSQL refuses (±15:59 at most).
    Years whose instants can leave the calendar in some zone (1 and 9999) are outside
    the document's pattern, so they are refused as any invalid argument is."""
    factories.note(owner, "dated")
    response = api.get(f"/notes?updatedAfter={value.replace('+', '%2B')}")
    if expected is None:
        error(response, 422, "invalid_request")
    else:
        assert len(data(response)) == expected


@pytest.mark.parametrize(("path", "body", "code"), [
    ("/recall", {"query": "a\u0000b"}, "invalid_query"),
    ("/recall", {"taskId": "t\u0000"}, "invalid_task_id"),
    ("/notes/search", {"query": "x\u0000"}, "invalid_query"),
    ("/notes/search", {"sourceAgent": "\u0000"}, "invalid_source_agent"),
    ("/notes", {"content": "nul \u0000 inside", "kind": "fact"}, "invalid_content"),
])
def test_nul_characters_are_400_not_500(api, path, body, code):
    """Found by the fuzzer: PostgreSQL text cannot hold NUL."""
    error(api.post(path, body), 400, code)
