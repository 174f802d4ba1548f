"""The same note says the same thing about ground truth on every interface (STYLE §15,
SPEC §10): `authority` (declared ground truth) and `knownFalse` (claims known to be false
that it matches) over REST (recall, a note by id, a typed id, lists and search, the
brief), the MCP tools (recall, get_note, list_notes, brief — in both eras), the
`note://` resource and the brief's markdown — compared field by field. And a version a
note never had is the same `version_not_found` over REST, the tool and the resource."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from notebooks import services
from tests import factories
from tests.api.conftest import Caller, data, new_key
from tests.mcp.helpers import error_of, handshake, modern

pytestmark = pytest.mark.django_db

LAUNCH_CLAIM = "Atlas launches on 2027-01-01"
OFFICE_CLAIM = "The office is in Paris"

Marks = dict[str, tuple[bool, list[tuple[str, str]]]]  # note id → (authority, claims)


@pytest.fixture
def world() -> dict[str, Any]:
    owner = factories.owner()
    atlas = factories.notebook(owner, "Atlas")
    rule = factories.note(owner, "# Launch rules\n\nAtlas launches when QA signs off.",
                          notebook_id=atlas.id)
    wrong = factories.note(owner, "Atlas launches on 2027-01-01.", notebook_id=atlas.id)
    plain = factories.note(owner, "Atlas launches are announced in the changelog.",
                           notebook_id=atlas.id)
    office = factories.note(owner, "The office is in Paris, near the river.")
    services.truth_declare(actor=owner, notebook_id=atlas.id, note_ids=[rule.id],
                           policy="prioritize")
    launch_claim = services.negative_add(actor=owner, notebook_id=atlas.id,
                                         claim=LAUNCH_CLAIM)
    office_claim = services.negative_add(actor=owner, claim=OFFICE_CLAIM)
    key, _ = new_key(owner)
    expected: Marks = {
        str(rule.id): (True, []),
        str(wrong.id): (False, [(str(launch_claim.id), LAUNCH_CLAIM)]),
        str(plain.id): (False, []),
        str(office.id): (False, [(str(office_claim.id), OFFICE_CLAIM)]),
    }
    return {"key": key, "atlas": atlas.id, "notes": [rule, wrong, plain, office],
            "expected": expected, "owner": owner}


def _bare(note_id: str) -> str:
    return note_id.removeprefix("note:").split("@", 1)[0]


def _marks(authority: Any, known_false: Any) -> tuple[bool, list[tuple[str, str]]]:
    """A note's marks as a read gave them; a compact note leaves both out when unset."""
    return bool(authority), [(k["claimId"], k["claim"]) for k in known_false or []]


def _rest(api: Caller, atlas: Any, notes: list[Any]) -> dict[str, Marks]:
    reads: dict[str, Marks] = {}
    for name, body in (("recall", {"query": "Atlas launches"}), ("recall profile", {}),
                       ("recall in Atlas", {"query": "Atlas launches",
                                            "notebookIds": [str(atlas)]})):
        reads[f"REST {name}"] = {i["note"]["id"]: _marks(i["authority"], i["knownFalse"])
                                 for i in data(api.post("/recall", body))}
    for name, answer in (("notes", api.get("/notes")),
                         ("notes in Atlas", api.get(f"/notes?notebookId={atlas}")),
                         ("search", api.post("/notes/search", {"query": "Atlas"}))):
        reads[f"REST {name}"] = {i["note"]["id"]: _marks(i["authority"], i["knownFalse"])
                                 for i in answer.json()["data"]}
    reads["REST note"] = {}
    reads["REST typed id"] = {}
    for note in notes:
        for read, path in (("REST note", f"/notes/{note.id}"),
                           ("REST typed id", f"/get/note:{note.id}")):
            got = data(api.get(path))
            reads[read][got["id"]] = _marks(got["authority"], got["knownFalse"])
    for name, query in (("brief", "format=json&budgetTokens=8000"),
                        ("brief of Atlas", f"format=json&budgetTokens=8000&notebookId={atlas}")):
        reads[f"REST {name}"] = _brief_marks(data(api.get(f"/brief?{query}")))
    return reads


def _brief_marks(brief: dict[str, Any]) -> Marks:
    """The notes a JSON brief gives, with their marks; a declared note in its truth section
    is ground truth there (it is not ranked among the others)."""
    found = {_bare(n["id"]): _marks(n.get("authority"), n.get("knownFalse"))
             for part in ("handoffs", "facts", "related") for n in brief[part] or []}
    for declared in (brief["truth"] or {}).get("notes", []):
        found[_bare(declared["id"])] = (True, [])
    return found


