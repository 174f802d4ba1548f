"""Time-aware recall (SPEC §4): the grammar, stated dates written at save, the window
filtering or boosting both arms, `meta.timeWindow` over REST and MCP, grants, queries
without time words left alone, and bad input."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest
from django.test import Client

from bench import scifact
from grove.kernel.errors import Invalid
from grove.models import Account
from notebooks import services
from notebooks.dates import stated_dates, time_expression
from notebooks.models import Note
from notebooks.selectors import time_window as tw
from notebooks.selectors.recall import recall
from tests import factories
from tests.api.conftest import Caller, error, new_key
from tests.conftest import IN_CI
from tests.factories import op
from tests.notebooks.test_recall import TableEmbedder, index_all, unit, use_embedder

pytestmark = pytest.mark.django_db
LA = ZoneInfo("America/Los_Angeles")
TODAY = date(2026, 12, 2)  # a Wednesday


# -- the grammar -----------------------------------------------------------------------------

@pytest.mark.parametrize(("query", "start", "end", "rest"), [
    ("what did we decide last week about billing", date(2026, 11, 23), date(2026, 11, 30),
     "what did we decide about billing"),
    ("notes from May 2023", date(2023, 5, 1), date(2023, 6, 1), "notes"),
    ("since March", date(2026, 3, 1), None, ""),
    ("before 2024", None, date(2024, 1, 1), ""),
    ("after May 2023", date(2023, 6, 1), None, ""),
    ("until June", None, date(2026, 7, 1), ""),
    ("this quarter", date(2026, 10, 1), date(2027, 1, 1), ""),
    ("last quarter", date(2026, 7, 1), date(2026, 10, 1), ""),
    ("yesterday", date(2026, 12, 1), date(2026, 12, 2), ""),
    ("two weeks ago", date(2026, 11, 16), date(2026, 11, 23), ""),
    ("in the last 3 days", date(2026, 11, 30), date(2026, 12, 3), ""),
    ("last friday standup", date(2026, 11, 27), date(2026, 11, 28), "standup"),
    ("between March and May 2024", date(2024, 3, 1), date(2024, 6, 1), ""),
    ("from Nov to Feb 2024", date(2023, 11, 1), date(2024, 3, 1), ""),
    ("between 2025 and 2020", date(2020, 1, 1), date(2026, 1, 1), ""),
    ("Q3 2024 roadmap", date(2024, 7, 1), date(2024, 10, 1), "roadmap"),
    ("meeting on 2023-05-03", date(2023, 5, 3), date(2023, 5, 4), "meeting"),
    ("the 3rd of May 2023", date(2023, 5, 3), date(2023, 5, 4), "the"),
])
def test_time_expressions(query, start, end, rest):
    found = time_expression(query, TODAY)
    assert found is not None and (found.start, found.end, found.rest) == (start, end, rest)


@pytest.mark.parametrize("query", [
    "before the migration",  # an event, not a date: needs a model
    "may we use the second server", "how do I configure replication",
    "a cohort of 2000 patients", "in 2000 patients", "notes on 2023-02-30", "in 2023-13-45",
    "the last 9999 years", "in 3000", "v2.2023 release", "Marty's notes", "",
])
def test_not_time_expressions(query):
    assert time_expression(query, TODAY) is None


def test_a_query_late_on_a_months_last_day_in_los_angeles(monkeypatch):
    """23:30 on May 31 in Los Angeles is already June 1 in UTC: "this month" is May."""
    actor = factories.owner()
    instant = datetime(2026, 5, 31, 23, 30, tzinfo=LA)
    monkeypatch.setattr(tw.timezone, "now", lambda: instant.astimezone(UTC))
    window, rest = tw.time_window(actor=actor, query="notes from this month",
                                  time_zone="America/Los_Angeles")
    assert (window.start, window.end, rest) == (date(2026, 5, 1), date(2026, 6, 1), "")
    assert window.instants() == (datetime(2026, 5, 1, tzinfo=LA), datetime(2026, 6, 1, tzinfo=LA))
    utc, _ = tw.time_window(actor=actor, query="this month", time_zone="UTC")
    assert utc.start == date(2026, 6, 1)
    # Without timeZone: the account's zone (Settings).
    Account.objects.filter(id=actor.account_id).update(time_zone="America/Los_Angeles")
    own, _ = tw.time_window(actor=actor, query="this month", time_zone=None)
    assert own.start == date(2026, 5, 1) and own.zone.key == "America/Los_Angeles"


def test_stated_dates_are_read_from_text():
    assert stated_dates(
        "Met 2023-05-03 and May 4, 2023; then 3 June 2023, Q3 2023, 2023-11, in 2019; "
        "not 2023-02-30, v2.2023, a cohort of 2000 patients") == [
        (date(2019, 1, 1), date(2020, 1, 1)), (date(2023, 5, 3), date(2023, 5, 5)),
        (date(2023, 6, 3), date(2023, 6, 4)), (date(2023, 7, 1), date(2023, 10, 1)),
        (date(2023, 11, 1), date(2023, 12, 1))]
    assert stated_dates("nothing dated here") == []


# -- stated dates at save --------------------------------------------------------------------

def test_stated_dates_are_written_at_save_edit_and_restore():
    actor = factories.owner()
    note = factories.note(actor, "Billing moved to Stripe on 2023-05-03.")
    assert factories.note_row(actor, note.id).stated_dates == [(date(2023, 5, 3),
                                                                date(2023, 5, 4))]
    services.note_update(actor=actor, operation_id=op(), note_id=note.id,
                         content="Billing moved to Stripe in June 2024.")
    assert factories.note_row(actor, note.id).stated_dates == [(date(2024, 6, 1),
                                                                date(2024, 7, 1))]
    services.note_update(actor=actor, operation_id=op(), note_id=note.id, pinned=True)
    assert factories.note_row(actor, note.id).stated_dates == [(date(2024, 6, 1),
                                                                date(2024, 7, 1))]
    services.note_restore_revision(actor=actor, operation_id=op(), note_id=note.id, revision=1)
    assert factories.note_row(actor, note.id).stated_dates == [(date(2023, 5, 3),
                                                                date(2023, 5, 4))]
    services.note_update(actor=actor, operation_id=op(), note_id=note.id,
                         content="No date at all.")
    assert factories.note_row(actor, note.id).stated_dates == []


# -- recall ----------------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _clean_vector_index(vacuumed_vectors):
    pass


def dated(actor, content, when: datetime, **kwargs):
    """A note saved through the service, then dated `when` (created and updated)."""
    note = factories.note(actor, content, **kwargs)
    with factories.tenant(actor):
        Note.objects.filter(id=note.id).update(created_at=when, updated_at=when)
    return note.id


def ids(result):
    return [item.note.id for item in result.data]


@pytest.fixture
def billing():
    actor = factories.owner()
    old = datetime(2022, 1, 10, tzinfo=UTC)
    notes = {
        "stated": dated(actor, "Billing decision 2023-05-04: invoices move to Stripe.", old),
        "created": dated(actor, "Billing decision: refunds go through support.",
                         datetime(2023, 5, 20, 12, tzinfo=UTC)),
        "later": dated(actor, "Billing decision 2024-02-01: invoices move to Paddle.", old),
        "other": dated(actor, "Billing decision: taxes are added at checkout.", old),
    }
    index_all(actor)
    return actor, notes


def test_a_bounded_window_filters_the_lexical_arm(billing):
    actor, notes = billing
    result = recall(actor=actor, query="billing decisions since 2024", time_zone="UTC")
    assert ids(result) == [notes["later"]]
    assert result.meta.available == 1
    assert result.meta.time_window.model_dump(by_alias=True) == {
        "from": "2024-01-01", "to": None, "expression": "since 2024", "mode": "filter"}


def test_a_loose_window_puts_its_notes_first_and_keeps_the_others(billing):
    actor, notes = billing
    result = recall(actor=actor, query="billing decisions in May 2023", time_zone="UTC")
    assert set(ids(result)[:2]) == {notes["stated"], notes["created"]}  # stated, created
    assert set(ids(result)[2:]) == {notes["later"], notes["other"]}
    assert result.meta.time_window.mode == "boost"
    assert result.meta.available == 4


def test_only_time_words_list_the_window(billing):
    actor, notes = billing
    result = recall(actor=actor, query="notes from May 2023", time_zone="UTC")
    assert ids(result) == [notes["created"], notes["stated"]]  # most recently updated first
    assert result.meta.mode == "window" and result.meta.available == 2
    assert [item.matched for item in result.data] == [["window"], ["window"]]


def test_the_window_filters_and_flags_the_semantic_arm(monkeypatch):
    actor = factories.owner()
    embedder = TableEmbedder({"travel plans": unit(1, 0), "Lisbon trip booked.": unit(1, 0.1),
                              "Porto trip in March 2025.": unit(1, 0.3)})
    use_embedder(monkeypatch, embedder)
    old = datetime(2021, 6, 1, tzinfo=UTC)
    lisbon = dated(actor, "Lisbon trip booked.", old)
    porto = dated(actor, "Porto trip in March 2025.", old)
    index_all(actor)
    plain = recall(actor=actor, query="travel plans")
    assert ids(plain) == [lisbon, porto] and plain.meta.time_window is None
    boosted = recall(actor=actor, query="travel plans in 2025", time_zone="UTC")
    assert ids(boosted) == [porto, lisbon]  # semantic only: no word is shared
    assert [item.matched for item in boosted.data] == [["semantic"], ["semantic"]]
    filtered = recall(actor=actor, query="travel plans after 2024", time_zone="UTC")
    assert ids(filtered) == [porto]


def test_a_window_never_reaches_outside_the_grant(billing):
    actor, notes = billing
    shelf = factories.notebook(actor, "Shelf")
    hidden = dated(actor, "Billing decision 2023-05-09 for the shelf.",
                   datetime(2023, 5, 9, tzinfo=UTC), notebook_id=shelf.id)
    key = factories.connection(actor, personal=True)  # Personal only: not the shelf
    for query in ("notes from May 2023", "billing decision in May 2023",
                  "billing since 2020"):
        found = ids(recall(actor=key, query=query, time_zone="UTC"))
        assert found and hidden not in found
    assert hidden in ids(recall(actor=actor, query="notes from May 2023", time_zone="UTC"))
    assert recall(actor=factories.owner(), query="notes from May 2023").data == []


def test_queries_without_time_words_are_left_alone(billing):
    actor, _ = billing
    assert tw.time_window(actor=actor, query="billing decisions stripe",
                          time_zone=None) == (None, "billing decisions stripe")
    result = recall(actor=actor, query="billing decisions")
    assert result.meta.time_window is None and len(result.data) == 4


def test_scifact_claims_almost_never_speak_of_time():
    """The quality benchmark's queries: the grammar leaves all but a handful alone (years
    of a study, which the window then reads as years — see docs/benchmarks.md)."""
    # Where the benchmarks find it: $GROVE_SCIFACT_DIR, relative to the checkout
    # (default: shared/data/scifact beside it).
    path = scifact.data_folder() / "queries.jsonl"
    if not path.exists():
        where = f"{path} (${scifact.DATA_SETTING} names the folder, relative to the checkout)"
        if IN_CI:
            pytest.fail(f"CI=true: the SciFact queries must be present at {where}")
        pytest.skip(f"the SciFact benchmark data is not on this machine: no {where}")
    claims = [json.loads(line)["text"] for line in path.read_text().splitlines()]
    found = [c for c in claims if time_expression(c, TODAY) is not None]
    assert len(claims) > 1000 and len(found) <= 8, found


def test_the_scifact_folder_is_named_relative_to_the_checkout(monkeypatch, tmp_path):
    """No test or benchmark names a place outside the checkout: the folder comes from
    $GROVE_SCIFACT_DIR, read relative to the checkout (or as given, when absolute)."""
    monkeypatch.delenv(scifact.DATA_SETTING, raising=False)
    assert scifact.data_folder() == (scifact.CHECKOUT.parent / "shared" / "data"
                                     / "scifact").resolve()
    monkeypatch.setenv(scifact.DATA_SETTING, "../../elsewhere/scifact")
    assert scifact.data_folder() == (scifact.CHECKOUT / "../../elsewhere/scifact").resolve()
    monkeypatch.setenv(scifact.DATA_SETTING, str(tmp_path))
    assert scifact.data_folder() == tmp_path.resolve()


@pytest.mark.parametrize("zone", ["Mars/Base", "../etc/passwd", "x" * 65])
def test_a_bad_time_zone_is_refused(zone):
    actor = factories.owner()
    with pytest.raises(Invalid) as caught:
        recall(actor=actor, query="anything", time_zone=zone)
    assert caught.value.code in ("invalid_time_zone",)


# -- REST and MCP ----------------------------------------------------------------------------

def test_time_window_over_rest_and_mcp(billing):
    actor, notes = billing
    key, _ = new_key(actor)
    api = Caller(Client(), key)
    body = data_and_meta(api.post("/recall", {"query": "notes from May 2023",
                                              "timeZone": "America/Los_Angeles"}))
    assert body["meta"]["timeWindow"] == {"from": "2023-05-01", "to": "2023-05-31",
                                          "expression": "from May 2023", "mode": "filter"}
    assert [item["note"]["id"] for item in body["data"]] == [str(notes["created"]),
                                                            str(notes["stated"])]
    plain = data_and_meta(api.post("/recall", {"query": "billing"}))
    assert "timeWindow" not in plain["meta"]
    error(api.post("/recall", {"query": "x", "timeZone": "Mars/Base"}), 400,
          "invalid_time_zone")
    assert api.post("/recall", {"query": "x", "timeZone": 7}).status_code in (400, 422)
    assert api.post("/recall", {"query": "from 2023-02-30 to 2099-99-99"}).status_code == 200
    tool = Client().post(
        "/mcp", data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                 "params": {"name": "recall",
                                            "arguments": {"query": "billing since 2024"}}}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}", "MCP-Protocol-Version": "2025-11-25",
                 "Accept": "application/json, text/event-stream"}).json()["result"]
    meta = tool["structuredContent"]["meta"]
    assert meta["timeWindow"] == {"from": "2024-01-01", "expression": "since 2024",
                                  "mode": "filter"}
    assert [n["id"].split("@")[0].removeprefix("note:")
            for n in tool["structuredContent"]["data"]] == [str(notes["later"])]


def data_and_meta(response):
    body = response.json()
    assert response.status_code == 200 and body["success"] is True, body
    return {"data": body["data"], "meta": body["meta"]}
