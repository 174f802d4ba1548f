"""Apply and undo a proposal (SPEC §8): the owner's act, in the website or over REST with
the owner's session — never an API key or OAuth client, never the `ask` tool.

Each runs in one tenant transaction:

1. lock the proposal row (a second apply waits here, then replays the first's result);
2. lock every row its fingerprint covers — the notes in id order, and for notebooks the
   account's tree lock, the notebooks' rows and a moved notebook's whole subtree (a
   writer into a notebook holds FOR KEY SHARE on it, so nothing is added meanwhile);
3. recompute the fingerprint; any difference → 409 `proposal_stale` naming what
   changed, and nothing is written;
4. make the change through the ordinary note and notebook services (revisions,
   embedding jobs, grants), with operation ids derived from the proposal's id under a
   server key, and record what undo needs: the prior versions, what was made, and the
   fingerprint right after — undo's own fence (anything touched since → 409).

Undo writes the prior versions back as **new** revisions (history is never rewritten),
restores a merge's archived originals, moves notes and notebooks back, and deletes what
a create made. A delete has no undo. A repeat of either returns the first result.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.utils import timezone
from django.utils.crypto import salted_hmac

from ask.models import Proposal, Turn
from ask.schemas import ProposalOut
from ask.selectors.conversations import access_conversation
from ask.selectors.fingerprints import Affected, changes, covered_by, fingerprint
from ask.selectors.proposal_state import has_undo, proposals_out
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import Conflict, NotFound
from grove.kernel.tenancy import tenant
from grove.models import Connection
from notebooks import services as notes
from notebooks.models import Note, Notebook
from notebooks.rules import parse_uuid
from notebooks.schemas.notes import BatchOut
from notebooks.selectors.access import lock_subtree, notebooks_visible_to, notes_visible_to
from notebooks.services.frame import tree_lock


def _locked(actor: Actor, conversation_id: Any, turn_id: Any, proposal_id: Any) -> Proposal:
    """The proposal, locked (caller holds a tenant transaction)."""
    conversation = access_conversation(actor, conversation_id)
    turn_key = parse_uuid(turn_id, what="turn id")
    proposal_key = parse_uuid(proposal_id, what="proposal id")
    turn = Turn.objects.filter(conversation=conversation, client_id=turn_key).first()
    if turn is None:
        raise NotFound("No such turn.", code="turn_not_found")
    proposal = (Proposal.objects.select_for_update()
                .filter(turn=turn, id=proposal_key).exclude(state=Proposal.State.DROPPED)
                .first())
    if proposal is None:
        raise NotFound("No such proposal.", code="proposal_not_found")
    return proposal


def _within_the_askers_grant(proposal: Proposal) -> None:
    """A proposal made in a connection's conversation was checked against its grant then;
    applying it must still be inside that connection's grant now (it may have narrowed or
    been revoked since): else 409 proposal_out_of_grant, nothing written."""
    turn = proposal.turn
    if turn.connection_id is None:
        return
    row = Connection.objects.filter(id=turn.connection_id).first()
    scope = covered_by(proposal, after_apply=False)
    reachable = row is not None and row.status == Connection.Status.ACTIVE
    if reachable:
        asker = Actor.for_connection(row)
        reachable = WRITE in asker.capabilities and \
            notes_visible_to(asker).filter(id__in=scope.notes).count() == len(scope.notes) \
            and notebooks_visible_to(asker).filter(
                id__in=[*scope.notebooks, *scope.subtrees]).count() \
            == len({*scope.notebooks, *scope.subtrees})
    if not reachable:
        raise Conflict("The connection this was proposed for no longer reaches what it "
                       "changes; nothing was changed. Ask again.",
                       code="proposal_out_of_grant")


def _fence(actor: Actor, scope: Affected, expected: dict[str, Any], *, doing: str) -> None:
    """Lock what `scope` covers and refuse (409 proposal_stale) unless it is exactly as
    `expected`."""
    if scope.notebooks or scope.subtrees:
        tree_lock(actor)
        list(Notebook.objects.select_for_update().filter(id__in=list(scope.notebooks))
             .order_by("id").values_list("id", flat=True))
        members = [i for notebook_id in scope.subtrees for i in lock_subtree(notebook_id)]
        # and the notes in them: a note moved out or forgotten meanwhile waits for us
        list(Note.objects.select_for_update().filter(notebook_id__in=members)
             .order_by("id").values_list("id", flat=True))
    list(Note.objects.select_for_update().filter(id__in=list(scope.notes)).order_by("id")
         .values_list("id", flat=True))
    found = changes(expected, fingerprint(scope))
    if found:
        raise Conflict(f"The notes changed since this proposal was {doing}; nothing was "
                       "changed. Ask again with the notes as they are now.",
                       code="proposal_stale",
                       changed=[c.to_json() for c in found])


OPERATION_SALT = "grove.ask.proposal-operation"


def _op(proposal: Proposal, phase: str, step: int) -> uuid.UUID:
    """The operation id of one service call of an apply or an undo: derived from the
    proposal's id under a key only the server knows, so no client can claim it first
    (operation ids are the account's) and block the owner's apply or undo."""
    digest = salted_hmac(OPERATION_SALT, f"{proposal.id}:{phase}:{step}",
                         algorithm="sha256").digest()
    return uuid.UUID(bytes=digest[:16], version=4)


def _items(pairs: Any) -> list[dict[str, Any]]:
    """Batch items at the versions the fence saw."""
    return [{"id": str(i), "expectedVersion": v} for i, v in pairs]


def _all(result: BatchOut, status: str) -> None:
    """A batch call inside the fence acts on every note (anything else is a bug the
    fence missed: refuse rather than half-apply)."""
    odd = [item for item in result.items if item.status != status]
    if odd:
        raise Conflict(f"A note could not be {status} ({odd[0].status}); nothing was "
                       "changed.", code="proposal_stale")


def _apply(actor: Actor, proposal: Proposal) -> dict[str, Any]:
    """Make the change; returns what undo needs (before the after-fingerprint)."""
    change = proposal.change
    step, listed = change["step"], [(uuid.UUID(i), v) for i, v in change["notes"]]
    destination = uuid.UUID(change["destination"]) if change["destination"] else None
    # What undo is fenced on besides the proposal's own scope: what apply made, and the
    # notebooks things moved out of (undo moves them back there).
    made: dict[str, list[str]] = {"notes": [], "notebooks": [], "origins": []}
    record: dict[str, Any] = {"before": {str(i): v for i, v in listed}, "made": made}

    def op(n: int) -> uuid.UUID:
        return _op(proposal, "apply", n)

    if step in ("edit", "merge"):
        note_id, version = listed[0]
        fields: dict[str, Any] = {}
        if change["content"] is not None:
            fields["content"] = change["content"]
        if change["noteKind"] is not None:
            fields["kind"] = change["noteKind"]
        notes.note_update(actor=actor, operation_id=op(1), note_id=note_id,
                          expected_version=version, **fields)
        if step == "merge":
            _all(notes.note_archive(actor=actor, operation_id=op(2),
                                    items=_items(listed[1:])), "archived")
    elif step == "create":
        saved = notes.note_remember(actor=actor, operation_id=op(1), content=change["content"],
                                    kind=change["noteKind"], notebook_id=destination)
        assert saved.note is not None  # the owner's own saves are never held
        made["notes"].append(str(saved.note.id))
    elif step in ("archive", "restore", "delete"):
        service = {"archive": notes.note_archive, "restore": notes.note_restore,
                   "delete": notes.note_forget}[step]
        status = {"archive": "archived", "restore": "restored", "delete": "deleted"}[step]
        _all(service(actor=actor, operation_id=op(1),
                     items=_items(listed)), status)
    elif step == "move_notes":
        record["from"] = {str(n.id): str(n.notebook_id) if n.notebook_id else None
                          for n in Note.objects.filter(id__in=[i for i, _ in listed])}
        made["origins"] = sorted({o for o in record["from"].values() if o})
        notes.note_move(actor=actor, operation_id=op(1), note_ids=[i for i, _ in listed],
                        notebook_id=destination)
    elif step == "create_notebook":
        notebook = notes.notebook_create(actor=actor, operation_id=op(1), name=change["name"],
                                         parent_id=destination)
        made["notebooks"].append(str(notebook.id))
    elif step == "move_notebook":
        subject = Notebook.objects.get(id=change["subject"])
        record["from"] = str(subject.parent_id) if subject.parent_id else None
        made["origins"] = [record["from"]] if record["from"] else []
        notes.notebook_update(actor=actor, operation_id=op(1), notebook_id=subject.id,
                              parent_id=destination)
    else:
        raise Conflict(f"This proposal's change ({step}) is unknown.", code="proposal_invalid")
    return record


def _undo(actor: Actor, proposal: Proposal) -> None:
    change, record = proposal.change, proposal.applied or {}
    step = change["step"]
    listed = [(uuid.UUID(i), v) for i, v in change["notes"]]
    after = record["fingerprint"]["notes"]

    def op(n: int) -> uuid.UUID:
        return _op(proposal, "undo", n)

    if step in ("edit", "merge"):
        note_id, version = listed[0]
        notes.note_restore_revision(actor=actor, operation_id=op(1), note_id=note_id,
                                    revision=version, expected_version=after[str(note_id)])
        if step == "merge":
            _all(notes.note_restore(actor=actor, operation_id=op(2), items=_items(
                (i, after[str(i)]) for i, _ in listed[1:])), "restored")
    elif step == "create":
        _all(notes.note_forget(actor=actor, operation_id=op(1), items=_items(
            (i, after[i]) for i in record["made"]["notes"])), "deleted")
    elif step == "archive":
        _all(notes.note_restore(actor=actor, operation_id=op(1), items=_items(
            (i, after[str(i)]) for i, _ in listed)), "restored")
    elif step == "restore":
        _all(notes.note_archive(actor=actor, operation_id=op(1), items=_items(
            (i, after[str(i)]) for i, _ in listed)), "archived")
    elif step == "move_notes":
        origins: dict[str | None, list[str]] = {}
        for note_id, origin in record["from"].items():
            origins.setdefault(origin, []).append(note_id)
        for n, (origin, ids) in enumerate(sorted(origins.items(), key=lambda o: str(o[0]))):
            notes.note_move(actor=actor, operation_id=op(n + 1), note_ids=ids,
                            notebook_id=origin)
    elif step == "create_notebook":
        notes.notebook_delete(actor=actor, operation_id=op(1),
                              notebook_id=record["made"]["notebooks"][0])
    elif step == "move_notebook":
        notes.notebook_update(actor=actor, operation_id=op(1), notebook_id=change["subject"],
                              parent_id=record["from"])
    else:
        raise Conflict(f"This proposal's change ({step}) has no undo.", code="proposal_no_undo")


def proposal_apply(*, actor: Actor, conversation_id: Any, turn_id: Any,
                   proposal_id: Any) -> ProposalOut:
    """Apply a proposal, exactly as previewed or not at all (409 proposal_stale). The
    owner's website session only. A repeat returns the applied proposal."""
    actor.require_session()
    with tenant(actor):
        proposal = _locked(actor, conversation_id, turn_id, proposal_id)
        if proposal.state == Proposal.State.PROPOSED:
            _within_the_askers_grant(proposal)
            _fence(actor, covered_by(proposal, after_apply=False), proposal.fingerprint,
                   doing="previewed")
            record = _apply(actor, proposal)
            proposal.applied = record
            record["fingerprint"] = fingerprint(covered_by(proposal, after_apply=True))
            proposal.state, proposal.applied_at = Proposal.State.APPLIED, timezone.now()
            proposal.save(update_fields=["state", "applied", "applied_at"])
        elif proposal.state == Proposal.State.UNDONE:
            raise Conflict("This proposal was applied and undone; ask again to propose it "
                           "anew.", code="proposal_undone")
        return proposals_out(actor, [proposal])[0]


def proposal_undo(*, actor: Actor, conversation_id: Any, turn_id: Any,
                  proposal_id: Any) -> ProposalOut:
    """Undo an applied proposal, if nothing it touched has changed since (else 409
    proposal_stale). The owner's website session only. A repeat returns the undone
    proposal; a delete has no undo (409 proposal_no_undo)."""
    actor.require_session()
    with tenant(actor):
        proposal = _locked(actor, conversation_id, turn_id, proposal_id)
        if proposal.state == Proposal.State.APPLIED:
            if not has_undo(proposal):
                raise Conflict("A delete has no undo.", code="proposal_no_undo")
            assert proposal.applied is not None
            _fence(actor, covered_by(proposal, after_apply=True),
                   proposal.applied["fingerprint"], doing="applied")
            _undo(actor, proposal)
            proposal.state, proposal.undone_at = Proposal.State.UNDONE, timezone.now()
            proposal.save(update_fields=["state", "undone_at"])
        elif proposal.state == Proposal.State.PROPOSED:
            raise Conflict("This proposal has not been applied.", code="proposal_not_applied")
        return proposals_out(actor, [proposal])[0]
