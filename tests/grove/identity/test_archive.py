"""The lossless account archive (issue 22 item 4, `grove.identity.archive`): an account
full of everything — notebooks in every state, revisions, visions, ground truth,
negatives, held changes, conversations with citations and proposals, shares, the
ingest ledger — exported and imported into a fresh account, then compared table by
table, row by row, field by field. Bad archives change nothing."""

from __future__ import annotations

import json
import uuid
from io import StringIO
from pathlib import PurePosixPath

import pytest
from django.core.management import call_command
from django.db import models

from ask.models import Proposal, Turn
from ask.services import conversation_create, turn_submit
from grove.identity import services as identity
from grove.identity.archive import account_archive, account_archive_import
from grove.kernel import archive
from grove.kernel.errors import Conflict, Forbidden, Invalid
from grove.kernel.tenancy import tenant
from grove.models import Account
from notebooks import services
from notebooks.models import Note
from notebooks.services.ingest import ingest_file, ingest_root
from passages.models import PassageVector
from sharing import services as sharing
from tests import factories
from tests.factories import op
from tests.notebooks.test_ingest import index_all

pytestmark = pytest.mark.django_db


def rich_account(actor) -> None:
    identity.account_set_time_zone(actor=actor, time_zone="Europe/Paris")
    identity.account_set_secret_rules(actor=actor, on_ingest="redact", on_automatic="refuse",
                                      on_explicit="refuse",
                                      patterns=[{"name": "badge", "pattern": "B-[0-9]{4}"}])
    work = factories.notebook(actor, "Work")
    grove = factories.notebook(actor, "Grove", parent=work.id)
    old = factories.notebook(actor, "Old plans")
    services.notebook_archive(actor=actor, operation_id=op(), notebook_id=old.id)
    gone = factories.notebook(actor, "Scratch")
    services.notebook_delete(actor=actor, operation_id=op(), notebook_id=gone.id)
    rule = factories.note(actor, "Invoices are in euros.", notebook_id=grove.id,
                          tags=["billing"], kind="decision")
    services.note_update(actor=actor, operation_id=op(), note_id=rule.id,
                         content="Invoices are in euros, always.", pinned=True)
    factories.note(actor, "Resume at step 3.", kind="handoff", task_id="t-1",
                   notebook_id=work.id, retention_days=7)
    factories.note(actor, "Personal: call the plumber on 2026-12-09.")
    archived = factories.note(actor, "An archived fact.", notebook_id=work.id)
    services.note_archive(actor=actor, operation_id=op(), items=[archived.id])
    deleted = factories.note(actor, "A deleted fact.", notebook_id=work.id)
    services.note_forget(actor=actor, operation_id=op(), items=[deleted.id])
    services.vision_update(actor=actor, operation_id=op(), notebook_id=None,
                           content="Keep the household running.")
    services.vision_update(actor=actor, operation_id=op(), notebook_id=grove.id,
                           content="Ship Grove.")
    services.vision_update(actor=actor, operation_id=op(), notebook_id=grove.id,
                           content="Ship Grove 1.0 by spring.")
    services.truth_declare(actor=actor, notebook_id=grove.id, note_ids=[rule.id],
                           policy="restrict")
    services.negative_add(actor=actor, notebook_id=grove.id, claim="Invoices are in dollars.")
    agent = factories.connection(actor, notebooks=[grove.id])
    services.note_update(actor=agent, operation_id=op(), note_id=rule.id,
                         content="Invoices are in dollars.")  # held for the owner
    talk, _ = conversation_create(actor=actor, conversation_id=uuid.uuid4(),
                                  title="Billing")
    asked, _ = turn_submit(actor=actor, conversation_id=talk.id, turn_id=uuid.uuid4(),
                           query="What currency?", expected_version=0,
                           context={"notes": [str(rule.id)], "only": True})
    with tenant(actor):
        turn = Turn.objects.get(client_id=asked.id)
        turn.status, turn.provider = "completed", "stand-in"
        turn.result = {"blocks": [{"text": "Euros.", "citations": [f"note:{rule.id}@2"]}]}
        turn.save()
        Proposal.objects.create(account_id=actor.account_id, turn=turn, position=1,
                                kind="edit", summary="Say always",
                                change={"noteId": str(rule.id), "content": "Always euros."},
                                fingerprint={f"note:{rule.id}": 2})
    sharing.share_create(actor=actor, note_id=rule.id)
    ended, _ = sharing.share_create(actor=actor, notebook_id=work.id)
    sharing.share_revoke(actor=actor, share_id=ended.id)
    ingest_file(actor=actor, root=ingest_root(actor, str(work.id)),
                path=PurePosixPath("notes/a.md"), raw=b"# A\n\nIngested text.")


