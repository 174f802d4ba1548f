"""Export (`GET /v1/export`, `grove export`) and import (`grove import`): an account's
notebooks, notes and revision history survive the round trip exactly."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from grove.kernel.errors import Forbidden, Invalid
from grove.models import Account
from notebooks import services
from notebooks.services.portability import account_import, export_records
from tests import factories
from tests.api.conftest import Caller, error, new_key
from tests.factories import op

pytestmark = pytest.mark.django_db


def build_library(owner):
    work = factories.notebook(owner, "Work")
    infra = factories.notebook(owner, "Infra", parent=work.id)
    old = factories.notebook(owner, "Old")
    edited = factories.note(owner, "Deploys go through CI.", notebook_id=infra.id, pinned=True,
                            importance=0.9, source_agent="claude")
    services.note_update(actor=owner, operation_id=op(), note_id=edited.id,
                         content="Deploys go through CI, never by hand.")
    services.note_restore_revision(actor=owner, operation_id=op(), note_id=edited.id,
                                   revision=1)
    factories.note(owner, "Prefer short answers.", kind="preference")
    factories.note(owner, "Handing over the migration.", kind="handoff", task_id="mig-1",
                   notebook_id=work.id)
    archived = factories.note(owner, "Old decision.", kind="decision", notebook_id=old.id)
    services.note_archive(actor=owner, operation_id=op(), items=[archived.id])
    gone = factories.note(owner, "Forget me.")
    services.note_forget(actor=owner, operation_id=op(), items=[gone.id])
    services.vision_update(actor=owner, operation_id=op(), content="Ship calm software.")
    services.vision_update(actor=owner, operation_id=op(), notebook_id=infra.id,
                           content="Infra: boring and reliable.")
    services.vision_update(actor=owner, operation_id=op(), notebook_id=infra.id,
                           content="Infra: boring, reliable, cheap.")
    services.notebook_archive(actor=owner, operation_id=op(), notebook_id=old.id)
    return work


def canonical(records: list[dict]) -> list[dict]:
    """The export with ids replaced by their order of appearance (import makes new ids)."""
    names: dict[str, str] = {}

    def name(value):
        if value is None:
            return None
        return names.setdefault(value, f"#{len(names)}")

    out = []
    for record in records[1:]:
        record = dict(record)
        for field in ("id", "parentId", "notebookId", "noteId"):
            if field in record:
                record[field] = name(record[field])
        out.append(record)
    return out


def test_export_then_import_reproduces_the_library_exactly():
    owner = factories.owner()
    build_library(owner)
    exported = list(export_records(actor=owner))
    assert exported[0]["type"] == "grove-export"
    types = [r["type"] for r in exported[1:]]
    assert types.count("notebook") == 3 and types.count("note") == 4
    assert types.count("vision") == 2 and exported[0]["format"] == 2
    infra_vision = next(r for r in exported if r["type"] == "vision" and r["notebookId"])
    assert [v["content"] for v in infra_vision["revisions"]] == [
        "Infra: boring and reliable.", "Infra: boring, reliable, cheap."]
    assert "Forget me." not in json.dumps(exported)  # deleted notes are not exported
    edited = next(r for r in exported if r.get("content", "").startswith("Deploys go through CI.")
                  and r["type"] == "note")
    assert edited["version"] == 3
    assert [r["reason"] for r in exported if r.get("noteId") == edited["id"]] == \
        ["create", "update", "restore_revision"]

    fresh = factories.owner()
    result = account_import(actor=fresh, records=exported)
    assert (result.notebooks, result.notes, result.revisions, result.visions) == (3, 4, 7, 2)
    again = list(export_records(actor=fresh))
    assert canonical(again) == canonical(exported)
    # The imported active notes are queued for embedding; the original is untouched.
    assert factories.table_counts(owner.account_id)["notes"] == 5


def test_an_account_vision_is_imported_only_where_there_is_none():
    owner = factories.owner()
    build_library(owner)
    exported = list(export_records(actor=owner))
    other = factories.owner()
    services.vision_update(actor=other, operation_id=op(), content="My own words.")
    result = account_import(actor=other, records=exported)
    assert result.visions == 1  # the notebook's; the account keeps its own
    from notebooks import selectors

    assert selectors.vision_get(actor=other).content == "My own words."
    # Format 1 files (before visions) still import.
    old = [{**exported[0], "format": 1}] + [r for r in exported[1:] if r["type"] != "vision"]
    assert account_import(actor=factories.owner(), records=old).visions == 0
    broken = [r if r["type"] != "vision" else {**r, "revisions": r["revisions"][:-1]}
              for r in exported]
    with pytest.raises(Invalid) as refused:
        account_import(actor=factories.owner(), records=broken)
    assert refused.value.code == "invalid_import"


def test_a_huge_version_in_an_import_is_refused_without_counting_to_it():
    """A version near 2**31 with one revision: refused by its length first (it used to
    build a list of two billion numbers before it could say so)."""
    header = {"type": "grove-export", "format": 2, "exportedAt": "2026-12-01T00:00:00Z"}
    when = "2026-12-01T00:00:00Z"
    vision = {"type": "vision", "notebookId": None, "version": 2**31 - 1, "content": "x",
              "createdAt": when, "updatedAt": when,
              "revisions": [{"version": 1, "content": "x", "createdAt": when}]}
    note = {"type": "note", "id": "6c3f5a43-7f3c-4f59-9a33-2b3f07a5ad11", "version": 2**31 - 1,
            "notebookId": None, "content": "x", "kind": "fact", "taskId": None,
            "sourceAgent": None, "capture": "explicit", "pinned": False, "importance": 0.5,
            "retentionDays": None, "expiresAt": None, "status": "active", "archivedAt": None,
            "expiredAt": None, "createdAt": when, "updatedAt": when}
    for records in ([header, vision], [header, note]):
        with pytest.raises(Invalid) as refused:
            account_import(actor=factories.owner(), records=records)
        assert refused.value.code == "invalid_import"


def test_rest_export_is_ndjson_scoped_to_the_grant():
    owner = factories.owner()
    work = build_library(owner)
    everything, _ = new_key(owner)
    lines = Caller(Client(), everything).get("/export")
    assert lines.status_code == 200 and lines["Content-Type"] == "application/x-ndjson"
    assert "attachment" in lines["Content-Disposition"]
    records = [json.loads(line) for line in b"".join(lines.streaming_content).splitlines()]
    assert canonical(records) == canonical(list(export_records(actor=owner)))

    narrow, _ = new_key(owner, personal=False, all_notebooks=False, notebooks=[work.id])
    scoped = Caller(Client(), narrow).get("/export")
    records = [json.loads(line) for line in b"".join(scoped.streaming_content).splitlines()]
    assert {r["name"] for r in records if r["type"] == "notebook"} == {"Work"}
    assert {r["content"] for r in records if r["type"] == "note"} == \
        {"Handing over the migration."}
    error(Caller(Client(), None).get("/export"), 401, "unauthenticated")


@pytest.mark.parametrize("damage", [
    lambda rs: rs[1:],                                            # no header
    lambda rs: [rs[0], {"type": "note"}],                         # incomplete record
    lambda rs: [rs[0], {**rs[1], "owner": "x"}] + rs[2:],         # unknown field
    lambda rs: [r for r in rs if not (r["type"] == "revision" and r["version"] == 2)],
    lambda rs: [rs[0]] + [r for r in rs[1:] if r["type"] != "notebook"],  # dangling ids
    lambda rs: [{**r, "content": ""} if r["type"] == "note" else r for r in rs],
])
def test_a_bad_import_changes_nothing(damage):
    owner = factories.owner()
    build_library(owner)
    records = damage(list(export_records(actor=owner)))
    fresh = factories.owner()
    before = factories.table_counts(fresh.account_id)
    with pytest.raises(Invalid):
        account_import(actor=fresh, records=records)
    assert factories.table_counts(fresh.account_id) == before


def test_only_the_owner_session_imports():
    owner = factories.owner()
    _, key_actor = new_key(owner)
    with pytest.raises(Forbidden):
        account_import(actor=key_actor, records=[])


def test_commands_round_trip(tmp_path):
    owner = factories.owner()
    build_library(owner)
    user = Account.objects.get(id=owner.account_id).username
    path = tmp_path / "export.ndjson"
    call_command("export", "--user", user, str(path))
    fresh = factories.owner()
    fresh_user = Account.objects.get(id=fresh.account_id).username
    out = StringIO()
    call_command("import", "--user", fresh_user, str(path), stdout=out)
    assert "imported 3 notebooks, 4 notes, 7 revisions, 2 visions" in out.getvalue()
    assert canonical(list(export_records(actor=fresh))) == \
        canonical([json.loads(line) for line in path.read_text().splitlines()])
    path.write_text('{"type": "grove-export", "format": 99, "exportedAt": "2026-01-01T00:00:00Z"}')
    with pytest.raises(CommandError):
        call_command("import", "--user", fresh_user, str(path))
