"""Ground truth (SPEC §10): declaring a place's authoritative notes, its negative list,
whether a notebook inherits the account's declaration, and the owner's decision on a
connection's change to a declared note.

All of it is the owner's, on the website (`actor.require_session`): declared truth is
what every agent in the place is held to, so no connection may choose it — not even
one granted everything. Connections read it (`notebooks.selectors.truth`) and propose
changes to declared notes, which wait here for the owner (`note_update`).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable
from typing import Any

from django.utils import timezone

from grove.kernel import jobs
from grove.kernel.actor import Actor
from grove.kernel.errors import Conflict, Invalid, NotFound
from grove.kernel.tenancy import tenant
from notebooks.models import (
    NEGATIVE_MAX_CHARS,
    NEGATIVES_MAX,
    TRUTH_MAX_NOTES,
    NegativeClaim,
    Note,
    Notebook,
    PendingOrigin,
    PendingRevision,
    PendingStatus,
    RevisionReason,
    TruthDeclaration,
    TruthNote,
    TruthPolicy,
    Verdict,
)
from notebooks.rules import REFERENCE_MAX_NOTES, VERIFY_JOB, clean_bool, parse_uuid, storable_text
from notebooks.schemas.notes import NoteOut
from notebooks.schemas.truth import NegativeOut, TruthOut
from notebooks.selectors import duplicates
from notebooks.selectors.access import access_notebook, notes_live
from notebooks.selectors.truth import negative_out, truth_for, truth_out
from notebooks.selectors.vision import place_filter
from notebooks.services import write_check
from notebooks.services.frame import (
    apply_changes,
    new_note,
    note_to_change,
    require_open_notebook,
    transaction_lock,
)
from notebooks.services.indexing import index_if_changed
from notebooks.services.revisions import record_created, save_new_version


def _place(actor: Actor, notebook_id: uuid.UUID | str | None) -> Any:
    """The notebook named (checked and locked), or None for the account."""
    if notebook_id is None:
        return None
    return access_notebook(actor, parse_uuid(notebook_id, what="notebook id"),
                           for_update=True)


def _lock_place(actor: Actor, notebook_id: uuid.UUID | None) -> None:
    """Serialise declarations of one place (two first declarations cannot both insert)."""
    transaction_lock(f"grove.truth:{actor.account_id}:{notebook_id or 'account'}")


def clean_policy(value: Any) -> str:
    if value not in TruthPolicy.values:
        raise Invalid("policy must be prioritize or restrict.", code="invalid_policy")
    return str(value)


def truth_declare(*, actor: Actor, notebook_id: uuid.UUID | str | None = None,
                  note_ids: Iterable[Any], policy: str = TruthPolicy.PRIORITIZE) -> TruthOut:
    """Declare the authoritative notes of a notebook (or, `notebook_id` None, of the
    account): the set replaces the previous one. Re-declaring the same ids changes
    nothing (each keeps the version it was declared at); an empty set clears it.
    Declared notes must be live notes of the account (any notebook, or Personal)."""
    actor.require_session()
    policy = clean_policy(policy)
    if isinstance(note_ids, (str, bytes)):
        raise Invalid("noteIds must be a list of note ids.", code="invalid_note_ids")
    ids = list(dict.fromkeys(parse_uuid(i, what="note id") for i in note_ids))
    if len(ids) > TRUTH_MAX_NOTES:
        raise Invalid(f"Declare at most {TRUTH_MAX_NOTES} notes.", code="too_many_notes")
    with tenant(actor):
        place = _place(actor, notebook_id)
        place_id = place.id if place else None
        _lock_place(actor, place_id)
        notes = {n.id: n for n in notes_live(actor).filter(id__in=ids)}
        missing = [i for i in ids if i not in notes]
        if missing:
            raise NotFound(f"No live note {missing[0]}: only live notes can be declared.",
                           code="note_not_found")
        declaration = place_filter(TruthDeclaration.objects.select_for_update(),
                                   place_id).first()
        if not ids:
            if declaration is not None:
                declaration.delete()  # its entries go with it
            return truth_out(truth_for(actor, place), full=False)
        now = timezone.now()
        if declaration is None:
            declaration = TruthDeclaration.objects.create(
                account_id=actor.account_id, notebook_id=place_id, policy=policy,
                declared_at=now)
        current = {e.note_id: e for e in TruthNote.objects.filter(declaration=declaration)}
        changed = declaration.policy != policy or list(current) != ids or any(
            current[i].position != position for position, i in enumerate(ids)
            if i in current)
        if changed:
            TruthNote.objects.filter(declaration=declaration).exclude(note_id__in=ids).delete()
            for position, note_id in enumerate(ids):
                entry = current.get(note_id)
                if entry is None:
                    TruthNote.objects.create(
                        account_id=actor.account_id, declaration=declaration, note_id=note_id,
                        declared_version=notes[note_id].version, position=position)
                elif entry.position != position:
                    entry.position = position
                    entry.save(update_fields=["position"])
            declaration.policy, declaration.declared_at = policy, now
            declaration.save(update_fields=["policy", "declared_at"])
        return truth_out(truth_for(actor, place), full=False)


def truth_set_inheritance(*, actor: Actor, notebook_id: uuid.UUID | str,
                          inherit: Any) -> TruthOut:
    """Whether a notebook without its own declaration takes the account's."""
    actor.require_session()
    inherit = clean_bool(inherit, what="inherit")
    with tenant(actor):
        place = _place(actor, notebook_id)
        if place.inherit_account_truth != inherit:
            place.inherit_account_truth = inherit
            place.save(update_fields=["inherit_account_truth"])
        return truth_out(truth_for(actor, place), full=False)


