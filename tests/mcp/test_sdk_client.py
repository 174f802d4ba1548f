"""The official MCP Python SDK client against a live Grove (uvicorn, real database),
authenticated with an API key: the era probe finds the 2026-07-28 era, tools are
listed, and tool calls save and find notes within the key's grant. (Each client mode,
resources and prompts: tests/mcp/test_sdk_eras.py.)"""

from __future__ import annotations

import asyncio
import uuid

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from notebooks import selectors
from tests import factories
from tests.api.conftest import new_key
from tests.mcp.helpers import error_of

pytestmark = pytest.mark.slow


async def _session(url: str, key: str, steps):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        return await steps(client)


def test_sdk_client_lists_tools_and_calls_them_within_the_grant(site_url, committed):
    owner = factories.owner()
    shared = factories.notebook(owner, "Shared")
    hidden = factories.notebook(owner, "Hidden")
    factories.note(owner, "The hidden walnut stash is behind the shed.", notebook_id=hidden.id)
    key, _ = new_key(owner, all_notebooks=False, personal=False, notebooks=[shared.id])
    operation = str(uuid.uuid4())

    async def steps(client):
        listed = await client.list_tools()
        saved = await client.call_tool("remember", {
            "content": "Walnuts keep a year in the freezer.", "kind": "fact",
            "notebookId": str(shared.id), "operationId": operation})
        again = await client.call_tool("remember", {
            "content": "Walnuts keep a year in the freezer.", "kind": "fact",
            "notebookId": str(shared.id), "operationId": operation})
        found = await client.call_tool("recall", {"query": "walnut"})
        refused = await client.call_tool("remember", {
            "content": "x", "kind": "fact", "notebookId": str(hidden.id)})
        bad = await client.call_tool("remember", {"content": "x", "kind": "poem"})
        init = (client.protocol_version, client.server_info.name)
        return init, listed, saved, again, found, refused, bad

    init, listed, saved, again, found, refused, bad = asyncio.run(
        _session(f"{site_url}/mcp", key, steps))

    assert init == ("2026-07-28", "grove")  # the auto probe found the stateless era
    names = {tool.name for tool in listed.tools}
    assert {"remember", "recall", "list_notes", "forget", "update_notebook"} <= names
    recall_tool = next(t for t in listed.tools if t.name == "recall")
    assert recall_tool.annotations.read_only_hint is True
    assert recall_tool.annotations.open_world_hint is False

    assert saved.is_error is False
    cited = saved.structured_content["id"]
    assert again.structured_content["id"] == cited
    hits = [hit["content"] for hit in found.structured_content["data"]]
    assert hits == ["Walnuts keep a year in the freezer."]  # the hidden note stays hidden
    assert found.structured_content["data"][0]["notebook"] == "Shared"
    assert error_of(refused)["code"] == "notebook_not_found"
    assert error_of(bad)["code"] == "invalid_arguments"
    assert [n.content for n in selectors.note_list(actor=owner, notebook_id=shared.id)] == [
        "Walnuts keep a year in the freezer."]


def test_sdk_client_is_refused_without_a_valid_key(site_url, committed):
    async def steps(client):
        return await client.list_tools()

    with pytest.raises(Exception) as raised:  # noqa: PT011 - the SDK's own error types vary
        asyncio.run(_session(f"{site_url}/mcp", "grv_" + "x" * 75, steps))
    assert "-32001" in repr(raised.value) and "Authentication required" in repr(raised.value)


def _bridge(url: str, key: str):
    import os
    import sys

    from mcp import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "GROVE_HOME")}
    env["GROVE_API_KEY"] = key
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "grove", "mcp-stdio", "--url", url], env=env)