def _tool(key: str, era: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    answer = modern(key, "tools/call", params) if era == "2026" else handshake(
        key, "tools/call", params)
    result = answer.json()["result"]
    assert result["isError"] is False, result
    return result


def _mcp(key: str, era: str, atlas: Any, notes: list[Any]) -> tuple[dict[str, Marks], str]:
    reads: dict[str, Marks] = {}
    texts = []
    for name, tool, arguments in (
            ("recall", "recall", {"query": "Atlas launches"}),
            ("recall profile", "recall", {}),
            ("recall in Atlas", "recall", {"query": "Atlas launches",
                                           "notebookId": f"notebook:{atlas}"}),
            ("list_notes", "list_notes", {}),
            ("list_notes in Atlas", "list_notes", {"notebookId": str(atlas), "full": True})):
        result = _tool(key, era, tool, arguments)
        reads[f"MCP {era} {name}"] = {
            _bare(n["id"]): _marks(n.get("authority"), n.get("knownFalse"))
            for n in result["structuredContent"]["data"]}
        texts.append(result["content"][0]["text"])
    reads[f"MCP {era} get_note"] = {}
    for note in notes:
        for note_id in (str(note.id), note.versioned_id):
            got = _tool(key, era, "get_note", {"noteId": note_id})["structuredContent"]
            reads[f"MCP {era} get_note"][_bare(got["id"])] = _marks(got.get("authority"),
                                                                    got.get("knownFalse"))
            # Its full record is the REST record, marks included.
            assert _marks(got["record"]["authority"], got["record"]["knownFalse"]) == \
                reads[f"MCP {era} get_note"][_bare(got["id"])]
    for name, arguments in (("brief", {"format": "json", "budgetTokens": 8000}),
                            ("brief of Atlas", {"format": "json", "budgetTokens": 8000,
                                                "notebookId": str(atlas)})):
        reads[f"MCP {era} {name}"] = _brief_marks(
            _tool(key, era, "brief", arguments)["structuredContent"])
    texts.append(_tool(key, era, "brief", {"budgetTokens": 8000})["content"][0]["text"])
    return reads, "\n".join(texts)


def test_a_note_carries_the_same_ground_truth_marks_everywhere(world):
    key, atlas, notes, expected = world["key"], world["atlas"], world["notes"], world[
        "expected"]
    api = Caller(Client(), key)
    reads = _rest(api, atlas, notes)
    texts = {}
    for era in ("legacy", "2026"):
        found, texts[era] = _mcp(key, era, atlas, notes)
        reads.update(found)
    for read, marks in reads.items():
        assert marks, read  # every read gave notes
        for note_id, said in marks.items():
            assert said == expected[note_id], (read, note_id, said)
    # Every read gave the declared note and the one stating a false claim.
    rule, wrong = notes[0], notes[1]
    for read, marks in reads.items():
        assert {str(rule.id), str(wrong.id)} <= set(marks), read
    assert set(reads["REST recall in Atlas"]) == set(reads["MCP legacy recall in Atlas"])
    for note in notes:
        assert str(note.id) in reads["REST note"] and str(note.id) in reads["MCP 2026 get_note"]

    # In words, where a model reads text: the tools' text, the brief, the resource.
    for era, text in texts.items():
        assert f"“{LAUNCH_CLAIM}”" in text and "do not present it as true" in text, era
        assert "declared ground truth" in text, era
    for uri, said in ((f"note://{wrong.id}", f"“{LAUNCH_CLAIM}”"),
                      (f"note://{rule.id}", "declared ground truth")):
        for answer in (handshake(key, "resources/read", {"uri": uri}),
                       modern(key, "resources/read", {"uri": uri})):
            assert said in answer.json()["result"]["contents"][0]["text"], uri


def test_a_missing_version_is_version_not_found_everywhere(world):
    key, note = world["key"], world["notes"][1]
    api = Caller(Client(), key)
    rest = api.get(f"/get/note:{note.id}@9")
    assert rest.status_code == 404
    assert rest.json()["error"]["code"] == "version_not_found"
    assert rest.json()["error"]["details"] == {"currentVersion": 1}
    for era in ("legacy", "2026"):
        params = {"name": "get_note", "arguments": {"noteId": f"note:{note.id}@9"}}
        answer = modern(key, "tools/call", params) if era == "2026" else handshake(
            key, "tools/call", params)
        assert error_of(answer.json()["result"]) == {"code": "version_not_found",
                                                     "currentVersion": 1}
    uri = f"note://{note.id}@9"
    for answer, code in ((handshake(key, "resources/read", {"uri": uri}), -32002),
                         (modern(key, "resources/read", {"uri": uri}), -32602)):
        error = answer.json()["error"]
        assert error["code"] == code
        assert error["data"] == {"uri": uri, "code": "version_not_found", "currentVersion": 1}
        assert error["message"] == rest.json()["error"]["message"]
    # A note the caller cannot read stays one and the same answer, whatever the version.
    stranger = new_key(factories.owner())[0]
    hidden = handshake(stranger, "resources/read", {"uri": uri}).json()["error"]
    assert hidden["data"] == {"uri": uri, "code": "resource_not_found"}
    assert json.dumps(hidden).count("currentVersion") == 0


def test_a_note_at_a_version_carries_the_marks_of_that_text_everywhere(world):
    """`note:<id>@<current>` is the note itself, marks and all; a past revision carries
    the known-false marks of its own text and is never an authority (ground truth is the
    note as it stands) — over REST, get_note in both eras and the `note://` resource."""
    key, notes, owner = world["key"], world["notes"], world["owner"]
    rule, wrong = notes[0], notes[1]
    api = Caller(Client(), key)
    for note, content in ((rule, "# Launch rules\n\nAtlas launches when QA and docs sign "
                                 "off."), (wrong, "Atlas launch date: see the launch rules.")):
        services.note_update(actor=owner, operation_id=factories.op(), note_id=note.id,
                             content=content)
    launch = world["expected"][str(wrong.id)][1]
    expected = {  # versioned id → (authority, claims)
        f"note:{rule.id}@2": (True, []),
        f"note:{rule.id}@1": (False, []),
        f"note:{wrong.id}@2": (False, []),
        f"note:{wrong.id}@1": (False, launch),
    }
    for versioned, marks in expected.items():
        rest = data(api.get(f"/get/{versioned}"))
        assert _marks(rest["authority"], rest["knownFalse"]) == marks, ("REST", versioned)
        for era in ("legacy", "2026"):
            result = _tool(key, era, "get_note", {"noteId": versioned})
            got = result["structuredContent"]
            assert got["id"] == versioned
            assert _marks(got.get("authority"), got.get("knownFalse")) == marks, (era,
                                                                               versioned)
            assert _marks(got["record"]["authority"], got["record"]["knownFalse"]) == marks
            assert got["record"] == rest, (era, versioned)  # the REST record, field by field
            text = result["content"][0]["text"]
            assert (f"“{LAUNCH_CLAIM}”" in text) == bool(marks[1]), (era, versioned)
            assert ("declared ground truth" in text) == marks[0], (era, versioned)
        uri = f"note://{versioned.removeprefix('note:')}"
        for answer in (handshake(key, "resources/read", {"uri": uri}),
                       modern(key, "resources/read", {"uri": uri})):
            said = answer.json()["result"]["contents"][0]["text"]
            assert (f"“{LAUNCH_CLAIM}”" in said) == bool(marks[1]), uri
            assert ("declared ground truth" in said) == marks[0], uri
    # The current version read by its versioned id is the note read by id.
    assert data(api.get(f"/get/note:{wrong.id}@2")) == data(api.get(f"/notes/{wrong.id}"))


def test_recent_changes_in_the_brief_carry_known_false_too(world):
    """The brief's recent changes name a note that states a false claim as such — in
    its JSON (`recent[].knownFalse`) and in the line a model reads."""
    key, expected, wrong = world["key"], world["expected"], world["notes"][1]
    api = Caller(Client(), key)
    brief = data(api.get("/brief?format=json&budgetTokens=8000"))
    recent = {_bare(c["id"]): _marks(False, c.get("knownFalse")) for c in brief["recent"]}
    assert str(wrong.id) in recent
    for note_id, said in recent.items():
        assert said[1] == expected[note_id][1], note_id
    markdown = data(api.get("/brief?budgetTokens=8000"))["markdown"]
    [line] = [ln for ln in markdown.splitlines()
              if ln.startswith("- ") and wrong.versioned_id in ln]
    assert f"“{LAUNCH_CLAIM}”" in line and "do not present it as true" in line
