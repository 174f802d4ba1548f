"""Batches (issue 39 item 5): `POST /v1/notes/batch` and `remember` with `items` save
up to 50 notes in one transaction, each item answered as a single save would be —
created, updated (its task's live handoff), held, or refused by the same code — with
`similar` per item, and replayed as a whole by the batch's operation id."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from grove.kernel.tenancy import tenant
from notebooks import services
from notebooks.models import Note, Revision
from tests import factories
from tests.api.conftest import Caller, data, error, new_key
from tests.mcp.helpers import modern

pytestmark = pytest.mark.django_db

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"  # the documented example key: a credential pattern


def _world():
    owner = factories.owner()
    key, _ = new_key(owner)
    return owner, Caller(Client(), key)


def _count(owner) -> tuple[int, int]:
    with tenant(owner):
        return Note.objects.count(), Revision.objects.count()


def test_a_batch_saves_each_item_as_a_single_save_would():
    owner, api = _world()
    garden = factories.notebook(owner, "Garden")
    handoff = factories.note(owner, "Beds: half dug.", kind="handoff", task_id="beds",
                             notebook_id=garden.id)
    existing = factories.note(owner, "Tomatoes need full sun.", notebook_id=garden.id)
    answer = data(api.post("/notes/batch", {"items": [
        {"content": "Basil likes warmth.", "kind": "fact", "notebookId": str(garden.id),
         "tags": ["herbs"]},
        {"content": "Beds: all dug; next, compost.", "kind": "handoff", "taskId": "beds",
         "notebookId": str(garden.id)},
        {"content": "tomatoes need  FULL sun.", "kind": "fact", "notebookId": str(garden.id)},
        {"content": "Prefers raised beds.", "kind": "preference"},
    ]}))
    items = answer["items"]
    assert [item["status"] for item in items] == ["created", "updated", "created", "created"]
    assert [item["index"] for item in items] == [0, 1, 2, 3]
    assert items[1]["note"]["id"] == str(handoff.id) and items[1]["note"]["version"] == 2
    assert items[2]["similar"] == [str(existing.id)]  # the duplicates hint, per item
    assert items[0]["note"]["tags"] == ["herbs"] and items[3]["note"]["notebookId"] is None
    assert _count(owner) == (5, 6)  # 3 new notes; the handoff got a second revision


def test_an_item_refused_by_its_code_refuses_nothing_else():
    owner, api = _world()
    archived = factories.notebook(owner, "Old")
    services.notebook_archive(actor=owner, operation_id=factories.op(),
                              notebook_id=archived.id)
    items = data(api.post("/notes/batch", {"items": [
        {"content": "Kept one.", "kind": "fact"},
        {"content": "x" * 7000, "kind": "fact"},
        {"content": "A handoff without its task.", "kind": "handoff"},
        {"content": "In an archived notebook.", "kind": "fact",
         "notebookId": str(archived.id)},
        {"content": "In a notebook that is not there.", "kind": "fact",
         "notebookId": str(uuid.uuid4())},
        {"content": "Wrong kind.", "kind": "poem"},
        {"content": "Has an operation id.", "kind": "fact", "operationId": str(uuid.uuid4())},
        {"content": f"The deploy key is {AWS_KEY}.", "kind": "fact"},
        {"content": "Kept two.", "kind": "decision"},
    ]}))["items"]
    codes = [(item["status"], item.get("error", {}).get("code")) for item in items]
    assert codes == [("created", None), ("refused", "content_too_long"),
                     ("refused", "task_id_required"), ("refused", "notebook_archived"),
                     ("refused", "notebook_not_found"), ("refused", "invalid_item"),
                     ("refused", "invalid_item"), ("created", None), ("created", None)]
    assert items[7]["redacted"] == {"aws-access-key": 1}  # hygiene as for one save
    assert "kind" in items[5]["error"]["message"]
    single = error(api.post("/notes", {"content": "x" * 7000, "kind": "fact"}), 400,
                   "content_too_long")
    assert items[1]["error"]["message"] == single["message"]
    assert _count(owner) == (3, 3)


def test_the_batch_is_replayed_by_its_operation_id_and_checked_as_a_whole():
    owner, api = _world()
    body = {"operationId": str(uuid.uuid4()), "items": [
        {"content": f"Fact number {n}.", "kind": "fact"} for n in range(50)]}
    first = data(api.post("/notes/batch", body))
    assert len(first["items"]) == 50 and _count(owner) == (50, 50)
    assert data(api.post("/notes/batch", body)) == first and _count(owner) == (50, 50)
    error(api.post("/notes/batch", dict(body, items=body["items"][:49])), 409,
          "operation_conflict")
    error(api.post("/notes/batch", {"items": [{"content": "x", "kind": "fact"}] * 51}),
          422, "invalid_request")
    error(api.post("/notes/batch", {"items": []}), 422, "invalid_request")
    read_only, _ = new_key(owner, capabilities=["memory:read"])
    error(Caller(Client(), read_only).post("/notes/batch", {"items": [
        {"content": "x", "kind": "fact"}]}), 403, "insufficient_capability")
    assert _count(owner) == (50, 50)


def test_a_batch_outside_the_grant_refuses_those_items_only():
    owner = factories.owner()
    garden = factories.notebook(owner, "Garden")
    diary = factories.notebook(owner, "Diary")
    key, _ = new_key(owner, all_notebooks=False, personal=False, notebooks=[garden.id])
    items = data(Caller(Client(), key).post("/notes/batch", {"items": [
        {"content": "In the garden.", "kind": "fact", "notebookId": str(garden.id)},
        {"content": "In the diary.", "kind": "fact", "notebookId": str(diary.id)},
        {"content": "In Personal.", "kind": "fact"}]}))["items"]
    assert [(item["status"], item.get("error", {}).get("code")) for item in items] == [
        ("created", None), ("refused", "notebook_not_found"), ("refused", "personal_not_granted")]
    assert _count(owner) == (1, 1)


def test_remember_with_items_over_mcp():
    owner, api = _world()

    def call(arguments):
        return modern(api.key, "tools/call", {"name": "remember",
                                              "arguments": arguments}).json()["result"]

    result = call({"items": [{"content": "Uses Unleash for feature flags.", "kind": "decision"},
                             {"content": "Standup at 9:30.", "kind": "fact"},
                             {"content": "", "kind": "fact"}]})
    said = result["structuredContent"]["items"]
    assert [item["status"] for item in said] == ["created", "created", "refused"]
    assert said[0]["id"].startswith("note:") and said[0]["id"].endswith("@1")
    assert said[2]["error"]["code"] in ("content_empty", "invalid_item")
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    for bad in ({}, {"content": "x"}, {"items": [{"content": "x", "kind": "fact"}],
                                       "kind": "fact"},
                {"items": [{"content": "x", "kind": "fact"}], "capture": "automatic"}):
        refused = call(bad)
        assert refused["isError"] is True
        assert json.loads(refused["content"][1]["text"])["code"] == "invalid_arguments"
    assert _count(owner) == (2, 2)