def test_the_stdio_bridge_forwards_to_the_server(site_url, committed):
    """The bridge answers what /mcp answers: the same texts, structured results and
    errors with their codes and details, and the server's version."""
    from grove.interfaces.mcp import server_info

    owner = factories.owner()
    key, _ = new_key(owner)

    async def bridged():
        async with Client(_bridge(site_url, key)) as client:
            listed = await client.list_tools()
            saved = await client.call_tool("remember", {"content": "Bridged note about kiwis.",
                                                        "kind": "fact"})
            cited = saved.structured_content["id"]
            await client.call_tool("update_memory", {"noteId": cited, "content": "Kiwis!"})
            stale = await client.call_tool("update_memory", {"noteId": cited,
                                                             "content": "Kiwis?"})
            found = await client.call_tool("list_notes", {"query": "kiwis"})
            bad = await client.call_tool("get_note", {"noteId": str(uuid.uuid4())})
            return client.server_info, listed, saved, found, stale, bad

    async def direct():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
        async with http, Client(streamable_http_client(f"{site_url}/mcp",
                                                       http_client=http)) as client:
            return (await client.call_tool("list_notes", {"query": "kiwis"}),
                    await client.call_tool("get_note", {"noteId": str(uuid.uuid4())}))

    info, listed, saved, found, stale, bad = asyncio.run(bridged())
    assert (info.name, info.version) == ("grove", server_info()["version"])
    assert len(listed.tools) >= 13 and all(t.annotations for t in listed.tools)
    assert saved.is_error is False
    assert found.structured_content["meta"]["available"] == 1
    assert error_of(stale) == {"code": "version_conflict", "currentVersion": 2}
    assert error_of(bad)["code"] == "note_not_found" and bad.content[0].text == "No such note."
    same_found, same_bad = asyncio.run(direct())
    assert found.content == same_found.content  # the same text a model reads
    assert found.structured_content == same_found.structured_content
    assert bad.content[0] == same_bad.content[0]
    assert [n.content for n in selectors.note_list(actor=owner)] == ["Kiwis!"]


