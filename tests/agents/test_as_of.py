"""As-of reads (issue 39 item 6): `asOf` on recall, get_note, list_notes and the brief
answers from the notes' revisions — the revision valid then, notes created later left
out, notes deleted since included, the grant checked on where the note was then — and
says which instant it used (`meta.asOf`)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.utils import timezone

from grove.kernel.errors import Invalid
from notebooks import services
from notebooks.selectors.as_of import clean_as_of
from tests import factories
from tests.api.conftest import Caller, data, error, new_key
from tests.mcp.helpers import modern

pytestmark = pytest.mark.django_db

MAY = "Pricing: the Pro plan costs 12 dollars a month, billed yearly."
JUNE = "Pricing: the Pro plan costs 15 dollars a month, billed yearly."


def _tick() -> str:
    """The instant between two saves, as an agent would write it."""
    moment = timezone.now().isoformat()
    time.sleep(0.01)  # the next save's revision is stamped later
    return moment


def _q(path: str, params: dict) -> str:
    return f"{path}?{urlencode(params)}"


def _world():
    owner = factories.owner()
    work = factories.notebook(owner, "Work")
    key, actor = new_key(owner)
    api = Caller(Client(), key, actor)
    note = data(api.post("/notes", {"content": MAY, "kind": "fact", "notebookId": str(work.id)}))
    may = _tick()
    changed = data(api.patch(f"/notes/{note['id']}", {"content": JUNE, "expectedVersion": 1}))
    assert changed["version"] == 2
    return owner, work, api, note, may


def test_get_note_as_of_reads_the_revision_valid_then():
    _owner, _work, api, note, may = _world()
    then = data(api.get(_q(f"/notes/{note['id']}", {"asOf": may})))
    assert (then["versionedId"], then["content"]) == (f"note:{note['id']}@1", MAY)
    assert datetime.fromisoformat(then["asOf"]) == datetime.fromisoformat(may)
    now = data(api.get(f"/notes/{note['id']}"))
    assert (now["versionedId"], "asOf" in now) == (f"note:{note['id']}@2", False)
    # Before the note was written: as unknown as a note one cannot see.
    before = (datetime.fromisoformat(may) - timedelta(hours=1)).isoformat()
    missing = api.get(_q(f"/notes/{note['id']}", {"asOf": before}))
    error(missing, 404, "note_not_found")
    # A version and an instant at once is a contradiction, said plainly (get_note).
    both = modern(api.key, "tools/call", {"name": "get_note", "arguments": {
        "noteId": f"note:{note['id']}@2", "asOf": may}}).json()["result"]
    assert both["isError"] and "not both" in both["content"][0]["text"]
    # So is following today's links from yesterday's notes.
    linked = api.post("/recall", {"query": "plan", "asOf": may, "expand": None})
    error(linked, 400, "invalid_expand")


def test_list_and_recall_as_of_leave_out_later_notes_and_keep_deleted_ones():
    _owner, work, api, note, may = _world()
    later = data(api.post("/notes", {"content": "Pricing: a Team plan at 40 dollars a month.",
                                     "kind": "fact", "notebookId": str(work.id)}))
    api.post("/notes/forget", {"items": [note["id"]]})  # deleted since
    listed = api.get(_q("/notes", {"asOf": may}))
    ids = [item["note"]["versionedId"] for item in data(listed)]
    assert ids == [f"note:{note['id']}@1"]
    assert datetime.fromisoformat(listed.json()["meta"]["asOf"]) == \
        datetime.fromisoformat(may)
    now_ids = [item["note"]["id"] for item in data(api.get("/notes"))]
    assert now_ids == [later["id"]]  # today: the deleted one is gone, the later one here

    found = api.post("/recall", {"query": "how much does the Pro plan cost", "asOf": may})
    items = data(found)
    assert [item["note"]["versionedId"] for item in items] == [f"note:{note['id']}@1"]
    assert items[0]["note"]["content"] == MAY and "lexical" in items[0]["matched"]
    assert found.json()["meta"]["asOf"]
    profile = data(api.post("/recall", {"asOf": may}))
    assert [item["note"]["content"] for item in profile] == [MAY]


def test_the_grant_is_checked_on_where_the_note_was_then():
    owner = factories.owner()
    secret = factories.notebook(owner, "Secret")
    shared = factories.notebook(owner, "Shared")
    moved = factories.note(owner, "The vault code is 7-4-1-9.", notebook_id=secret.id)
    said_then = _tick()
    services.note_move(actor=owner, operation_id=factories.op(), note_ids=[moved.id],
                       notebook_id=shared.id)
    key, actor = new_key(owner, personal=False, all_notebooks=False, notebooks=[shared.id])
    agent = Caller(Client(), key, actor)
    # Today the note is in a notebook the agent may read…
    assert data(agent.get(f"/notes/{moved.id}"))["content"] == "The vault code is 7-4-1-9."
    # …but then it was in one it may not: as of then, nothing of it.
    hidden = agent.get(_q(f"/notes/{moved.id}", {"asOf": said_then}))
    error(hidden, 404, "note_not_found")
    assert data(agent.get(_q("/notes", {"asOf": said_then}))) == []
    assert data(agent.post("/recall", {"query": "vault code", "asOf": said_then})) == []
    brief = data(agent.get(_q("/brief", {"asOf": said_then, "format": "json"})))
    assert "vault" not in json.dumps(brief)


def test_the_brief_as_of_then():
    _owner, _work, api, note, may = _world()
    brief = data(api.get(_q("/brief", {"asOf": may, "format": "json"})))
    assert datetime.fromisoformat(brief["meta"]["asOf"]) == datetime.fromisoformat(may)
    facts = {n["id"]: n["content"] for n in brief["facts"]}
    assert facts == {f"note:{note['id']}@1": MAY}
    assert [change["id"] for change in brief["recent"]] == [f"note:{note['id']}@1"]
    now = data(api.get(_q("/brief", {"format": "json"})))
    assert {n["id"] for n in now["facts"]} == {f"note:{note['id']}@2"}
    assert "asOf" not in now["meta"]


def test_mcp_tools_take_as_of():
    _owner, _work, api, note, may = _world()
    for tool, arguments in (("get_note", {"noteId": note["id"]}),
                            ("list_notes", {}), ("recall", {"query": "Pro plan price"}),
                            ("brief", {"format": "json"})):
        answer = modern(api.key, "tools/call", {"name": tool, "arguments": {
            **arguments, "asOf": may}}).json()["result"]
        assert not answer.get("isError"), (tool, answer)
        text = json.dumps(answer["structuredContent"])
        assert MAY.split(":")[1].strip()[:20] in text and "15 dollars" not in text, tool


@pytest.mark.parametrize("value", ["", "yesterday", "2026-13-01", "2026-02-30",
                                   "12:00", "0001-01-01", "9999-12-31", "x" * 65, 5,
                                   "2026-05-31T25:00", "2026-05-31T10:00+24:00"])
def test_a_bad_as_of_is_refused(value):
    _owner, _work, api, note, _may = _world()
    for answer in (api.get(_q(f"/notes/{note['id']}", {"asOf": value})),
                   api.post("/recall", {"query": "plan", "asOf": value}),
                   api.post("/notes/search", {"asOf": value}),
                   api.get(_q("/brief", {"asOf": value}))):
        # The schema's limits (length, type): 422; what the schema cannot say: 400.
        said = (answer.status_code, answer.json()["error"]["code"])
        assert said in ((400, "invalid_as_of"), (422, "invalid_request")), (value, said)


def test_days_months_and_zones():
    owner = factories.owner()
    zone = ZoneInfo("America/New_York")
    day = clean_as_of("2026-05-31", actor=owner, time_zone="America/New_York")
    assert day is not None
    assert day.instant == datetime(2026, 6, 1, tzinfo=zone) - timedelta(microseconds=1)
    month = clean_as_of("2026-02", actor=owner, time_zone="UTC")
    assert month is not None and month.instant.isoformat() == "2026-02-28T23:59:59.999999+00:00"
    # A time covers what it names: this second; the millisecond REST writes times in.
    offset = clean_as_of("2026-05-31T17:00:00+02:00", actor=owner)
    assert offset is not None and offset.instant == datetime.fromisoformat(
        "2026-05-31T15:00:00.999999+00:00")
    milli = clean_as_of("2026-05-31T15:00:00.123Z", actor=owner)
    assert milli is not None and milli.instant == datetime.fromisoformat(
        "2026-05-31T15:00:00.123999+00:00")
    far = clean_as_of("2024-02-29T05:36:09.7+22:40", actor=owner)  # beyond PostgreSQL's ±15:59
    assert far is not None and far.instant.utcoffset() == timedelta(0)
    owner_api = Caller(Client(), new_key(owner)[0])
    assert data(owner_api.get(_q("/notes", {"asOf": "2024-02-29T05:36:09.7+22:40"}))) == []
    minute = clean_as_of("2026-05-31 15:00", actor=owner, time_zone="UTC")
    assert minute is not None and minute.instant.second == 59
    today = clean_as_of(timezone.now().date().isoformat(), actor=owner, time_zone="UTC")
    assert today is not None and today.instant <= timezone.now()  # read up to now
    later = clean_as_of((timezone.now() + timedelta(days=2)).isoformat(), actor=owner)
    assert later is not None and later.instant <= timezone.now()  # nothing later exists
    with pytest.raises(Invalid) as refused:
        clean_as_of("next tuesday", actor=owner)
    assert refused.value.code == "invalid_as_of"


def test_a_note_superseded_since_says_by_which_when_read_as_of_then():
    """Supersession (item 7) read through history: the older memory, as it was then,
    names the memory that replaced it since."""
    owner = factories.owner()
    key, actor = new_key(owner)
    api = Caller(Client(), key, actor)
    old = data(api.post("/notes", {"content": "Standups are at ten.", "kind": "decision"}))
    then = _tick()
    new = data(api.post("/notes", {"content": "Standups are at eleven.", "kind": "decision",
                                   "supersedes": f"note:{old['id']}@1"}))
    found = data(api.post("/recall", {"query": "when are standups", "asOf": then}))
    assert [(i["note"]["versionedId"], i["note"].get("supersededBy")) for i in found] == [
        (f"note:{old['id']}@1", new["id"])]
    assert data(api.get(_q(f"/notes/{old['id']}", {"asOf": then})))["content"] == \
        "Standups are at ten."
    told = modern(key, "tools/call", {"name": "recall", "arguments": {
        "query": "when are standups", "asOf": then}}).json()["result"]
    assert told["structuredContent"]["data"][0]["supersededBy"] == f"note:{new['id']}"
    assert f"(superseded by note:{new['id']})" in told["content"][0]["text"]
    now = [i["note"]["id"] for i in data(api.post("/recall", {"query": "when are standups"}))]
    assert now == [new["id"]]  # today the older one is archived
