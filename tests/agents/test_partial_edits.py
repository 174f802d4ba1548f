"""Partial edits (issue 39 item 4): `PATCH /v1/notes/{id}` with `edit` and the
`edit_note` tool — append, prepend, a section by its heading, an exact text — each one
revision, fenced by `expectedVersion`, refused by code when the target is absent or not
unique (nothing changes), replayed by operation id, on long document notes too."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from grove.kernel.tenancy import tenant
from notebooks.models import Note, Revision
from passages.models import Passage
from tests import factories
from tests.api.conftest import Caller, data, error, new_key
from tests.mcp.helpers import modern

pytestmark = pytest.mark.django_db

PLAN = "# Plan\n\n## Status\n\nWaiting.\n\n## Risks\n\n- legal"


def _world(content=PLAN, kind="note"):
    owner = factories.owner()
    key, _ = new_key(owner)
    note = factories.note(owner, content, kind=kind)
    return owner, Caller(Client(), key), note


def _stored(owner, note_id) -> tuple[str, int, int]:
    with tenant(owner):
        note = Note.objects.get(id=note_id)
        return note.content, note.version, Revision.objects.filter(note_id=note_id).count()


def test_each_operation_over_rest_is_one_revision():
    owner, api, note = _world()
    steps = [({"op": "append", "text": "## Log\n\n- started"}, "- legal\n\n## Log"),
             ({"op": "prepend", "text": "> draft"}, "> draft\n\n# Plan"),
             ({"op": "replace_section", "heading": "## Status", "text": "Signed."},
              "## Status\n\nSigned.\n\n## Risks"),
             ({"op": "replace_text", "find": "- legal", "text": "- none"}, "- none")]
    for version, (edit, expected) in enumerate(steps, start=2):
        saved = data(api.patch(f"/notes/{note.id}", {"edit": edit,
                                                     "expectedVersion": version - 1}))
        assert (saved["id"], saved["version"]) == (str(note.id), version)
        content, stored_version, revisions = _stored(owner, note.id)
        assert expected in content and (stored_version, revisions) == (version, version)
    assert content == ("> draft\n\n# Plan\n\n## Status\n\nSigned.\n\n## Risks\n\n- none\n\n"
                       "## Log\n\n- started")


def test_a_refused_edit_changes_nothing_and_says_which():
    owner, api, note = _world()
    before = _stored(owner, note.id)
    absent = error(api.patch(f"/notes/{note.id}", {"edit": {
        "op": "replace_section", "heading": "Budget", "text": "x"}}), 409,
        "edit_target_not_found")
    assert absent["details"]["headings"] == ["# Plan", "## Status", "## Risks"]
    twice = error(api.patch(f"/notes/{note.id}", {"edit": {
        "op": "replace_text", "find": "## ", "text": "x"}}), 409, "edit_target_ambiguous")
    assert twice["details"]["lines"] == [3, 7]
    error(api.patch(f"/notes/{note.id}", {"edit": {"op": "append", "text": "x"},
                                          "expectedVersion": 7}), 409, "version_conflict")
    error(api.patch(f"/notes/{note.id}", {"edit": {"op": "append", "text": "x"},
                                          "content": "whole"}), 400, "edit_with_content")
    error(api.patch(f"/notes/{note.id}", {"edit": {"op": "explode", "text": "x"}}), 422,
          "invalid_request")
    error(api.patch(f"/notes/{note.id}", {"edit": {"op": "replace_text", "find": "",
                                                   "text": "x"}}), 400, "invalid_edit")
    assert _stored(owner, note.id) == before


def test_a_memory_record_keeps_its_limit_and_other_fields_change_with_the_edit():
    owner, api, note = _world("Prefers tea.", kind="preference")
    too_long = {"op": "append", "text": "x" * 7000}
    error(api.patch(f"/notes/{note.id}", {"edit": too_long}), 400, "content_too_long")
    saved = data(api.patch(f"/notes/{note.id}", {
        "edit": {"op": "replace_text", "find": "tea", "text": "green tea"},
        "tags": ["drinks"]}))
    record = data(api.get(f"/notes/{note.id}"))
    assert (record["content"], record["tags"], saved["version"]) == (
        "Prefers green tea.", ["drinks"], 2)


def test_a_retry_with_the_same_operation_id_replays_the_first_result():
    owner, api, note = _world()
    body = {"edit": {"op": "replace_text", "find": "Waiting.", "text": "Done."},
            "operationId": str(uuid.uuid4())}
    first = data(api.patch(f"/notes/{note.id}", body))
    again = data(api.patch(f"/notes/{note.id}", body))  # "Waiting." is gone now
    assert again == first and _stored(owner, note.id)[1:] == (2, 2)
    other = dict(body, edit={"op": "append", "text": "more"})
    error(api.patch(f"/notes/{note.id}", other), 409, "operation_conflict")


def test_a_long_document_edited_near_its_end_is_cut_into_passages_again():
    paragraphs = "\n\n".join(f"Paragraph {n} says something about topic {n}." * 4
                             for n in range(700))
    owner, api, note = _world(f"# Handbook\n\n{paragraphs}\n\n## Appendix\n\nOld appendix.")
    content, _, _ = _stored(owner, note.id)
    assert len(content) > 100_000
    data(api.patch(f"/notes/{note.id}", {"edit": {
        "op": "replace_section", "heading": "Appendix", "text": "Quokka appendix."}}))
    content, version, _ = _stored(owner, note.id)
    assert content.endswith("## Appendix\n\nQuokka appendix.") and version == 2
    with tenant(owner):
        texts = list(Passage.objects.filter(note_id=note.id).values_list("text", flat=True))
    assert any("Quokka appendix." in text for text in texts)
    assert not any("Old appendix." in text for text in texts)


def test_the_edit_note_tool_edits_and_refuses_like_rest():
    owner, api, note = _world()
    key = api.key

    def call(arguments):
        return modern(key, "tools/call", {"name": "edit_note",
                                          "arguments": arguments}).json()["result"]

    result = call({"noteId": f"note:{note.id}@1", "op": "replace_section",
                   "heading": "Risks", "text": "- none", "find": None})
    assert result["structuredContent"]["id"] == f"note:{note.id}@2"
    assert _stored(owner, note.id)[0].endswith("## Risks\n\n- none")
    stale = call({"noteId": f"note:{note.id}@1", "op": "append", "text": "late"})
    assert stale["isError"] is True
    assert json.loads(stale["content"][1]["text"])["code"] == "version_conflict"
    absent = call({"noteId": str(note.id), "op": "replace_text", "find": "Budget",
                   "text": "x"})
    assert json.loads(absent["content"][1]["text"]) == {"code": "edit_target_not_found",
                                                        "find": "Budget"}
    assert _stored(owner, note.id)[1:] == (2, 2)


def test_a_connection_cannot_edit_outside_its_grant():
    owner = factories.owner()
    garden = factories.notebook(owner, "Garden")
    hidden = factories.note(owner, PLAN, kind="note", notebook_id=garden.id)
    key, _ = new_key(owner, all_notebooks=False)
    api = Caller(Client(), key)
    error(api.patch(f"/notes/{hidden.id}", {"edit": {"op": "append", "text": "x"}}), 404,
          "note_not_found")
    read_only, _ = new_key(owner, capabilities=["memory:read"])
    error(Caller(Client(), read_only).patch(f"/notes/{hidden.id}", {
        "edit": {"op": "append", "text": "x"}}), 403, "insufficient_capability")
    assert _stored(owner, hidden.id)[1] == 1

