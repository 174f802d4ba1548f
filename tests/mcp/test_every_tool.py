"""Every tool in the catalogue, through the official MCP SDK client — which checks each
successful result's `structuredContent` against the tool's declared `outputSchema` and
raises "Invalid structured content returned by tool …" when it does not fit — in the
states an agent meets: an empty account; ground truth declared (`restrict` in one
notebook, `prioritize` in another, claims known to be false); a write held for the
owner (an agent's revision of a declared note); a live handoff; and failures
(`isError` results, which carry no `structuredContent`). Each state runs in both
protocol eras (the handshake era and the stateless 2026-07-28 one) and through the
stdio bridge (`grove mcp-stdio`).

The tools are taken from `tools/list`, not from a list written here: a tool added to
the catalogue without a case in `_cases` fails `test_every_tool_has_a_case`, and every
run asserts that each listed tool answered at least once without an error."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from notebooks import services
from tests import factories
from tests.api.conftest import new_key
from tests.mcp.helpers import error_of
from tests.mcp.test_sdk_client import _bridge

pytestmark = pytest.mark.slow

TRANSPORTS = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28", "stdio": "2025-11-25"}
FALSE_CLAIM = "Atlas launches on 2027-01-01"


@dataclass(frozen=True)
class Case:
    tool: str
    arguments: dict[str, Any]
    error: str | None = None  # the code an isError result must carry; None: a result
    says: tuple[str, ...] = ()  # words the text a model reads must hold


@dataclass(frozen=True)
class World:
    """One account, as the states need it (each run gets its own)."""

    key: str
    ops: uuid.UUID  # declares `restrict`, holds a claim known to be false and a handoff
    docs: uuid.UUID  # declares `prioritize`
    rule: Any  # declared in Ops
    launch: Any  # in Ops, states the false claim
    guide: Any  # declared in Docs
    plain: Any  # a Personal fact nobody declared
    handoff: Any  # Ops's live handoff, task "atlas-release"


def _world() -> World:
    owner = factories.owner()
    key, _ = new_key(owner)  # a connection: its changes to declared notes are held
    ops = factories.notebook(owner, "Ops")
    docs = factories.notebook(owner, "Docs")
    rule = factories.note(owner, "# Release rules\n\n## Dates\nAtlas ships when QA signs "
                                 "off.", notebook_id=ops.id, pinned=True)
    launch = factories.note(owner, f"{FALSE_CLAIM}.", notebook_id=ops.id)
    factories.note(owner, "Prefers short release notes.", kind="preference",
                   notebook_id=ops.id)
    handoff = factories.note(owner, "Atlas release: QA is half done; next, the changelog.",
                             kind="handoff", task_id="atlas-release", notebook_id=ops.id)
    guide = factories.note(owner, "# Style guide\n\nWrite in the active voice.",
                           notebook_id=docs.id)
    factories.note(owner, "Docs are built nightly.", notebook_id=docs.id)
    plain = factories.note(owner, "The office is in Leeds.")
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[rule.id],
                           policy="restrict")
    services.truth_declare(actor=owner, notebook_id=docs.id, note_ids=[guide.id],
                           policy="prioritize")
    services.negative_add(actor=owner, notebook_id=ops.id, claim=FALSE_CLAIM)
    services.negative_add(actor=owner, claim="The office is in Paris.")
    services.vision_update(actor=owner, operation_id=factories.op(), notebook_id=ops.id,
                           content="Ship Atlas without surprises.")
    return World(key=key, ops=ops.id, docs=docs.id, rule=rule, launch=launch, guide=guide,
                 plain=plain, handoff=handoff)


def _empty_cases() -> list[Case]:
    """A new account: nothing saved, no notebook, no vision, no truth."""
    missing = str(uuid.uuid4())
    return [
        Case("brief", {}), Case("brief", {"format": "json"}),
        Case("brief", {"format": "json", "truth": "full", "budgetTokens": 200}),
        Case("whoami", {}), Case("recent_activity", {}), Case("truth", {}),
        Case("truth", {"full": True}),
        Case("recall", {}), Case("recall", {"query": "anything at all"}),
        Case("recall", {"taskId": "no-such-task"},
             says=("No live handoff has task id “no-such-task”",)),
        Case("list_notes", {}), Case("list_notes", {"query": "anything", "matches": True}),
        Case("list_notebooks", {}),
        Case("ask", {"query": "What do I know?"}),
        Case("ask", {"query": "What do I know?", "mode": "search"}),
        Case("get_note", {"noteId": missing}, error="note_not_found"),
        Case("related", {"noteId": missing}, error="note_not_found"),
        Case("note_history", {"noteId": missing}, error="note_not_found"),
        Case("update_memory", {"noteId": missing, "content": "x"}, error="note_not_found"),
        Case("edit_note", {"noteId": missing, "op": "append", "text": "x"},
             error="note_not_found"),
        Case("restore_note", {"noteId": missing, "revision": 1}, error="note_not_found"),
        Case("forget", {"items": [missing]}),
        Case("archive_notes", {"items": [missing]}),
        Case("archive_notes", {"items": [missing], "restore": True}),
        Case("move_notes", {"noteIds": [missing], "notebookId": "personal"},
             error="note_not_found"),
        Case("update_notebook", {"notebookId": missing, "name": "X"},
             error="notebook_not_found"),
        Case("truth", {"notebookId": missing}, error="notebook_not_found"),
        Case("create_notebook", {"name": "First"}),
        Case("update_vision", {"content": "Keep it simple."}),
        Case("remember", {"content": "The first note.", "kind": "fact"}),
    ]


def _declared_cases(w: World) -> list[Case]:
    """Ground truth in two notebooks, a claim known to be false, a live handoff, and a
    write the owner must decide on."""
    ops, docs = f"notebook:{w.ops}", f"notebook:{w.docs}"
    return [
        Case("brief", {}), Case("brief", {"format": "json"}),
        Case("brief", {"notebookId": ops, "format": "json", "truth": "full"}),
        Case("brief", {"notebookId": ops, "format": "json", "budgetTokens": 200}),
        Case("brief", {"notebookId": docs, "format": "json", "focus": "style"}),
        Case("brief", {"notebookId": ops, "focus": "Atlas launch"}),
        Case("brief", {"notebookId": "personal", "format": "json"}),
        Case("whoami", {}), Case("recent_activity", {"notebookId": ops, "limit": 2}),
        Case("truth", {}), Case("truth", {"notebookId": ops, "full": True}),
        Case("truth", {"notebookId": docs}),
        Case("recall", {}), Case("recall", {"query": "When does Atlas launch?"}),
        Case("recall", {"query": "Atlas launch", "notebookId": ops, "full": True}),
        Case("recall", {"query": "style guide", "notebookId": docs}),
        Case("recall", {"notebookId": ops, "taskId": "atlas-release"}),
        Case("recall", {"notebookId": ops, "taskId": "no-such-task"},
             says=("No live handoff has task id “no-such-task”",)),
        Case("list_notes", {}),
        Case("list_notes", {"notebookId": ops, "query": "Atlas", "matches": True,
                            "full": True}),
        Case("get_note", {"noteId": str(w.rule.id)}),
        Case("get_note", {"noteId": w.launch.versioned_id}),
        Case("related", {"noteId": str(w.rule.id)}),
        Case("related", {"noteId": str(w.rule.id), "depth": 1, "limit": 1}),
        Case("note_history", {"noteId": str(w.rule.id)}),
        Case("ask", {"query": "When does Atlas launch?", "notebookId": ops}),
        Case("list_notebooks", {"includeArchived": True}),
        # Held for the owner: the declared note keeps its version, and the text says so.
        Case("update_memory", {"noteId": w.rule.versioned_id,
                               "content": "# Release rules\n\nAtlas ships on Fridays."},
             says=("Not saved yet", f"{w.rule.versioned_id} stays as it was",
                   "The owner decides, on the website", "Changes waiting for you")),
        Case("restore_note", {"noteId": str(w.rule.id), "revision": 1},
             error="declared_note"),
        Case("move_notes", {"noteIds": [str(w.rule.id)], "notebookId": "personal"},
             error="declared_note"),
        Case("update_memory", {"noteId": w.launch.versioned_id,
                               "content": "Atlas launches when QA signs off."}),
        Case("update_memory", {"noteId": w.launch.versioned_id, "content": "stale"},
             error="version_conflict"),
        # A declared note's edit is held like any change to it; a plain note's is saved.
        Case("edit_note", {"noteId": str(w.rule.id), "op": "append", "text": "Or Fridays."},
             says=("Not saved yet",)),
        Case("edit_note", {"noteId": str(w.plain.id), "op": "replace_text",
                           "find": "Leeds", "text": "York"}),
        Case("edit_note", {"noteId": str(w.plain.id), "op": "replace_section",
                           "heading": "Nowhere", "text": "x"}, error="edit_target_not_found"),
        Case("remember", {"content": "Atlas release: QA done; changelog next.",
                          "kind": "handoff", "taskId": "atlas-release", "notebookId": ops}),
        Case("remember", {"content": "The changelog lives in CHANGES.md.", "kind": "fact",
                          "notebookId": docs, "findSimilar": True}),
        Case("create_notebook", {"name": "Releases", "parentId": ops}),
        Case("update_notebook", {"notebookId": docs, "name": "Documentation"}),
        Case("update_vision", {"notebookId": ops, "content": "Ship Atlas calmly.",
                               "expectedVersion": 1}),
        Case("update_vision", {"notebookId": ops, "content": "x", "expectedVersion": 1},
             error="version_conflict"),
        Case("restore_note", {"noteId": str(w.plain.id), "revision": 1}),
        Case("move_notes", {"noteIds": [str(w.plain.id)], "notebookId": docs}),
        Case("archive_notes", {"items": [str(w.plain.id)]}),
        Case("archive_notes", {"items": [str(w.plain.id)], "restore": True}),
        Case("get_note", {"noteId": f"note:{w.plain.id}@1"}),
        Case("forget", {"items": [str(w.plain.id), str(uuid.uuid4())]}),
        Case("get_note", {"noteId": f"note:{w.launch.id}@9"}, error="version_not_found"),
    ]


def _bad_arguments(tools: list[str]) -> list[Case]:
    """Every listed tool, called with an argument it does not take: an isError result."""
    return [Case(tool, {"notAnArgument": True}, error="invalid_arguments") for tool in tools]


def _cases(world: World, tools: list[str]) -> list[Case]:
    return _empty_cases() + _declared_cases(world) + _bad_arguments(tools)


async def _run(client: Client, cases: list[Case]) -> list[tuple[Case, Any]]:
    """Each case through the client; a result that does not fit its outputSchema raises
    in `call_tool` (the SDK's own check), naming the tool."""
    answered = []
    for case in cases:
        try:
            result = await client.call_tool(case.tool, case.arguments)
        except RuntimeError as exc:  # the SDK's output validation
            raise AssertionError(f"{case.tool}({case.arguments}): {exc}") from None
        answered.append((case, result))
    return answered


async def _session(transport: str, site_url: str, key: str, steps):
    if transport == "stdio":
        async with Client(_bridge(site_url, key)) as client:
            return client.protocol_version, await steps(client)
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    async with http, Client(streamable_http_client(f"{site_url}/mcp", http_client=http),
                            mode="legacy" if transport == "legacy" else transport) as client:
        return client.protocol_version, await steps(client)


def _empty_account_key() -> str:
    return new_key(factories.owner())[0]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_tool_fits_its_output_schema_in_every_state(site_url, committed, transport):
    empty_key, world = _empty_account_key(), _world()

    async def listed(client: Client) -> list[str]:
        return [tool.name for tool in (await client.list_tools()).tools]

    version, tools = asyncio.run(_session(transport, site_url, empty_key, listed))
    assert version == TRANSPORTS[transport]

    async def empty(client: Client):
        return await _run(client, _empty_cases())

    async def declared(client: Client):
        return await _run(client, _declared_cases(world) + _bad_arguments(tools))

    _, answers = asyncio.run(_session(transport, site_url, empty_key, empty))
    _, more = asyncio.run(_session(transport, site_url, world.key, declared))
    answers += more

    for case, result in answers:
        if case.error is None:
            assert result.is_error is False, (case, result.content)
            assert isinstance(result.structured_content, dict), case
            assert result.content[0].text, case
            for words in case.says:
                assert words in result.content[0].text, (case, result.content[0].text)
        else:
            assert error_of(result)["code"] == case.error, (case, result.content)
    succeeded = {case.tool for case, result in answers if not result.is_error}
    assert succeeded == set(tools), set(tools) - succeeded
    failed = {case.tool for case, result in answers if result.is_error}
    assert failed == set(tools), set(tools) - failed


def test_every_tool_has_a_case(db):
    """A tool added to the catalogue must be added to the cases above."""
    from grove.interfaces.mcp import declarations

    tools = [tool["name"] for tool in declarations()]
    world = World(key="", ops=uuid.uuid4(), docs=uuid.uuid4(), rule=_Stub(), launch=_Stub(),
                  guide=_Stub(), plain=_Stub(), handoff=_Stub())
    called = {case.tool for case in _empty_cases() + _declared_cases(world)
              if case.error is None}
    assert set(tools) <= called, set(tools) - called
    assert {case.tool for case in _cases(world, tools) if case.error} >= set(tools)


class _Stub:
    id = uuid.uuid4()
    versioned_id = f"note:{id}@1"
