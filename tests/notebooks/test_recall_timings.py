"""Recall's stages (issue 23 item 4): every recall is timed into
`grove_recall_arm_duration_seconds{arm}`; `POST /v1/recall` with `timings: true` also
returns them as `meta.timings` (milliseconds) — absent otherwise, and not an MCP argument."""

from __future__ import annotations

import pytest
from django.test import Client

from grove.kernel.metrics import REGISTRY
from tests import factories
from tests.api.conftest import Caller, data, new_key
from tests.mcp.test_protocol import call
from tests.notebooks.test_recall import index_all

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner():
    owner = factories.owner()
    for text in ("The garden gate squeaks in the rain.", "Oil the garden gate hinges.",
                 "Tomatoes want sun."):
        factories.note(owner, text)
    index_all(owner)
    return owner


@pytest.fixture
def key(owner) -> str:
    return new_key(owner)[0]


def recall(key: str, body: dict) -> dict:
    response = Caller(Client(), key).post("/recall", body)
    assert response.status_code == 200, response.content
    return response.json()


def observed(arm: str) -> float:
    return REGISTRY.get_sample_value("grove_recall_arm_duration_seconds_count",
                                     {"arm": arm}) or 0.0


def test_timings_when_asked_name_each_stage_that_ran(key):
    answer = recall(key, {"query": "garden gate", "timings": True})
    meta = answer["meta"]
    assert meta["mode"] == "hybrid" and meta["returned"] == 2
    timings = meta["timings"]
    assert set(timings) == {"embed", "terms", "search", "items", "total"}
    assert all(isinstance(ms, float) and ms >= 0 for ms in timings.values())
    stages = sum(ms for stage, ms in timings.items() if stage != "total")
    assert timings["total"] >= stages - 0.01  # the stages run one after another within it
    assert timings["search"] > 0

    profile = recall(key, {"timings": True})["meta"]
    assert profile["mode"] == "profile" and set(profile["timings"]) == {"profile", "total"}
    window = recall(key, {"query": "notes from May 2023", "timings": True})["meta"]
    assert window["mode"] == "window" and set(window["timings"]) == {"window", "total"}


def test_timings_are_absent_unless_asked(key):
    assert "timings" not in recall(key, {"query": "garden gate"})["meta"]
    assert "timings" not in recall(key, {"query": "garden gate", "timings": False})["meta"]
    assert "timings" not in recall(key, {})["meta"]


def test_every_recall_is_observed_whoever_asks_and_whether_or_not_it_asks(key):
    before = {arm: observed(arm) for arm in ("embed", "terms", "search", "items", "total")}
    recall(key, {"query": "garden gate"})
    result = call(key, "recall", {"query": "garden gate"})
    assert result["isError"] is False and "timings" not in result["structuredContent"]["meta"]
    for arm, count in before.items():
        assert observed(arm) - count == 2, arm


def test_timings_is_a_rest_argument_only(key):
    refused = call(key, "recall", {"query": "garden gate", "timings": True})
    assert refused["isError"] is True
    tool = Caller(Client(), key).post("/tools/recall", {"query": "garden gate", "timings": True})
    assert tool.status_code in (400, 422), tool.content
    assert "timings" not in data(Caller(Client(), key).post(
        "/tools/recall", {"query": "garden gate"}))["meta"]


def test_the_openapi_document_describes_timings():
    document = Client().get("/v1/openapi.json").json()
    schemas = document["components"]["schemas"]
    assert schemas["RecallIn"]["properties"]["timings"]["type"] == "boolean"
    meta = schemas["RecallApiMeta"]["properties"]["timings"]
    assert meta["additionalProperties"] == {"type": "number"}
