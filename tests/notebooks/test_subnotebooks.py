"""A notebook's list with its sub-notebooks (library search's `include_subnotebooks`,
REST's `includeSubnotebooks`): the subtree as far as the caller is granted — grants never
inherit down the tree, so a connection granted "Work" but not "Work/Secret" sees nothing
of Secret, nor of what lies below it, through the widened list."""

from __future__ import annotations

import pytest
from django.test import Client

from grove.kernel.errors import Invalid, NotFound
from notebooks import services
from notebooks.schemas.tools import SearchArgs
from notebooks.selectors.search import note_search
from tests import factories
from tests.api.conftest import Caller, data, new_key
from tests.factories import op

pytestmark = pytest.mark.django_db


@pytest.fixture
def work():
    """Work ─┬ Plans ── Q3
             ├ Secret ── Deeper
             └ Old (archived)
       Home; and a Personal note."""
    owner = factories.owner()
    books = {"work": factories.notebook(owner, "Work")}
    books["plans"] = factories.notebook(owner, "Plans", parent=books["work"].id)
    books["q3"] = factories.notebook(owner, "Q3", parent=books["plans"].id)
    books["secret"] = factories.notebook(owner, "Secret", parent=books["work"].id)
    books["deeper"] = factories.notebook(owner, "Deeper", parent=books["secret"].id)
    books["old"] = factories.notebook(owner, "Old", parent=books["work"].id)
    books["home"] = factories.notebook(owner, "Home")
    for name, book in books.items():
        factories.note(owner, f"budget note in {name}", notebook_id=book.id)
    factories.note(owner, "another budget note in work", notebook_id=books["work"].id)
    factories.note(owner, "budget note in personal")
    services.notebook_archive(actor=owner, operation_id=op(), notebook_id=books["old"].id)
    return owner, books


def places(page) -> list[str]:
    return sorted(item.note.content.removeprefix("another ").split(" in ")[1]
                  for item in page.data)


def test_the_owner_sees_the_whole_live_subtree(work):
    owner, books = work
    alone = note_search(actor=owner, notebook_id=books["work"].id)
    assert places(alone) == ["work", "work"]
    whole = note_search(actor=owner, notebook_id=books["work"].id, include_subnotebooks=True)
    assert places(whole) == ["deeper", "plans", "q3", "secret", "work", "work"]
    assert whole.meta.available == 6
    # From a child down, not up; an archived sub-notebook's notes are in its archive list.
    assert places(note_search(actor=owner, notebook_id=books["plans"].id,
                              include_subnotebooks=True)) == ["plans", "q3"]
    archived = note_search(actor=owner, notebook_id=books["work"].id, status="archived",
                           include_subnotebooks=True)
    assert places(archived) == ["old"]


def test_a_connection_sees_only_the_granted_part_of_the_subtree(work):
    """Granted Work, Plans, Q3 and Deeper but not Secret: Secret's notes stay hidden,
    and so does Deeper's through Work (this connection's own tree has Deeper at its top,
    not inside Work) — whatever the query, and in the counts."""
    owner, books = work
    agent = factories.connection(owner, notebooks=[books[n].id for n in
                                                   ("work", "plans", "q3", "deeper")])
    page = note_search(actor=agent, notebook_id=books["work"].id, include_subnotebooks=True)
    assert places(page) == ["plans", "q3", "work", "work"]
    assert page.meta.available == 4
    found = note_search(actor=agent, notebook_id=books["work"].id, query="secret budget",
                        include_subnotebooks=True, matches=True)
    assert found.data == [] and found.meta.available == 0
    # Deeper is granted on its own: listed as itself, never as part of Work.
    assert places(note_search(actor=agent, notebook_id=books["deeper"].id,
                              include_subnotebooks=True)) == ["deeper"]


def test_a_connection_granted_only_the_parent_sees_only_the_parent(work):
    owner, books = work
    agent = factories.connection(owner, notebooks=[books["work"].id])
    page = note_search(actor=agent, notebook_id=books["work"].id, include_subnotebooks=True)
    assert places(page) == ["work", "work"] and page.meta.available == 2


def test_the_toggle_does_not_open_a_notebook_that_is_not_granted(work):
    owner, books = work
    agent = factories.connection(owner, notebooks=[books["plans"].id, books["q3"].id])
    with pytest.raises(NotFound):
        note_search(actor=agent, notebook_id=books["work"].id, include_subnotebooks=True)
    # Everything granted, and Personal, are not widened by it.
    assert places(note_search(actor=agent, include_subnotebooks=True)) == ["plans", "q3"]
    assert places(note_search(actor=owner, notebook_id=None,
                              include_subnotebooks=True)) == ["personal"]


def test_cursors_are_bound_to_the_toggle(work):
    owner, books = work
    first = note_search(actor=owner, notebook_id=books["work"].id, include_subnotebooks=True,
                        limit=4)
    cursor = first.meta.next_cursor
    assert cursor is not None and first.meta.truncated
    rest = note_search(actor=owner, notebook_id=books["work"].id, include_subnotebooks=True,
                       limit=4, cursor=cursor)
    assert len(first.data) + len(rest.data) == 6
    assert not {i.note.id for i in first.data} & {i.note.id for i in rest.data}
    with pytest.raises(Invalid):  # the same cursor for the notebook alone
        note_search(actor=owner, notebook_id=books["work"].id, limit=4, cursor=cursor)
    plain = note_search(actor=owner, limit=4)
    with pytest.raises(Invalid):  # and a plain search's cursor for the widened one
        note_search(actor=owner, limit=4, cursor=plain.meta.next_cursor,
                    notebook_id=books["work"].id, include_subnotebooks=True)


def test_rest_search_takes_include_subnotebooks_and_the_tool_does_not(work):
    owner, books = work
    key, _ = new_key(owner, personal=False, all_notebooks=False,
                     notebooks=[books["work"].id, books["plans"].id])
    api = Caller(Client(), key)
    body = {"notebookId": str(books["work"].id), "includeSubnotebooks": True}
    found = data(api.post("/notes/search", body))
    assert sorted(i["note"]["content"] for i in found) == [
        "another budget note in work", "budget note in plans", "budget note in work"]
    assert len(data(api.post("/notes/search", {"notebookId": str(books["work"].id)}))) == 2
    # MCP's list_notes keeps its schema (the tools/list budget): no such argument.
    assert "includeSubnotebooks" not in SearchArgs.model_json_schema()["properties"]
    with pytest.raises(ValueError, match="includeSubnotebooks"):
        SearchArgs.model_validate({"includeSubnotebooks": True})
