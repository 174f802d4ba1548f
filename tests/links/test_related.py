"""A note's neighbourhood by links (issue 38 item 4): REST
`GET /v1/notes/{id}/related` and the `related` tool give the same notes — linked to and
from it (depth 1) and to and from those (depth 2) — with the list meta every list has,
a page at a time; nothing outside the caller's grant is listed or hopped through."""

from __future__ import annotations

import pytest
from django.test import Client

from tests import factories
from tests.api.conftest import Caller, data, error, new_key
from tests.mcp.helpers import modern

pytestmark = pytest.mark.django_db


def _graph():
    owner = factories.owner()
    open_book = factories.notebook(owner, "Open")
    hidden = factories.notebook(owner, "Hidden")

    def note(text, book=open_book):
        return factories.note(owner, text, kind="note", notebook_id=book.id)

    c = note("# Charlie\n\nEnd.")
    b = note("# Bravo\n\nOn to [[Charlie]] and [[Foxtrot]].")
    a = note("# Alpha\n\nSee [[Bravo]].")
    d = note("# Delta\n\nBack to [[Alpha]].")
    e = note("# Echo\n\nAlso [[Alpha]]; and [[Golf]].", hidden)
    f = note("# Foxtrot\n\nHidden.", hidden)
    g = note("# Golf\n\nOnly reachable through Echo.")
    key, _ = new_key(owner, personal=False, all_notebooks=False, notebooks=[open_book.id])
    return owner, key, {n: x for n, x in zip("abcdefg", (a, b, c, d, e, f, g), strict=True)}


def test_the_neighbourhood_to_depth_two_within_the_grant():
    _, key, n = _graph()
    api = Caller(Client(), key)
    near = api.get(f"/notes/{n['a'].id}/related?depth=1")
    assert [(x["title"], x["depth"], x["direction"]) for x in data(near)] == [
        ("Bravo", 1, "to"), ("Delta", 1, "from")]
    both = api.get(f"/notes/{n['a'].id}/related")
    rows = data(both)
    assert [(x["title"], x["depth"], x["direction"], x.get("via")) for x in rows] == [
        ("Bravo", 1, "to", None), ("Delta", 1, "from", None),
        ("Charlie", 2, "to", f"note:{n['b'].id}")]
    assert rows[0] == {"id": f"note:{n['b'].id}@1", "title": "Bravo", "kind": "note",
                       "notebook": "Open", "depth": 1, "direction": "to"}
    assert both.json()["meta"] == {"returned": 3, "available": 3, "truncated": False,
                                   "limit": 20, "nextCursor": None}
    hidden = {str(n[x].id) for x in "efg"} | {"Echo", "Foxtrot", "Golf", "Hidden"}
    assert not any(word in both.content.decode() for word in hidden)


def test_pages_follow_the_cursor_and_the_tool_says_the_same():
    _, key, n = _graph()
    api = Caller(Client(), key)
    first = api.get(f"/notes/{n['a'].id}/related?limit=2").json()
    assert first["meta"]["truncated"] is True and first["meta"]["available"] == 3
    rest = api.get(f"/notes/{n['a'].id}/related?limit=2&cursor={first['meta']['nextCursor']}")
    assert [x["title"] for x in first["data"] + data(rest)] == ["Bravo", "Delta", "Charlie"]
    assert rest.json()["meta"].get("nextCursor") is None
    tool = modern(key, "tools/call", {"name": "related",
                                      "arguments": {"noteId": f"note:{n['a'].id}@1"}})
    result = tool.json()["result"]
    assert result["structuredContent"]["data"] == data(api.get(f"/notes/{n['a'].id}/related"))
    assert f"note:{n['c'].id}@1 note, Open: Charlie (links to note:{n['b'].id})" \
        in result["content"][0]["text"]


def test_a_note_outside_the_grant_and_bad_arguments_are_refused():
    _, key, n = _graph()
    api = Caller(Client(), key)
    error(api.get(f"/notes/{n['e'].id}/related"), 404, "note_not_found")
    error(api.get(f"/notes/{n['a'].id}/related?depth=3"), 422, "invalid_request")
    error(api.get(f"/notes/{n['a'].id}/related?cursor=forged"), 400, "invalid_cursor")
    other = Caller(Client(), new_key(factories.owner())[0])
    error(other.get(f"/notes/{n['a'].id}/related"), 404, "note_not_found")