def truth_set_verification(*, actor: Actor, notebook_id: uuid.UUID | str,
                           verify: Any) -> TruthOut:
    """Whether connections' writes into a notebook are checked against the ground truth
    in effect there before they land (`write_check`). Turning it on needs a declaration
    in effect (`no_declaration`) and a model to check with (`model_not_configured`)."""
    actor.require_session()
    verify = clean_bool(verify, what="verify")
    if verify and not write_check.available():
        raise Conflict("Checking agents' writes needs a model: configure GROVE_LLM_BASE_URL "
                       "and GROVE_LLM_MODEL first.", code="model_not_configured")
    with tenant(actor):
        place = _place(actor, notebook_id)
        truth = truth_for(actor, place)
        if verify and truth.declaration is None:
            raise Conflict("Declare this notebook's ground truth (or inherit the account's) "
                           "first: writes are checked against it.", code="no_declaration")
        if verify and len(truth.notes) > REFERENCE_MAX_NOTES:
            raise Conflict(f"A check reads at most {REFERENCE_MAX_NOTES} declared notes; this "
                           f"notebook declares {len(truth.notes)}.", code="too_many_declared")
        if place.verify_agent_writes != verify:
            place.verify_agent_writes = verify
            place.save(update_fields=["verify_agent_writes"])
        return truth_out(truth, full=False)


def clean_claim(value: Any) -> str:
    if not isinstance(value, str):
        raise Invalid("claim must be text.", code="invalid_claim")
    claim = storable_text(value, what="claim", code="invalid_claim").strip()
    if not claim or len(claim) > NEGATIVE_MAX_CHARS:
        raise Invalid(f"State the false claim (1–{NEGATIVE_MAX_CHARS} characters).",
                      code="invalid_claim")
    return claim


def negative_add(*, actor: Actor, notebook_id: uuid.UUID | str | None = None,
                 claim: str) -> NegativeOut:
    """Add a claim known to be false to a notebook's negative list (or, `notebook_id`
    None, the account's, which applies everywhere). The same claim twice in one place is
    one claim. Its vector is made first, outside the transaction, as recall embeds a
    query; without one, matching against it is lexical alone."""
    actor.require_session()
    claim = clean_claim(claim)
    probe = duplicates.probe_of(claim)
    with tenant(actor):
        place = _place(actor, notebook_id)
        place_id = place.id if place else None
        _lock_place(actor, place_id)
        here = place_filter(NegativeClaim.objects.all(), place_id)
        found = here.filter(claim=claim).first()
        if found is not None:
            return negative_out(found)
        if here.count() >= NEGATIVES_MAX:
            raise Conflict(f"A place holds at most {NEGATIVES_MAX} negative claims.",
                           code="too_many_negatives")
        row = NegativeClaim.objects.create(
            account_id=actor.account_id, notebook_id=place_id, claim=claim,
            profile=probe.profile if probe else "",
            embedding=probe.vector if probe else None)
        return negative_out(row)


def negative_remove(*, actor: Actor, claim_id: uuid.UUID | str) -> None:
    actor.require_session()
    claim_uuid = parse_uuid(claim_id, what="claim id")
    with tenant(actor):
        deleted, _ = NegativeClaim.objects.filter(id=claim_uuid).delete()
        if not deleted:
            raise NotFound("No such negative claim.", code="claim_not_found")


# -- revisions of declared notes, held for the owner -------------------------------------------


