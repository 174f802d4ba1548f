"""Library search shows where a long document matched (issue 37, item 3): the snippet
is drawn from the passage the query ranks highest, not from the document's opening; a
memory record's snippet is drawn from its whole text as before."""

from __future__ import annotations

import pytest
from django.test import Client

from tests import factories
from tests.api.conftest import Caller, new_key
from tests.passages.test_sync import document

pytestmark = pytest.mark.django_db


def test_a_long_documents_snippet_is_the_passage_that_matched():
    owner = factories.owner()
    text = document(70).replace("## Section 61\n\n",
                                "## Section 61\n\nOtters were seen below the old mill race. ")
    note = factories.note(owner, text, kind="note")
    fact = factories.note(owner, "Otters returned to the lower river in 2019.", kind="fact")
    key, _ = new_key(owner)
    api = Caller(Client(), key)
    found = api.post("/notes/search", {"query": "otters mill", "matches": True}).json()
    items = {item["note"]["id"]: item for item in found["data"]}
    assert str(note.id) in items and set(items) <= {str(note.id), str(fact.id)}
    snippet = items[str(note.id)]["matches"]["snippet"]
    assert "«Otters»" in snippet and "«mill»" in snippet
    assert "Field manual" not in snippet  # not the document's opening
    words = api.post("/notes/search", {"query": "otters", "matches": True}).json()["data"]
    by_id = {item["note"]["id"]: item["matches"]["snippet"] for item in words}
    assert by_id[str(fact.id)].startswith("«Otters» returned to the lower river")