def test_the_stdio_bridge_fails_clearly(site_url, committed):
    import subprocess

    owner = factories.owner()
    key, _ = new_key(owner)
    for url, expected in (("http://127.0.0.1:9", "cannot reach Grove at http://127.0.0.1:9"),
                          (site_url, "refused the API key")):
        params = _bridge(url, key if url != site_url else "grv_" + "x" * 75)
        result = subprocess.run([params.command, *params.args], env=params.env, input="",
                                capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 1, result.stderr
        assert expected in result.stderr and "Traceback" not in result.stderr
    params = _bridge(site_url, key)
    params.env.pop("GROVE_API_KEY")
    result = subprocess.run([params.command, *params.args], env=params.env, input="",
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1 and "set GROVE_API_KEY" in result.stderr


def test_sdk_client_ask_returns_proposals_as_data_and_applies_nothing(site_url, committed):
    from tests.ask.conftest import fake_provider
    from tests.ask.proposal_helpers import proposal, reply
    from tests.ask.test_ask import index_all

    owner = factories.owner()
    note = factories.note(owner, "The old office wifi password is hunter2.")
    index_all(owner)
    key, _ = new_key(owner)

    async def steps(client):
        listed = await client.list_tools()
        asked = await client.call_tool("ask", {"query": "archive the old office wifi note"})
        return listed, asked

    with fake_provider(timeout=5.0) as provider:
        provider.chat_replies = [reply(note.versioned_id, proposal(
            "archive", [note.versioned_id], summary="The old office is gone."))]
        listed, asked = asyncio.run(_session(f"{site_url}/mcp", key, steps))
    assert asked.is_error is False
    [change] = asked.structured_content["proposals"]
    assert (change["kind"], change["summary"]) == ("archive", "The old office is gone.")
    assert change["notes"] == [note.versioned_id]
    assert change["changes"] == [f"{note.versioned_id} (The old office wifi password is "
                                 "hunter2.): archived"]
    assert "id" not in change and "state" not in change  # data, nothing to apply with
    assert "not applied" in asked.content[0].text
    assert not [t.name for t in listed.tools if "apply" in t.name or "undo" in t.name]
    assert factories.note_row(owner, note.id).status == "active"


def test_two_sdk_agents_under_restrict_share_truth_and_the_owners_decisions(site_url,
                                                                          committed):
    """Issue 19, done when: two agents with their own keys, in one notebook declared
    `restrict`, get the same three declared notes; one proposes a revision of a declared
    note, the owner accepts it, and both read the new version on their next call; an
    answer stating a known-false claim is flagged; with checking on, a contradicting
    write comes back held — every result validated by the SDK against its output
    schema."""
    import json

    from notebooks import services
    from tests.ask.conftest import fake_provider
    from tests.ask.test_ask import answer, index_all

    owner = factories.owner()
    ops = factories.notebook(owner, "Ops")
    rules = [factories.note(owner, f"# Contract {n}\n\n## Fields\nid, total",
                            notebook_id=ops.id) for n in (1, 2, 3)]
    factories.note(owner, "A rumour: contracts have no total.", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[r.id for r in rules],
                           policy="restrict")
    false = "Contracts have no total field."
    services.negative_add(actor=owner, notebook_id=ops.id, claim=false)
    index_all(owner)
    keys = [new_key(owner, all_notebooks=False, personal=False, notebooks=[ops.id])[0]
            for _ in range(2)]

    async def declared(client):
        truth = await client.call_tool("truth", {"notebookId": f"notebook:{ops.id}"})
        brief = await client.call_tool("brief", {"notebookId": f"notebook:{ops.id}"})
        return ([n["id"] for n in truth.structured_content["notes"]],
                brief.content[0].text)

    url = f"{site_url}/mcp"
    firsts = [asyncio.run(_session(url, key, declared)) for key in keys]
    expected = [r.versioned_id for r in rules]
    for ids, brief in firsts:
        assert ids == expected and all(cite in brief for cite in expected)

    async def propose(client):
        return await client.call_tool("update_memory", {
            "noteId": str(rules[0].id), "content": "# Contract 1\n\n## Fields\nid, total, tax"})

    proposed = asyncio.run(_session(url, keys[0], propose))
    assert proposed.is_error is False
    assert proposed.structured_content["id"] == rules[0].versioned_id  # held: still v1
    pending = proposed.structured_content["pendingRevision"]["id"]
    services.pending_accept(actor=owner, pending_id=pending)
    for key in keys:  # both read the accepted version on their next call
        ids, brief = asyncio.run(_session(url, key, declared))
        assert ids == [f"note:{rules[0].id}@2", *expected[1:]]
        assert f"note:{rules[0].id}@2" in brief

    async def ask_and_write(client):
        asked = await client.call_tool("ask", {"query": "Which fields does a contract have?",
                                               "notebookId": f"notebook:{ops.id}"})
        wrote = await client.call_tool("remember", {
            "content": "Contracts carry no total.", "kind": "fact",
            "notebookId": f"notebook:{ops.id}", "operationId": str(uuid.uuid4())})
        return asked, wrote

    with fake_provider(timeout=5.0) as provider:
        services.truth_set_verification(actor=owner, notebook_id=ops.id, verify=True)
        cite = f"note:{rules[1].id}@1"
        provider.chat_replies = [
            answer("answered", ("Contracts have no total field.", [cite])),
            json.dumps({"findings": [{"claim": "Contracts carry no total.",
                                      "finding": "contradicts", "note_id": cite,
                                      "why": "Fields: id, total"}]})]
        asked, wrote = asyncio.run(_session(url, keys[1], ask_and_write))
    assert asked.is_error is False, asked
    blocks = asked.structured_content["blocks"]
    assert blocks[0]["contradictsKnownFalse"] == [false]
    assert wrote.is_error is False, wrote
    held = wrote.structured_content
    assert "id" not in held and held["indexing"] == "held"
    said = wrote.content[0].text  # in words: nothing saved yet, and who decides
    assert said.startswith("Not saved yet: this new note is held for the owner's review")
    assert "The owner decides, on the website" in said and held["pendingRevision"]["id"] in said
    assert "contradicts" in said
    proposed_text = proposed.content[0].text
    assert proposed_text.startswith("Not saved yet") and rules[0].versioned_id in proposed_text
    assert (held["pendingRevision"]["verdict"], held["pendingRevision"]["contradicts"]) == (
        "contradicts", [cite])
