"""A home notebook per connection (issue 39 item 3): the owner gives a key or app a
home; its saves that name no notebook go there, and its recall, brief and lists that name
none cover home + Personal (within its grant); `whoami` says so. A request can name its
project instead (`X-Grove-Project`, or `project` on the tools), which maps to the
granted notebook of that name; an explicit notebookId always wins."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from grove.identity import services as identity
from grove.kernel.tenancy import tenant
from notebooks import services
from notebooks.models import Note
from tests import factories
from tests.api.conftest import Caller, data, error, new_key
from tests.mcp.helpers import modern

pytestmark = pytest.mark.django_db


def _world():
    owner = factories.owner()
    garden = factories.notebook(owner, "Garden")
    kitchen = factories.notebook(owner, "Kitchen")
    key, actor = new_key(owner)
    factories.note(owner, "Compost the tomato vines in autumn.", notebook_id=garden.id)
    factories.note(owner, "Tomato soup needs basil.", notebook_id=kitchen.id)
    factories.note(owner, "Tomatoes give me hay fever.")  # Personal
    return owner, garden, kitchen, key, actor


def _set_home(owner, connection_id, notebook_id):
    current = identity.connection_update(actor=owner, connection_id=connection_id,
                                         expected_state=_state(owner, connection_id))
    return identity.connection_update(actor=owner, connection_id=connection_id,
                                      expected_state=current.state,
                                      home_notebook=notebook_id)


def _state(owner, connection_id):
    from grove.identity import selectors

    return selectors.connection_get(actor=owner, connection_id=connection_id).state


def _where(owner, note_id):
    with tenant(owner):
        return Note.objects.get(id=note_id).notebook_id


def _recalled(api, **body):
    return sorted(item["note"]["content"] for item in data(api.post("/recall", {
        "query": "tomato", **body})))


def test_saves_and_reads_default_to_home_and_personal():
    owner, garden, kitchen, key, actor = _world()
    api = Caller(Client(), key)
    everything = _recalled(api)
    assert len(everything) == 3  # no home yet: every notebook granted, and Personal
    out = _set_home(owner, actor.connection_id, garden.id)
    assert out.home_notebook_id == garden.id
    saved = data(api.post("/notes", {"content": "Mulch the tomato beds.", "kind": "fact"}))
    assert _where(owner, saved["id"]) == garden.id
    personal = data(api.post("/notes", {"content": "Tomato plan, private.", "kind": "fact",
                                        "notebookId": "personal"}))
    assert _where(owner, personal["id"]) is None  # said out loud: Personal
    elsewhere = data(api.post("/notes", {"content": "Tomato chutney.", "kind": "fact",
                                         "notebookId": str(kitchen.id)}))
    assert _where(owner, elsewhere["id"]) == kitchen.id  # an explicit notebook wins
    assert _recalled(api) == sorted([
        "Compost the tomato vines in autumn.", "Mulch the tomato beds.",
        "Tomato plan, private.", "Tomatoes give me hay fever."])
    assert _recalled(api, includePersonal=False) == [
        "Compost the tomato vines in autumn.", "Mulch the tomato beds."]
    assert _recalled(api, notebookId=str(kitchen.id), includePersonal=False) == [
        "Tomato chutney.", "Tomato soup needs basil."]
    listed = data(api.get("/notes"))
    assert {item["note"]["notebookId"] for item in listed} == {str(garden.id), None}
    brief = data(api.get("/brief?format=json"))
    shown = json.dumps(brief)
    assert "Compost the tomato vines" in shown and "Tomato soup" not in shown
    who = data(api.get("/whoami"))
    assert who["home"] == {"id": f"notebook:{garden.id}", "name": "Garden"}
    assert "Home notebook: Garden" in who["startup"]


def test_the_home_must_be_granted_and_goes_when_the_grant_does():
    owner, garden, kitchen, _key, _actor = _world()
    key, actor = new_key(owner, all_notebooks=False, notebooks=[garden.id])
    with pytest.raises(Exception) as refused:
        _set_home(owner, actor.connection_id, kitchen.id)
    assert getattr(refused.value, "code", None) == "home_not_granted"
    _set_home(owner, actor.connection_id, garden.id)
    narrowed = identity.connection_update(
        actor=owner, connection_id=actor.connection_id,
        expected_state=_state(owner, actor.connection_id), notebooks=[kitchen.id])
    assert narrowed.home_notebook_id is None
    assert data(Caller(Client(), key).get("/whoami"))["home"] is None


def test_a_home_deleted_since_reads_everything_granted_again():
    owner, garden, kitchen, key, actor = _world()
    _set_home(owner, actor.connection_id, garden.id)
    services.notebook_delete(actor=owner, operation_id=factories.op(), notebook_id=garden.id)
    api = Caller(Client(), key)
    assert _recalled(api) == ["Tomato soup needs basil.", "Tomatoes give me hay fever."]
    error(api.post("/notes", {"content": "Where does this go?", "kind": "fact"}), 404,
          "notebook_not_found")


def test_a_request_names_its_project_by_header():
    owner, garden, kitchen, key, _actor = _world()
    api = Caller(Client(), key)
    headers = {"X-Grove-Project": "kitchen"}
    saved = data(api.post("/notes", {"content": "Tomato salsa.", "kind": "fact"},
                          headers=headers))
    assert _where(owner, saved["id"]) == kitchen.id
    recalled = data(api.post("/recall", {"query": "tomato"}, headers=headers))
    assert sorted(item["note"]["content"] for item in recalled) == [
        "Tomato salsa.", "Tomato soup needs basil.", "Tomatoes give me hay fever."]
    error(api.post("/recall", {"query": "tomato"}, headers={"X-Grove-Project": "Attic"}),
          404, "project_not_found")
    narrow, _ = new_key(owner, all_notebooks=False, notebooks=[garden.id])
    error(Caller(Client(), narrow).post("/recall", {"query": "x"}, headers=headers), 404,
          "project_not_found")  # Kitchen is not granted to it: the same answer
    factories.notebook(owner, "Kitchen", parent=garden.id)
    error(api.post("/recall", {"query": "x"}, headers=headers), 400, "project_ambiguous")


def test_tools_take_a_project_and_the_header():
    owner, garden, kitchen, key, actor = _world()
    _set_home(owner, actor.connection_id, garden.id)

    def call(name, arguments, headers=None):
        return modern(key, "tools/call", {"name": name, "arguments": arguments},
                      **({"headers": headers} if headers else {})).json()["result"]

    saved = call("remember", {"content": "Tomato ketchup.", "kind": "fact",
                              "project": "Kitchen"})
    note_id = saved["structuredContent"]["id"].split(":")[1].split("@")[0]
    assert _where(owner, note_id) == kitchen.id
    home = call("remember", {"content": "Stake the tomatoes.", "kind": "fact"})
    assert _where(owner, home["structuredContent"]["id"].split(":")[1].split("@")[0]) == \
        garden.id
    listed = call("list_notes", {"project": "Kitchen", "query": "tomato"})
    assert sorted(n["content"] for n in listed["structuredContent"]["data"]) == [
        "Tomato ketchup.", "Tomato soup needs basil.", "Tomatoes give me hay fever."]
    who = call("whoami", {}, headers={"X-Grove-Project": "Kitchen"})
    assert who["structuredContent"]["home"]["name"] == "Kitchen"
    missing = call("recall", {"query": "tomato", "project": "Attic"})
    assert missing["isError"] is True
    assert json.loads(missing["content"][1]["text"])["code"] == "project_not_found"


def test_an_oauth_app_reads_and_writes_at_its_home_too():
    """An OAuth client's actor comes from its connection row (`Actor.for_connection`),
    not the key lookup: the home counts there the same, within the grant."""
    from grove.kernel.actor import Actor
    from grove.models import Connection
    from notebooks.selectors.recall import recall

    owner, garden, _kitchen, _key, actor = _world()
    _set_home(owner, actor.connection_id, garden.id)
    with tenant(owner):
        row = Connection.objects.get(id=actor.connection_id)
    app = Actor.for_connection(row)
    assert app.home == garden.id
    found = recall(actor=app, query="tomato", limit=10)
    assert sorted(item.note.content for item in found.data) == [
        "Compost the tomato vines in autumn.", "Tomatoes give me hay fever."]
