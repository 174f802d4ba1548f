"""The OpenAPI document says what the services accept: requests the services refuse are
invalid by the document too (so a client generated from it, or a fuzzer, cannot send
them believing they are fine), and the forms the services take are valid by it. The
fuzz test (`test_fuzz.py`) checks the other direction on live traffic."""

from __future__ import annotations

import uuid

import jsonschema
import pytest
from django.core import signing
from django.test import Client

from notebooks.models import SOURCE_AGENT_MAX_CHARS
from tests import factories
from tests.api.conftest import Caller, data, new_key

pytestmark = pytest.mark.django_db

U, V = str(uuid.uuid4()), str(uuid.uuid4())

REFUSED = [
    ("RememberIn", {"content": "x", "kind": "fact", "sourceAgent": "a" * 101}),
    ("RememberIn", {"content": " \n\t ", "kind": "fact"}),
    ("RememberIn", {"content": "x", "kind": "fact", "pinned": None}),
    ("RememberIn", {"content": "x", "kind": "fact", "importance": None}),
    ("RememberIn", {"content": "x", "kind": "fact", "capture": None}),
    ("RememberIn", {"content": "x", "kind": "handoff"}),
    ("RememberIn", {"content": "x", "kind": "handoff", "taskId": " "}),
    ("RememberIn", {"content": "x", "kind": "fact", "notebookId": "nope"}),
    ("RememberIn", {"content": "a\x00b", "kind": "fact"}),
    ("NotePatchIn", {}),
    ("NotePatchIn", {"expectedVersion": 2}),
    ("NotePatchIn", {"kind": None}),
    ("NotePatchIn", {"content": None}),
    ("NotePatchIn", {"taskId": ""}),
    ("NotebookCreateIn", {"name": "   "}),
    ("NotebookCreateIn", {"name": "x", "parentId": ""}),
    ("NotebookUpdateIn", {}),
    ("NotebookUpdateIn", {"name": None}),
    ("RecallIn", {"notebookId": None, "notebookIds": []}),
    ("RecallIn", {"taskId": ""}),
    ("MoveIn", {"noteIds": [U, U], "notebookId": None}),
    ("BatchIn", {"items": [U, U]}),
    ("BatchIn", {"items": [""]}),
    ("BatchIn", {"items": [{"id": f"note:{U}@2", "expectedVersion": 3}]}),
    ("BatchIn", {"items": [f"note:{U}@0"]}),
    ("SearchIn", {"sort": "relevance"}),
    ("SearchIn", {"sort": "relevance", "query": "  "}),
    ("SearchIn", {"cursor": ""}),
    ("AskIn", {"query": " "}),
    ("TurnIn", {"id": U, "query": "why?", "expectedVersion": -1}),
    ("TurnIn", {"id": U, "query": "", "expectedVersion": 0}),
    ("ContextIn", {"notes": [U, U]}),
]

ACCEPTED = [
    ("RememberIn", {"content": "x", "kind": "handoff", "taskId": "T-1",
                    "notebookId": f"notebook:{U}", "sourceAgent": "a" * 100}),
    ("RememberIn", {"content": "x", "kind": "fact", "notebookId": "personal",
                    "taskId": None, "sourceAgent": None, "retentionDays": None}),
    ("NotePatchIn", {"taskId": None}),
    ("NotePatchIn", {"pinned": True, "expectedVersion": 3}),
    ("NotebookUpdateIn", {"parentId": None}),
    ("NotebookUpdateIn", {"parentId": "root"}),
    ("RecallIn", {"notebookIds": [U, V]}),
    ("RecallIn", {"notebookId": None}),
    ("BatchIn", {"items": [f"note:{U}@2", {"id": V, "expectedVersion": 1}]}),
    ("BatchIn", {"items": [{"id": f"note:{U}@2", "expectedVersion": None}]}),
    ("SearchIn", {"sort": "relevance", "query": "bread"}),
    ("TurnIn", {"id": U, "query": "why?", "expectedVersion": 0}),
]


@pytest.fixture(scope="module")
def document(django_db_setup, django_db_blocker) -> dict:
    return Client().get("/v1/openapi.json").json()


def _validator(document: dict, name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": document["components"]})


@pytest.mark.parametrize(("name", "body"), REFUSED)
def test_what_the_services_refuse_the_document_refuses(document, name, body):
    assert not _validator(document, name).is_valid(body), (name, body)


@pytest.mark.parametrize(("name", "body"), ACCEPTED)
def test_what_the_services_take_the_document_takes(document, name, body):
    errors = [e.message for e in _validator(document, name).iter_errors(body)]
    assert errors == [], (name, body)


def _parameter(document: dict, path: str, name: str) -> dict:
    [found] = [p for p in document["paths"][path]["get"]["parameters"] if p["name"] == name]
    return found["schema"]


def test_query_parameters_state_the_service_limits(document):
    source_agent = _parameter(document, "/v1/notes", "sourceAgent")
    assert source_agent["anyOf"][0]["maxLength"] == SOURCE_AGENT_MAX_CHARS
    for path in ("/v1/notes", "/v1/notebooks", "/v1/activity"):
        # Only the shape of a signed cursor: `0` or `` are not cursors by the document.
        cursor = jsonschema.Draft202012Validator(_parameter(document, path, "cursor"))
        assert cursor.is_valid(signing.dumps({"k": [1]}, salt="any", compress=True))
        assert not cursor.is_valid("0") and not cursor.is_valid("")
    typed = jsonschema.Draft202012Validator(_parameter(document, "/v1/get/{typed_id}",
                                                       "typed_id"))
    assert typed.is_valid(f"note:{U}@3") and typed.is_valid(f"notebook:{U}")
    assert not typed.is_valid(f"note:{U}@0") and not typed.is_valid("0")


def test_the_refused_bodies_are_refused_by_the_server(owner):
    """Each refused body the server checks without looking anything up: a 4xx with a
    code, never a success."""
    key, actor = new_key(owner)
    api = Caller(Client(), key, actor)
    routes = {"RememberIn": "/notes", "NotebookCreateIn": "/notebooks", "RecallIn": "/recall",
              "SearchIn": "/notes/search", "AskIn": "/ask", "BatchIn": "/notes/archive",
              "MoveIn": "/notes/move"}
    for name, body in REFUSED:
        if name in routes:
            response = api.post(routes[name], body)
            assert response.status_code in (400, 422), (name, body, response.content[:300])
            assert response.json()["error"]["code"]


def test_a_notebook_filter_takes_the_typed_form(owner):
    key, actor = new_key(owner)
    api = Caller(Client(), key, actor)
    book = factories.notebook(owner, "Typed")
    factories.note(owner, "in the book", notebook_id=book.id)
    factories.note(owner, "personal")
    for form in (str(book.id), f"notebook:{book.id}"):
        found = data(api.get(f"/notes?notebookId={form}"))
        assert [n["note"]["content"] for n in found] == ["in the book"], form