def hold(actor: Actor, *, note: Note | None, changes: dict[str, Any],
         operation_id: uuid.UUID, notebook: Notebook | None = None,
         checked: write_check.Checked | None = None) -> PendingRevision:
    """Keep a connection's write for the owner (caller holds the tenant transaction, and
    the note locked when it changes one): nothing lands, readers keep the accepted
    version. A change to a declared note (its verdict comes from the verify job), or a
    write into `notebook` that failed its check (`checked`: its verdict and findings;
    `note` None for a new note, whose fields are the `changes`)."""
    assert actor.connection_id is not None  # the owner's own changes are never held
    stored = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in changes.items()}
    held = PendingRevision.objects.create(
        account_id=actor.account_id, note=note, notebook=notebook,
        origin=PendingOrigin.CHECKED if checked else PendingOrigin.DECLARED,
        base_version=note.version if note is not None else 0, changes=stored,
        connection_id=actor.connection_id, operation_id=operation_id,
        verdict=checked.verdict if checked else Verdict.NEEDS_REVIEW,
        findings=checked.findings if checked else [])
    if checked is None and jobs.is_registered(VERIFY_JOB):  # when a model app is installed
        jobs.enqueue(account_id=actor.account_id, kind=VERIFY_JOB, target_id=held.id)
    return held


def pending_accept(*, actor: Actor, pending_id: uuid.UUID | str) -> NoteOut:
    """Apply a held change as the note's next revision — the connection's change,
    accepted by the owner (who and when recorded on the held change) — or, for a held new
    note, create it. Refused when the note moved on since it was proposed
    (`pending_stale`): the change was made against a version readers no longer get."""
    actor.require_session()
    pending_uuid = parse_uuid(pending_id, what="pending revision id")
    with tenant(actor):
        pending = _open_pending(pending_uuid)
        # The writes are the connection's; the acceptance is the owner's (below).
        author = dataclasses.replace(actor, connection_id=pending.connection_id)
        if pending.note_id is None:
            return _accept_new_note(actor, author, pending)
        note, now = note_to_change(actor, pending.note_id, None)
        if note.version != pending.base_version:
            raise Conflict(f"The note changed since (now v{note.version}, proposed on "
                           f"v{pending.base_version}); reject this change and ask again.",
                           code="pending_stale", currentVersion=note.version)
        before, kind = note.content, note.kind
        apply_changes(note, pending.changes, now)
        save_new_version(note, reason=RevisionReason.UPDATE, actor=author,
                         operation_id=pending.operation_id, now=now)
        index_if_changed(note, content=before, kind=kind)
        _decided(pending, PendingStatus.ACCEPTED, now, note)
        return NoteOut.of(note)


def _accept_new_note(actor: Actor, author: Actor, pending: PendingRevision) -> NoteOut:
    """A held new note, created in its notebook as the connection wrote it."""
    assert pending.notebook_id is not None  # a checked write names its notebook
    notebook = access_notebook(actor, pending.notebook_id)
    require_open_notebook(notebook)
    fields = dict(pending.changes)
    content, kind, task_id = fields.pop("content"), fields.pop("kind"), fields.pop("task_id")
    now = timezone.now()
    note = new_note(author, notebook.id, content=content, kind=kind, task_id=task_id,
                    fields=fields, now=now)
    note.save(force_insert=True)
    record_created(note, actor=author, operation_id=pending.operation_id)
    _decided(pending, PendingStatus.ACCEPTED, now, note)
    return NoteOut.of(note)


def pending_reject(*, actor: Actor, pending_id: uuid.UUID | str) -> None:
    actor.require_session()
    pending_uuid = parse_uuid(pending_id, what="pending revision id")
    with tenant(actor):
        _decided(_open_pending(pending_uuid), PendingStatus.REJECTED, timezone.now())


def _decided(pending: PendingRevision, status: str, now: Any, note: Note | None = None) -> None:
    """Record the owner's decision on a held write: who, when, and the version accepted
    (the note it created, for a held new note)."""
    pending.status, pending.decided_at, pending.decided_by = status, now, "the owner (website)"
    if note is not None:
        pending.note, pending.accepted_version = note, note.version
    pending.save()


def _open_pending(pending_id: uuid.UUID) -> PendingRevision:
    pending = PendingRevision.objects.select_for_update().filter(id=pending_id).first()
    if pending is None:
        raise NotFound("No such pending revision.", code="pending_not_found")
    if pending.status != PendingStatus.PENDING:
        raise Conflict(f"That change was already {pending.status}.", code="pending_decided")
    return pending
