"""What agents read first over REST and MCP (SPEC §10): visions, the brief, recent activity
and who-am-I — the same functions and arguments behind `/v1` and the tools, the same
document for the same connection, 4xx with codes for bad input."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from notebooks import services
from tests import factories
from tests.api.conftest import Caller, data, new_key
from tests.factories import op
from tests.mcp.helpers import error_of
from tests.mcp.test_protocol import call

pytestmark = pytest.mark.django_db


@pytest.fixture
def garden(owner):
    return factories.notebook(owner, "Garden")


def test_visions_over_rest(api, owner, garden):
    assert data(api.get("/vision")) == {"notebookId": None, "content": "", "version": 0,
                                        "updatedAt": None, "updatedBy": None}
    put = api.call("PUT", f"/notebooks/{garden.id}/vision",
                   {"content": "Feed four people.", "expectedVersion": 0},
                   headers={"Idempotency-Key": str(uuid.uuid4())})
    assert put.status_code == 200 and data(put)["version"] == 1
    assert data(put)["updatedBy"] == "test key"
    stale = api.call("PUT", f"/notebooks/{garden.id}/vision",
                     {"content": "Feed six.", "expectedVersion": 0})
    assert stale.status_code == 409
    assert stale.json()["error"]["code"] == "version_conflict"
    assert stale.json()["error"]["details"] == {"currentVersion": 1}
    assert data(api.get(f"/notebooks/{garden.id}/vision"))["content"] == "Feed four people."
    history = api.get(f"/notebooks/{garden.id}/vision/revisions").json()
    assert [r["version"] for r in history["data"]] == [1]
    assert history["meta"]["available"] == 1
    account = api.call("PUT", "/vision", {"content": "Grow food."})
    assert account.status_code == 200 and data(api.get("/vision"))["content"] == "Grow food."
    assert [r["content"] for r in data(api.get("/vision/revisions"))] == ["Grow food."]


def test_vision_bad_input_and_grants_over_rest(owner, garden):
    key, _ = new_key(owner, all_notebooks=False, personal=False, notebooks=[garden.id])
    limited = Caller(Client(), key)
    for body, status, code in (({"content": "x" * 6001}, 400, "content_too_long"),
                               ({"content": 3}, 422, "invalid_request"),
                               ({"content": "x", "extra": 1}, 422, "invalid_request"),
                               ({"content": "x", "expectedVersion": -1}, 422,
                                "invalid_request")):
        answer = limited.call("PUT", f"/notebooks/{garden.id}/vision", body)
        assert (answer.status_code, answer.json()["error"]["code"]) == (status, code), body
    # `true` is not a version (a lax reading would take it as 1 and write).
    lax = limited.call("PUT", f"/notebooks/{garden.id}/vision",
                       {"content": "x", "expectedVersion": True})
    assert (lax.status_code, lax.json()["error"]["code"]) == (422, "invalid_request")
    refused = limited.call("PUT", "/vision", {"content": "Obey me."})
    assert (refused.status_code, refused.json()["error"]["code"]) == (
        403, "account_vision_forbidden")
    hidden = factories.notebook(owner, "Hidden")
    unknown = uuid.uuid4()
    for place in (hidden.id, unknown):
        for method, path in (("GET", f"/notebooks/{place}/vision"),
                             ("PUT", f"/notebooks/{place}/vision")):
            answer = limited.call(method, path, {"content": "x"} if method == "PUT" else None)
            assert answer.status_code == 404, (method, path)
            assert answer.json()["error"]["code"] == "notebook_not_found"


def test_the_brief_over_rest(api, owner, garden):
    services.vision_update(actor=owner, operation_id=op(), content="Grow food.")
    factories.note(owner, "Tomatoes need sun.", notebook_id=garden.id, pinned=True)
    factories.note(owner, "A decision in Personal.", kind="decision")
    brief = data(api.get(f"/brief?notebookId={garden.id}&timeZone=Europe/Paris"))
    assert brief["format"] == "markdown" and "Grow food." in brief["markdown"]
    assert "(Europe/Paris)" in brief["markdown"].splitlines()[0]
    assert brief["meta"]["returned"] == 2 and brief["meta"]["pinned"] == 1
    parts = data(api.get("/brief?format=json&floors=decision:1,fact:1,decision:0"
                         f"&includePersonal=false&notebookId={garden.id}"))
    assert parts["markdown"] is None and [n["content"] for n in parts["facts"]] == [
        "Tomatoes need sun."]
    for query, code in (("timeZone=Nowhere/Else", "invalid_time_zone"),
                        ("budgetTokens=5", "invalid_request"),
                        ("floors=poem:2", "invalid_request"),
                        ("floors=decision:21", "invalid_request"),
                        ("floors=decision", "invalid_request"),
                        ("format=html", "invalid_request"),
                        ("since=yesterday", "invalid_request"),
                        (f"notebookId={uuid.uuid4()}", "notebook_not_found")):
        answer = api.get(f"/brief?{query}")
        assert 400 <= answer.status_code < 500, (query, answer.content)
        assert answer.json()["error"]["code"] == code, (query, answer.json())


def test_activity_and_whoami_over_rest(api, owner, garden):
    note = factories.note(owner, "Planted garlic.", notebook_id=garden.id)
    page = api.get("/activity?limit=1").json()
    assert page["data"][0]["id"] == note.versioned_id and page["data"][0]["by"] == "website"
    assert page["meta"]["returned"] == 1 and page["meta"]["available"] == 1
    assert page["data"][0]["notebook"] == "Garden"
    assert api.get("/activity?connectionId=website").json()["meta"]["available"] == 1
    assert api.get(f"/activity?connectionId={uuid.uuid4()}").json()["meta"]["available"] == 0
    for query in ("limit=0", "connectionId=someone", "cursor=forged", "since=soon"):
        answer = api.get(f"/activity?{query}")
        assert 400 <= answer.status_code < 500, query
    me = data(api.get("/whoami"))
    assert (me["connectionName"], me["personal"], me["allNotebooks"]) == ("test key", True,
                                                                         True)
    assert me["notebooks"] == [{"id": f"notebook:{garden.id}", "name": "Garden"}]


def test_the_tools_answer_what_the_routes_answer(api, owner, garden):
    factories.note(owner, "A fact for both.", notebook_id=garden.id)
    args = {"notebookId": str(garden.id), "timeZone": "America/Los_Angeles",
            "budgetTokens": 900}
    rest = data(api.get(f"/brief?notebookId={garden.id}&timeZone=America/Los_Angeles"
                        "&budgetTokens=900"))
    tool = call(api.key, "brief", args)
    assert tool["content"][0]["text"] == rest["markdown"]
    # The tool's meta: the counts, with their ids, and the tokens (the rest of the
    # accounting is REST's), the same values.
    tool_meta = tool["structuredContent"]["meta"]
    assert {"returned", "indexed", "dropped", "droppedItems", "tokens"} <= set(tool_meta)
    assert tool_meta == {k: rest["meta"][k] for k in tool_meta}
    json_tool = call(api.key, "brief", {**args, "format": "json"})
    assert json_tool["structuredContent"]["facts"][0]["content"] == "A fact for both."
    who = call(api.key, "whoami", {})
    assert who["content"][0]["text"] == data(api.get("/whoami"))["startup"]
    activity = call(api.key, "recent_activity", {"limit": 5})
    assert [(i["id"], i["change"], i["by"]) for i in activity["structuredContent"]["data"]] \
        == [(i["id"], i["change"], i["by"]) for i in api.get("/activity?limit=5").json()["data"]]
    assert "1 of 1 changes" in activity["content"][0]["text"]
    saved = call(api.key, "update_vision", {"notebookId": f"notebook:{garden.id}",
                                            "content": "Tomatoes first.",
                                            "expectedVersion": 0})
    assert saved["structuredContent"] == {"notebookId": f"notebook:{garden.id}",
                                          "version": 1}
    stale = call(api.key, "update_vision", {"content": "Grow food.", "expectedVersion": 3})
    assert error_of(stale) == {"code": "version_conflict", "currentVersion": 0}
    bad = call(api.key, "brief", {"timeZone": "Mars/Base"})
    assert error_of(bad)["code"] == "invalid_time_zone"
    for lax in ({"floors": {"decision": True}}, {"expectedVersion": True, "content": "x"}):
        tool = "brief" if "floors" in lax else "update_vision"
        assert error_of(call(api.key, tool, lax))["code"] == "invalid_arguments", lax


def test_a_read_only_key_reads_but_cannot_write_a_vision(owner, garden):
    key, _ = new_key(owner, capabilities=["memory:read"])
    reader = Caller(Client(), key)
    assert reader.get("/brief").status_code == 200
    refused = reader.call("PUT", f"/notebooks/{garden.id}/vision", {"content": "x"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (
        403, "insufficient_capability")
    assert error_of(call(key, "update_vision", {"content": "x"}))["code"] == \
        "insufficient_capability"


def test_ground_truth_over_rest_and_mcp(owner, garden):
    """The truth read says which state holds, over REST and the `truth` tool alike; a
    key's correction of a declared note comes back held, with the accepted version."""
    rule = factories.note(owner, "# Watering\n\n## Morning\nBefore 9.", notebook_id=garden.id)
    key, _ = new_key(owner, all_notebooks=False, personal=False, notebooks=[garden.id])
    limited = Caller(Client(), key)
    assert data(limited.get(f"/notebooks/{garden.id}/truth"))["state"] == "none"
    services.truth_declare(actor=owner, notebook_id=garden.id, note_ids=[rule.id],
                           policy="restrict")
    rest = data(limited.get(f"/notebooks/{garden.id}/truth"))
    assert (rest["state"], rest["policy"], rest["withheld"]) == ("own", "restrict", 0)
    assert rest["notes"][0]["manifest"] == {"firstLine": "Watering", "headings": ["Morning"]}
    assert rest["notes"][0]["content"] is None
    full = data(limited.get(f"/notebooks/{garden.id}/truth?full=true"))
    assert full["notes"][0]["content"].endswith("Before 9.")
    # The tool answers as the brief gives ground truth: each declared note by its
    # versioned id, with its first line and headings.
    tool = call(key, "truth", {"notebookId": f"notebook:{garden.id}"})["structuredContent"]
    assert [(n["id"], n["line"]) for n in tool["notes"]] == [
        (n["versionedId"], "Watering (sections: Morning)") for n in rest["notes"]]
    assert (tool["state"], tool["policy"], tool["withheld"]) == ("own", "restrict", 0)
    assert data(limited.get("/truth"))["state"] == "none"
    hidden = factories.notebook(owner, "Hidden")
    assert limited.get(f"/notebooks/{hidden.id}/truth").status_code == 404
    held = call(key, "update_memory", {"noteId": str(rule.id), "content": "Water at noon."})
    assert held.get("isError") is not True, held
    assert held["structuredContent"]["id"] == f"note:{rule.id}@1"
    assert held["structuredContent"]["pendingRevision"]["status"] == "pending"
    again = data(limited.get(f"/notebooks/{garden.id}/truth?full=true"))
    assert again["notes"][0]["content"].endswith("Before 9.")
    patched = limited.call("PATCH", f"/notes/{rule.id}", {"content": "Water at night."})
    assert patched.status_code == 200 and data(patched)["pendingRevision"]["id"]
