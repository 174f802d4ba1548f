"""What can be done with a stored proposal now (SPEC §8), as its reader sees it: its live
state (`proposed`, `applied`, `undone`, or `stale` once its fingerprint no longer holds),
whether it can be applied or undone, what changed, and its preview less the words of any
note the reader no longer sees. Read for a page of proposals in a fixed number of
queries."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from ask.models import Proposal
from ask.schemas import Changed, ProposalOut, ProposedChange
from ask.selectors.fingerprints import Affected, changes, covered_by, fingerprints
from grove.kernel.actor import Actor
from notebooks.selectors.access import notes_visible_to


def has_undo(proposal: Proposal) -> bool:
    """Everything but a delete can be undone."""
    return proposal.change.get("step") != "delete"


def _now_of(proposal: Proposal) -> Affected | None:
    """What to read to tell what can be done with a proposal now (None: nothing)."""
    if proposal.state == Proposal.State.PROPOSED:
        return covered_by(proposal, after_apply=False)
    if proposal.state == Proposal.State.APPLIED and has_undo(proposal):
        return covered_by(proposal, after_apply=True)
    return None


def _shown_to(change: ProposedChange, visible: set[uuid.UUID]) -> ProposedChange:
    """The preview as the reader may see it now: a note deleted since, or out of the
    reader's grant now, keeps its place in the list but not its words (no label, no
    diff) — a stored preview is not a way around forgetting or a narrowed grant."""
    preview = change.preview
    hidden = {n.id for n in preview.notes if n.id is not None and n.id not in visible}
    if not hidden:
        return change
    notes = [n.model_copy(update={"label": "(no longer reachable)"}) if n.id in hidden
             else n for n in preview.notes]
    diffs = [d for d in preview.diffs if d.note_id not in hidden]
    return change.model_copy(update={"preview": preview.model_copy(
        update={"notes": notes, "diffs": diffs})})


def proposal_out(proposal: Proposal, now: dict[str, Any] | None,
                 visible: set[uuid.UUID]) -> ProposalOut:
    """A stored proposal with what can be done with it now, given `now` — the fingerprint
    of what it covers as it is now (`_now_of`; None when nothing can be done) — and the
    notes the reader can see: a proposed one whose fingerprint no longer holds is stale;
    an applied one can be undone while nothing it touched has changed since."""
    state = proposal.state
    found: list[Changed] = []
    can_apply = can_undo = False
    if state == Proposal.State.PROPOSED and now is not None:
        found = changes(proposal.fingerprint, now)
        state = "stale" if found else state
        can_apply = not found
    elif state == Proposal.State.APPLIED and now is not None:
        assert proposal.applied is not None
        found = changes(proposal.applied["fingerprint"], now)
        can_undo = not found
    change = _shown_to(ProposedChange.model_validate(proposal.preview), visible)
    return ProposalOut(**change.model_dump(), id=proposal.id, position=proposal.position,
                       state=state, can_apply=can_apply,  # type: ignore[arg-type]
                       can_undo=can_undo, changed=found, applied_at=proposal.applied_at,
                       undone_at=proposal.undone_at)


def proposals_out(actor: Actor, rows: list[Proposal]) -> list[ProposalOut]:
    """Proposals as `actor` reads them now, in a fixed number of queries (caller holds a
    tenant transaction)."""
    scopes = [_now_of(p) for p in rows]
    nows = iter(fingerprints([s for s in scopes if s is not None]))
    named = {n["id"] for p in rows for n in p.preview.get("preview", {}).get("notes", [])
             if n.get("id")}
    visible = set(notes_visible_to(actor).filter(id__in=named).values_list("id", flat=True)) \
        if named else set()
    visible = {uuid.UUID(str(i)) for i in visible}
    return [proposal_out(p, next(nows) if s is not None else None, visible)
            for p, s in zip(rows, scopes, strict=True)]


def proposals_of(actor: Actor, turn_ids: Iterable[uuid.UUID]
                 ) -> dict[uuid.UUID, list[ProposalOut]]:
    """The shown proposals of these turns, by turn, as `actor` reads them (caller holds a
    tenant transaction)."""
    rows = list(Proposal.objects.filter(turn_id__in=list(turn_ids))
                .exclude(state=Proposal.State.DROPPED).order_by("turn_id", "position"))
    shown: dict[uuid.UUID, list[ProposalOut]] = {}
    for proposal, out in zip(rows, proposals_out(actor, rows), strict=True):
        shown.setdefault(proposal.turn_id, []).append(out)
    return shown
