"""Proposals over REST (SPEC §8): every kind applied and undone with the owner's session,
fenced by the fingerprint, idempotent, and out of reach of API keys."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from ask.models import Proposal
from grove.kernel.tenancy import tenant
from notebooks import services
from notebooks.models import Note, Notebook, Revision
from tests import factories
from tests.api.conftest import Caller, new_key
from tests.ask.proposal_helpers import act, asked, path, proposal, stored

pytestmark = pytest.mark.django_db


def row(owner, note_id):
    return factories.note_row(owner, note_id)


def contents(owner, note_id):
    return [(r.version, r.reason, r.content, r.status)
            for r in factories.revisions(owner, note_id)]


def test_edit_applies_as_a_new_revision_and_undo_writes_the_earlier_one_back(owner, provider,
                                                                              web):
    note = factories.note(owner, "Staging DB: db-staging-1, port 5432.")
    conversation, turn = asked(owner, provider, "Fix the port: it is 6432 now", [note],
                               proposal("edit", [note.versioned_id],
                                        content="Staging DB: db-staging-1, port 6432."))
    [shown] = turn.proposals
    assert (shown.kind, shown.state, shown.can_apply, shown.can_undo) == \
        ("edit", "proposed", True, False)
    assert [(n.id, n.version, n.effect) for n in shown.preview.notes] == \
        [(note.id, 1, "edited")]
    [diff] = shown.preview.diffs
    assert [(r.kind, r.text) for r in diff.rows] == [
        ("del", "Staging DB: db-staging-1, port 5432."),
        ("add", "Staging DB: db-staging-1, port 6432.")]
    assert "earlier version back" in shown.preview.undo

    applied = act(web, conversation, turn, shown.id, "apply")
    assert applied.status_code == 200, applied.content
    data = applied.json()["data"]
    assert (data["state"], data["canUndo"]) == ("applied", True)
    assert row(owner, note.id).content == "Staging DB: db-staging-1, port 6432."
    again = act(web, conversation, turn, shown.id, "apply")
    assert again.status_code == 200 and again.json()["data"]["appliedAt"] == data["appliedAt"]
    assert row(owner, note.id).version == 2  # the repeat changed nothing

    undone = act(web, conversation, turn, shown.id, "undo")
    assert undone.status_code == 200 and undone.json()["data"]["state"] == "undone"
    assert act(web, conversation, turn, shown.id, "undo").status_code == 200
    assert contents(owner, note.id) == [
        (1, "create", "Staging DB: db-staging-1, port 5432.", "active"),
        (2, "update", "Staging DB: db-staging-1, port 6432.", "active"),
        (3, "restore_revision", "Staging DB: db-staging-1, port 5432.", "active")]
    refused = act(web, conversation, turn, shown.id, "apply")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "proposal_undone"


def test_merge_archives_the_others_and_undo_restores_them(owner, provider, web):
    first = factories.note(owner, "Staging database: rebuilt Sundays.")
    second = factories.note(owner, "The staging DB is rebuilt every Sunday at 02:00.")
    merged = "Staging database: rebuilt every Sunday at 02:00."
    conversation, turn = asked(owner, provider, "merge my two notes about the staging "
                               "database", [first, second],
                               proposal("merge", [first.versioned_id, second.versioned_id],
                                        content=merged))
    [shown] = turn.proposals
    assert [(n.id, n.effect) for n in shown.preview.notes] == [
        (first.id, "survives"), (second.id, "archived")]
    assert act(web, conversation, turn, shown.id, "apply").status_code == 200
    assert (row(owner, first.id).content, row(owner, first.id).version) == (merged, 2)
    assert (row(owner, second.id).status, row(owner, second.id).version) == ("archived", 2)

    assert act(web, conversation, turn, shown.id, "undo").status_code == 200
    survivor, original = row(owner, first.id), row(owner, second.id)
    assert (survivor.content, survivor.version) == ("Staging database: rebuilt Sundays.", 3)
    assert (original.status, original.version, original.content) == (
        "active", 3, "The staging DB is rebuilt every Sunday at 02:00.")


def test_create_and_its_undo(owner, provider, web):
    home = factories.notebook(owner, "Home")
    seen = factories.note(owner, "The boiler code is 4711.", notebook_id=home.id)
    conversation, turn = asked(owner, provider, "Add a note that the boiler was serviced",
                               [seen], proposal("create", content="Boiler serviced in May.",
                                                note_kind="fact",
                                                notebook=f"notebook:{home.id}"),
                               notebooks=[home])
    [shown] = turn.proposals
    assert shown.preview.notebooks[0].path == "Home"
    assert shown.preview.notes[0].effect == "created"
    made = act(web, conversation, turn, shown.id, "apply")
    assert made.status_code == 200
    with tenant(owner):
        new = Note.objects.get(content="Boiler serviced in May.")
    assert (new.notebook_id, new.kind, new.status) == (home.id, "fact", "active")
    assert act(web, conversation, turn, shown.id, "undo").status_code == 200
    assert row(owner, new.id).status == "deleted"


def test_archive_restore_and_delete(owner, provider, web):
    old = factories.note(owner, "The old VPN endpoint is vpn1.example.org.")
    conversation, turn = asked(owner, provider, "archive the VPN note", [old],
                               proposal("archive", [old.versioned_id]))
    [archive] = turn.proposals
    assert act(web, conversation, turn, archive.id, "apply").status_code == 200
    assert row(owner, old.id).status == "archived"
    assert act(web, conversation, turn, archive.id, "undo").status_code == 200
    assert (row(owner, old.id).status, row(owner, old.id).version) == ("active", 3)

    services.note_archive(actor=owner, operation_id=factories.op(), items=[str(old.id)])
    archived = factories.note_row(owner, old.id)
    conversation, turn = asked(owner, provider, "bring the VPN note back", [archived],
                               proposal("restore", [f"note:{old.id}@{archived.version}"]),
                               cite=f"note:{old.id}@{archived.version}")
    [restore] = turn.proposals
    assert act(web, conversation, turn, restore.id, "apply").status_code == 200
    assert (row(owner, old.id).status, row(owner, old.id).version) == ("active", 5)
    assert act(web, conversation, turn, restore.id, "undo").status_code == 200
    assert (row(owner, old.id).status, row(owner, old.id).version) == ("archived", 6)
    assert [r[1] for r in contents(owner, old.id)] == [
        "create", "archive", "restore", "archive", "restore", "archive"]

    doomed = factories.note(owner, "Scratch: test test.")
    conversation, turn = asked(owner, provider, "delete the scratch note", [doomed],
                               proposal("delete", [doomed.versioned_id]))
    [delete] = turn.proposals
    assert delete.preview.undo is None  # the preview says there is no undo, before apply
    assert act(web, conversation, turn, delete.id, "apply").status_code == 200
    assert row(owner, doomed.id).status == "deleted"
    no_undo = act(web, conversation, turn, delete.id, "undo")
    assert no_undo.status_code == 409 and no_undo.json()["error"]["code"] == "proposal_no_undo"


def test_organise_moves_notes_creates_and_moves_notebooks_and_undoes_each(owner, provider,
                                                                          web):
    work = factories.notebook(owner, "Work")
    ops = factories.notebook(owner, "Ops")
    note = factories.note(owner, "Rotate the TLS certificates in March.")
    conversation, turn = asked(
        owner, provider, "organise: the TLS note goes to Ops, Ops goes under Work, and make "
        "a notebook Archive", [note],
        proposal("organise", [note.versioned_id], action="move_notes",
                 notebook=f"notebook:{ops.id}"),
        proposal("organise", action="move_notebook", subject=f"notebook:{ops.id}",
                 notebook=f"notebook:{work.id}"),
        proposal("organise", action="create_notebook", name="Archive", notebook="root"),
        notebooks=[work, ops])
    move, nest, create = turn.proposals
    assert move.preview.notes[0].to_notebook == "Ops"
    assert [(nb.path, nb.effect, nb.notebooks, nb.notes) for nb in nest.preview.notebooks] \
        == [("Ops", "moved", 1, 0), ("Work", "parent", 1, 0)]

    assert act(web, conversation, turn, move.id, "apply").status_code == 200
    assert row(owner, note.id).notebook_id == ops.id
    # The move put a note into Ops: the nesting's preview counted none, so it is stale.
    stale = act(web, conversation, turn, nest.id, "apply")
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "proposal_stale"
    assert stale.json()["error"]["details"]["changed"][0]["what"] == "notebook"
    assert act(web, conversation, turn, move.id, "undo").status_code == 200
    assert row(owner, note.id).notebook_id is None

    assert act(web, conversation, turn, nest.id, "apply").status_code == 200
    with tenant(owner):
        assert Notebook.objects.get(id=ops.id).parent_id == work.id
    assert act(web, conversation, turn, nest.id, "undo").status_code == 200
    with tenant(owner):
        assert Notebook.objects.get(id=ops.id).parent_id is None

    assert act(web, conversation, turn, create.id, "apply").status_code == 200
    with tenant(owner):
        made = Notebook.objects.get(name="Archive")
        assert made.deleted_at is None and made.parent_id is None
    assert act(web, conversation, turn, create.id, "undo").status_code == 200
    with tenant(owner):
        assert Notebook.objects.get(id=made.id).deleted_at is not None


def test_a_stale_preview_changes_nothing(owner, provider, web):
    note = factories.note(owner, "Deploys happen on Tuesdays.")
    box = factories.notebook(owner, "Box")
    inside = factories.note(owner, "Box note.", notebook_id=box.id)
    target = factories.notebook(owner, "Target")
    conversation, turn = asked(
        owner, provider, "fix and reorganise", [note, inside],
        proposal("edit", [note.versioned_id], content="Deploys happen on Thursdays."),
        proposal("organise", action="move_notebook", subject=f"notebook:{box.id}",
                 notebook=f"notebook:{target.id}"),
        notebooks=[box, target])
    edit, nest = turn.proposals
    services.note_update(actor=owner, operation_id=factories.op(), note_id=note.id,
                                   content="Deploys happen on Wednesdays.")
    before = factories.table_counts(owner.account_id)
    refused = act(web, conversation, turn, edit.id, "apply")
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "proposal_stale"
    assert error["details"]["changed"] == [{"what": "note", "id": str(note.id), "was": 1,
                                            "now": 2}]
    assert factories.table_counts(owner.account_id) == before
    assert row(owner, note.id).content == "Deploys happen on Wednesdays."
    listed = web.get(f"/v1/conversations/{conversation.id}/turns/{turn.id}").json()["data"]
    assert [p["state"] for p in listed["proposals"]] == ["stale", "proposed"]

    # A note added to the subtree being moved, then one moved out of it: stale both times.
    added = factories.note(owner, "Another box note.", notebook_id=box.id)
    counted = factories.table_counts(owner.account_id)
    added_in = act(web, conversation, turn, nest.id, "apply")
    assert added_in.status_code == 409
    assert added_in.json()["error"]["code"] == "proposal_stale"
    assert factories.table_counts(owner.account_id) == counted
    services.note_forget(actor=owner, operation_id=factories.op(), items=[str(added.id)])
    # (deleted again, the subtree is as it was previewed: only the move out stands now)
    services.note_move(actor=owner, operation_id=factories.op(), note_ids=[inside.id],
                       notebook_id=None)
    moved_out = act(web, conversation, turn, nest.id, "apply")
    assert moved_out.status_code == 409
    assert moved_out.json()["error"]["details"]["changed"] == [
        {"what": "notebook", "id": str(box.id), "was": None, "now": None}]
    # the note added, forgotten and moved by hand: nothing else was written
    assert factories.table_counts(owner.account_id)["revisions"] == before["revisions"] + 3
    with tenant(owner):
        assert Notebook.objects.get(id=box.id).parent_id is None


def test_undo_after_an_unrelated_edit_is_refused(owner, provider, web):
    note = factories.note(owner, "Wi-Fi: grove-home.")
    conversation, turn = asked(owner, provider, "add the password hint", [note],
                               proposal("edit", [note.versioned_id],
                                        content="Wi-Fi: grove-home (password on the fridge)."))
    [edit] = turn.proposals
    assert act(web, conversation, turn, edit.id, "apply").status_code == 200
    services.note_update(actor=owner, operation_id=factories.op(), note_id=note.id,
                                   pinned=True)
    refused = act(web, conversation, turn, edit.id, "undo")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "proposal_stale"
    current = row(owner, note.id)
    assert (current.version, current.pinned) == (3, True)
    shown = web.get(f"/v1/conversations/{conversation.id}/turns/{turn.id}").json()["data"]
    assert (shown["proposals"][0]["state"], shown["proposals"][0]["canUndo"]) == \
        ("applied", False)


def test_only_the_owners_session_applies(owner, provider, web):
    note = factories.note(owner, "Printer IP 10.0.0.7.")
    conversation, turn = asked(owner, provider, "archive it", [note],
                               proposal("archive", [note.versioned_id]))
    [shown] = turn.proposals
    key, _ = new_key(owner)
    agent = Caller(Client(), key)
    tail = path(conversation, turn, shown.id, "apply").removeprefix("/v1")
    refused = agent.post(tail, {})
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "session_required"
    assert row(owner, note.id).status == "active"
    unknown = act(web, conversation, turn, factories.op(), "apply")
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "proposal_not_found"
    stranger = Client()
    stranger.force_login(factories.account("stranger"))
    assert act(stranger, conversation, turn, shown.id, "apply").status_code == 404
    assert row(owner, note.id).status == "active"
    with tenant(owner):
        assert Revision.objects.filter(note_id=note.id).count() == 1


def test_proposals_travel_in_the_export(owner, provider, web):
    note = factories.note(owner, "Lunch is at noon.")
    conversation, turn = asked(owner, provider, "archive it", [note],
                               proposal("archive", [note.versioned_id]))
    record = web.get(f"/v1/conversations/{conversation.id}/export").json()
    [exported] = record["turns"][0]["proposals"]
    assert (exported["kind"], exported["state"], exported["id"]) == \
        ("archive", "proposed", str(turn.proposals[0].id))
    assert [p.state for p in stored(owner)] == [Proposal.State.PROPOSED]


def test_an_edit_of_the_kind_is_undone_to_the_kind_it_had(owner, provider, web):
    note = factories.note(owner, "We deploy on Fridays.", kind="fact")
    conversation, turn = asked(owner, provider, "this is a decision", [note],
                               proposal("edit", [note.versioned_id], note_kind="decision"))
    [edit] = turn.proposals
    assert (edit.preview.diffs[0].kind_from, edit.preview.diffs[0].kind_to) == \
        ("fact", "decision")
    assert act(web, conversation, turn, edit.id, "apply").status_code == 200
    assert row(owner, note.id).kind == "decision"
    assert act(web, conversation, turn, edit.id, "undo").status_code == 200
    assert (row(owner, note.id).kind, row(owner, note.id).content, row(owner, note.id).version) \
        == ("fact", "We deploy on Fridays.", 3)


def test_no_client_can_claim_the_operation_ids_of_an_apply_first(owner, provider, web):
    import uuid

    note = factories.note(owner, "Old router: 192.168.0.1.")
    conversation, turn = asked(owner, provider, "archive it", [note],
                               proposal("archive", [note.versioned_id]))
    [shown] = turn.proposals
    key, _ = new_key(owner)
    agent = Caller(Client(), key)
    for phase in ("apply", "undo"):  # what a guessable derivation would have used
        claimed = uuid.uuid5(shown.id, f"{phase}:1")
        made = agent.post("/notes", {"content": f"squatting {phase}", "kind": "fact"},
                          headers={"Idempotency-Key": str(claimed)})
        assert made.status_code == 201
    assert act(web, conversation, turn, shown.id, "apply").status_code == 200
    assert act(web, conversation, turn, shown.id, "undo").status_code == 200
    assert row(owner, note.id).status == "active"


def test_a_proposal_is_reached_only_through_its_own_turn(owner, provider, web):
    note = factories.note(owner, "Keys are in the blue drawer.")
    conversation, turn = asked(owner, provider, "archive it", [note],
                               proposal("archive", [note.versioned_id]))
    other_conversation, other_turn = asked(owner, provider, "archive it too", [note],
                                           proposal("archive", [note.versioned_id]))
    [shown] = turn.proposals
    wrong = act(web, other_conversation, other_turn, shown.id, "apply")
    assert wrong.status_code == 404 and wrong.json()["error"]["code"] == "proposal_not_found"
    assert row(owner, note.id).status == "active"


def test_undo_of_a_new_notebook_is_refused_once_something_is_in_it(owner, provider, web):
    seen = factories.note(owner, "Seen.")
    conversation, turn = asked(owner, provider, "make a notebook", [seen],
                               proposal("organise", action="create_notebook", name="Inbox",
                                        notebook="root"))
    [create] = turn.proposals
    assert act(web, conversation, turn, create.id, "apply").status_code == 200
    with tenant(owner):
        inbox = Notebook.objects.get(name="Inbox")
    factories.note(owner, "Filed into the new notebook.", notebook_id=inbox.id)
    refused = act(web, conversation, turn, create.id, "undo")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "proposal_stale"
    with tenant(owner):
        assert Notebook.objects.get(id=inbox.id).deleted_at is None


def test_undo_of_a_move_is_refused_when_the_origin_is_gone(owner, provider, web):
    origin = factories.notebook(owner, "Origin")
    target = factories.notebook(owner, "Target")
    note = factories.note(owner, "Moving out.", notebook_id=origin.id)
    conversation, turn = asked(owner, provider, "move it", [note],
                               proposal("organise", [note.versioned_id], action="move_notes",
                                        notebook=f"notebook:{target.id}"),
                               notebooks=[origin, target])
    [move] = turn.proposals
    assert act(web, conversation, turn, move.id, "apply").status_code == 200
    services.notebook_delete(actor=owner, operation_id=factories.op(), notebook_id=origin.id)
    refused = act(web, conversation, turn, move.id, "undo")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "proposal_stale"
    assert row(owner, note.id).notebook_id == target.id


def test_a_forgotten_note_leaves_its_words_out_of_the_stored_preview(owner, provider, web):
    note = factories.note(owner, "Door code 8841, do not share.")
    conversation, turn = asked(owner, provider, "reword it", [note],
                               proposal("edit", [note.versioned_id],
                                        content="Door code 8841 (private)."))
    services.note_forget(actor=owner, operation_id=factories.op(), items=[str(note.id)])
    shown = web.get(f"/v1/conversations/{conversation.id}/turns/{turn.id}").json()["data"]
    [stale] = shown["proposals"]
    assert stale["state"] == "stale" and stale["preview"]["diffs"] == []
    assert stale["preview"]["notes"][0]["label"] == "(no longer reachable)"
    assert "8841" not in json.dumps(shown["proposals"])
    exported = web.get(f"/v1/conversations/{conversation.id}/export").content.decode()
    assert "8841" not in exported.split('"proposals"', 1)[1]


def test_apply_stays_within_the_grant_of_the_connection_that_asked(owner, provider, web):
    shared = factories.notebook(owner, "Shared")
    note = factories.note(owner, "Shared fact.", notebook_id=shared.id)
    key, agent = new_key(owner, all_notebooks=False, personal=False, notebooks=[shared.id])
    conversation, turn = asked(agent, provider, "archive it", [note],
                               proposal("archive", [note.versioned_id]))
    [shown] = turn.proposals
    with tenant(owner):
        from grove.models import Connection

        Connection.objects.filter(id=agent.connection_id).update(grant_notebooks=[])
    refused = act(web, conversation, turn, shown.id, "apply")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "proposal_out_of_grant"
    assert row(owner, note.id).status == "active"