def moved(actor) -> list[dict]:
    """The archive as a file would carry it: through JSON text and back."""
    return [json.loads(json.dumps(record)) for record in account_archive(actor=actor)]


def natural(table: archive.Archived, row: models.Model, ids: dict) -> tuple:
    """Rows without a UUID id are matched on what they point at."""
    if table.table == "notebooks_truthnote":
        return (ids.get(str(row.declaration_id), row.declaration_id),
                ids.get(str(row.note_id), row.note_id))
    return (ids.get(str(row.root_id), row.root_id), row.path, row.chunk)


def test_an_account_moves_with_everything_field_by_field(django_capture_on_commit_callbacks):
    alice = factories.owner("alice")
    rich_account(alice)
    records = moved(alice)
    assert records[0]["type"] == "grove-archive" and records[-1]["type"] == "end"
    bob = factories.owner("bob")
    with django_capture_on_commit_callbacks(execute=True):
        result = account_archive_import(actor=bob, records=records)
    ids, remap = result.ids, archive.Remap({k: v for k, v in result.ids.items()})
    compared = 0
    for table in archive.TABLES:
        with tenant(alice):
            before = list(archive.rows_of(table, alice.account_id))
        with tenant(bob):
            after = list(archive.rows_of(table, bob.account_id))
        assert len(after) == len(before) > 0, table.table
        model = table.model_class
        uuid_pk = isinstance(model._meta.pk, models.UUIDField)
        by_key = {(row.pk if uuid_pk else natural(table, row, {})): row for row in after}
        for old in before:
            new = by_key[ids[str(old.pk)] if uuid_pk else natural(table, old, ids)]
            for f in model._meta.concrete_fields:
                a, b = getattr(old, f.attname), getattr(new, f.attname)
                if f.name == "account":
                    assert b == bob.account_id
                elif isinstance(f, models.BigAutoField):
                    continue
                elif (table.table, f.name) in (("grove_connection", "key_hash"),
                                               ("grove_connection", "last_used_at")):
                    assert b is None  # no way in: a record of who saved what
                elif (table.table, f.name) == ("grove_connection", "status"):
                    assert b == "revoked"
                elif (table.table, f.name) in (("grove_connection", "revoked_at"),
                                               ("sharing_share", "revoked_at")):
                    assert b is not None and (a is None or b == a)  # revoked on import
                elif (table.table, f.name) == ("grove_connection", "grant_notebooks"):
                    assert b == [ids[str(item)] for item in a]
                elif (f.primary_key or f.is_relation or isinstance(f, models.UUIDField)):
                    assert b == (None if a is None else ids[str(a)]), (table.table, f.name)
                    assert b != a or a is None
                elif isinstance(f, models.JSONField):
                    assert b == remap.within(a), (table.table, f.name)
                elif (table.table, f.name) == ("notebooks_note", "indexing"):
                    assert b in ("pending", "ready")
                else:
                    assert b == a, (table.table, f.name, a, b)
                compared += 1
    assert compared > 300
    # The account's own settings came along.
    moved_bob = Account.objects.get(id=bob.account_id)
    assert (moved_bob.time_zone, moved_bob.secrets_on_explicit, moved_bob.secret_patterns) == (
        "Europe/Paris", "refuse", [{"name": "badge", "pattern": "B-[0-9]{4}"}])
    # Embeddings are rebuilt by this instance's model: every live note gets a vector.
    index_all(bob)
    with tenant(bob):
        live = Note.objects.exclude(status="deleted").count()
        assert PassageVector.objects.count() == live > 0
        assert not Note.objects.filter(content__contains=str(alice.account_id)).exists()
    # A second import into another fresh account is an independent copy.
    carol = factories.owner("carol")
    again = account_archive_import(actor=carol, records=records)
    assert set(again.ids.values()).isdisjoint(ids.values())


def test_bad_archives_change_nothing():
    alice = factories.owner("alice")
    rich_account(alice)
    records = moved(alice)
    bob = factories.owner("bob")
    before = factories.table_counts(bob.account_id)
    notes = [i for i, r in enumerate(records) if r.get("table") == "notebooks_note"]
    orphan = dict(records[notes[0]], row={**records[notes[0]]["row"],
                                          "notebook_id": str(uuid.uuid4())})
    for broken, code in ((records[:-1], "invalid_archive"),  # cut short
                         (records[:5] + records[6:], "invalid_archive"),  # a row lost
                         ([*records[:notes[0]], orphan, *records[notes[0] + 1:]],
                          "invalid_archive"),  # points at a notebook it does not hold
                         ([{"type": "grove-export", "format": 2}], "invalid_archive"),
                         ([records[0], {"type": "row", "table": "grove_account", "row": {}}],
                          "invalid_archive")):
        with pytest.raises(Invalid) as refused:
            account_archive_import(actor=bob, records=broken)
        assert refused.value.code == code
        assert factories.table_counts(bob.account_id) == before
    assert Account.objects.get(id=bob.account_id).time_zone == "UTC"
    with pytest.raises(Conflict) as refused:  # into an account that has notes already
        account_archive_import(actor=alice, records=records)
    assert refused.value.code == "account_not_empty"
    agent = factories.connection(bob, all_notebooks=True)
    with pytest.raises(Forbidden):
        account_archive_import(actor=agent, records=records)
    with pytest.raises(Forbidden):
        next(account_archive(actor=agent))


def test_the_commands_move_an_account_and_can_keep_shares(tmp_path):
    alice = factories.owner("alice")
    rich_account(alice)
    bundle = tmp_path / "alice.grove-archive.ndjson"
    call_command("export", "--user", "alice", "--archive", str(bundle))
    factories.owner("bob")
    out = StringIO()
    call_command("import", "--user", "bob", "--archive", "--keep-shares", str(bundle),
                 stdout=out)
    assert "notebooks_note" in out.getvalue() and "sharing_share" in out.getvalue()
    bob = factories.Actor.for_session(Account.objects.get(username="bob").id)
    with tenant(bob):
        from sharing.models import Share

        assert Share.objects.filter(revoked_at__isnull=True).count() == 1  # kept live


def _row(records, table, **changes):
    index = next(i for i, r in enumerate(records) if r.get("table") == table)
    return index, dict(records[index], row={**records[index]["row"], **changes})


def test_a_crafted_archive_cannot_make_a_cycle_or_smuggle_fields():
    alice = factories.owner("alice")
    rich_account(alice)
    records = moved(alice)
    bob = factories.owner("bob")
    before = factories.table_counts(bob.account_id)
    notebooks = [i for i, r in enumerate(records) if r.get("table") == "notebooks_notebook"]
    first, second = records[notebooks[0]]["row"]["id"], records[notebooks[1]]["row"]["id"]
    # Two notebooks each the other's parent; one its own parent.
    cycle = list(records)
    cycle[notebooks[0]] = dict(cycle[notebooks[0]],
                               row={**cycle[notebooks[0]]["row"], "parent_id": second})
    cycle[notebooks[1]] = dict(cycle[notebooks[1]],
                               row={**cycle[notebooks[1]]["row"], "parent_id": first})
    selfish = list(records)
    selfish[notebooks[0]] = dict(selfish[notebooks[0]],
                                 row={**selfish[notebooks[0]]["row"], "parent_id": first})
    # A reference to an id that only appeared in passing (a grant), not as a notebook row.
    grant_only = str(uuid.uuid4())
    index, connection_row = _row(records, "grove_connection", grant_notebooks=[grant_only])
    passing = list(records)
    passing[index] = connection_row
    passing[notebooks[0]] = dict(passing[notebooks[0]],
                                 row={**passing[notebooks[0]]["row"], "parent_id": grant_only})
    # A held change that would set the note's account or status on accept.
    index, held = _row(records, "notebooks_pendingrevision",
                       changes={"content": "x", "account_id": str(uuid.uuid4())})
    smuggled = list(records)
    smuggled[index] = held
    # Values of the wrong type or size: a 500 nowhere.
    index, long_name = _row(records, "notebooks_notebook", name="n" * 5000)
    too_long = list(records)
    too_long[index] = long_name
    for broken in (cycle, selfish, passing, smuggled, too_long,
                   [records[0], {"type": "row", "table": [], "row": {}}],
                   [records[0], {"type": "account", "capturePausedAt": "2024-13-45T00:00"}]):
        with pytest.raises(Invalid) as refused:
            account_archive_import(actor=bob, records=broken)
        assert refused.value.code == "invalid_archive"
        assert factories.table_counts(bob.account_id) == before


def test_an_account_with_only_a_vision_is_not_empty():
    alice = factories.owner("alice")
    rich_account(alice)
    bob = factories.owner("bob")
    services.vision_update(actor=bob, operation_id=op(), notebook_id=None, content="Mine.")
    with pytest.raises(Conflict) as refused:
        account_archive_import(actor=bob, records=moved(alice))
    assert refused.value.code == "account_not_empty"
