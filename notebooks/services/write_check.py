"""Checking an agent's write against declared ground truth before it lands (SPEC §10).

Per notebook and off by default (`Notebook.verify_agent_writes`, set by the owner once
the notebook has a declaration in effect and a model is configured): a connection's
`remember` or `update_memory` of a fact, decision or solution into the notebook, whose
text is new, is checked against the declared set the way a held change to a declared
note is (`ask.verification`: the reference first, the write after it, a verdict computed
from per-claim findings). Supported or unverifiable (something new), it lands. A
contradiction is held for the owner as a pending write instead (`PendingRevision`,
origin `checked`) — and so is a write that could not be checked (the model failed:
fail closed). The owner's own writes are never checked; preferences and handoffs are not
held to declared truth (`UNRESTRICTED_KINDS`).

In two steps, because a model call must not hold a transaction open: `check_write` asks
the model before the write's transaction, and `decide`, inside it, holds the write when
the check failed — or when the declared set it was checked against changed meanwhile (a
fingerprint of the reference's versioned ids), rather than land it unchecked.

The model comes from the app that can ask one (`ask` provides its checker at start).
What the caller is told is only the verdict and the contradicted declared notes it may
read itself: a model's words about notes outside its grant never reach it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from grove.kernel import operations
from grove.kernel.actor import WRITE, Actor
from grove.kernel.tenancy import tenant
from notebooks.models import Note, Notebook, PendingOrigin, PendingRevision, Verdict
from notebooks.rules import REFERENCE_MAX_NOTES, UNRESTRICTED_KINDS
from notebooks.schemas.truth import PendingRef
from notebooks.selectors.access import notebooks_visible_to, notes_live, notes_visible_to
from notebooks.selectors.truth import is_declared, truth_for

Reference = list[tuple[str, str]]  # (note:<id>@<version>, text), the declared set


class Checker(Protocol):
    """What checks text against a reference: `ask.verification.WriteChecker`."""

    def configured(self) -> bool: ...

    def __call__(self, reference: Reference, subject: str,
                 text: str) -> tuple[str, list[dict[str, Any]]]: ...


_checkers: list[Checker] = []


def provide(checker: Checker) -> None:
    """Install the checker (once, at start, by the app that can ask a model)."""
    _checkers[:] = [checker]


def available() -> bool:
    """Whether writes can be checked here at all: a checker, with a model configured."""
    return bool(_checkers) and _checkers[0].configured()


@dataclass(frozen=True)
class Checked:
    """One write's check: the verdict, the model's per-claim findings, and the declared
    set it was checked against (`fingerprint`)."""

    verdict: str
    findings: list[dict[str, Any]] = field(default_factory=list)
    fingerprint: tuple[str, ...] = ()

    @property
    def lands(self) -> bool:
        return self.verdict in (Verdict.SUPPORTED, Verdict.UNVERIFIABLE)


def checks(kind: str) -> bool:
    return kind not in UNRESTRICTED_KINDS


def reference_for(actor: Actor, notebook: Notebook, note: Note | None) -> Reference:
    """The declared set in effect in the notebook (its own, or the account's it
    inherits) — every live declared note, whatever the caller's grant: the check is
    Grove's — with the note being changed, at its current head, first. Empty: nothing is
    declared, nothing to check against. Caller holds a tenant transaction."""
    truth = truth_for(Actor.system(actor.account_id), notebook)
    if truth.declaration is None:
        return []
    declared = [n for n, _ in truth.notes if note is None or n.id != note.id]
    head = [note] if note is not None else []
    return [(n.versioned_id, n.content) for n in [*head, *declared][:REFERENCE_MAX_NOTES]]


def fingerprint(reference: Reference) -> tuple[str, ...]:
    return tuple(cite for cite, _ in reference)


def check_write(actor: Actor, *, operation_id: uuid.UUID, notebook_id: uuid.UUID | None,
                note_id: uuid.UUID | None, kind: str | None, content: str) -> Checked | None:
    """Before the write's transaction: check a connection's write when its notebook asks
    for it (None: not checked — the owner's, a kind not held to truth, a notebook that
    does not check, nothing declared, or a replay of an operation already done).
    `note_id` names the note a correction changes (its notebook and kind come from it,
    `kind` then being the new kind if any)."""
    if actor.connection_id is None or WRITE not in actor.capabilities:
        return None  # the owner's; or refused by the write itself, before any model call
    with tenant(actor):
        if operations.seen(actor, operation_id):
            return None  # the frame replays it (or refuses a different request)
        note = None
        if note_id is not None:
            note = notes_visible_to(actor).filter(id=note_id).first()
            if note is None or note.content == content or is_declared(note.id):
                # Not found: the write says so. Declared: its change is held anyway.
                return None
            notebook_id, kind = note.notebook_id, kind or note.kind
        elif notebook_id is not None and not notebooks_visible_to(actor).filter(
                id=notebook_id).exists():
            return None  # outside the grant: the write says so, and no model is asked
        if notebook_id is None or kind is None or not checks(kind):
            return None
        notebook = Notebook.objects.filter(id=notebook_id, deleted_at__isnull=True).first()
        if notebook is None or not notebook.verify_agent_writes:
            return None
        reference = reference_for(actor, notebook, note)
    if not reference:
        return None
    subject = f"revision of {note.versioned_id}" if note is not None else "new note"
    if not available():
        return Checked(verdict=Verdict.NEEDS_REVIEW, fingerprint=fingerprint(reference))
    verdict, findings = _checkers[0](reference, subject, content)
    return Checked(verdict=verdict, findings=findings, fingerprint=fingerprint(reference))


def decide(actor: Actor, notebook: Notebook | None, note: Note | None, kind: str,
           checked: Checked | None) -> Checked | None:
    """In the write's transaction: the check that holds this write, or None to let it
    land. A write the notebook now checks but that was not checked against the declared
    set as it stands (turned on meanwhile, the set changed) is held as needing review."""
    if actor.connection_id is None or notebook is None or not checks(kind):
        return None
    if not notebook.verify_agent_writes:
        return None
    reference = reference_for(actor, notebook, note)
    if not reference:
        return None
    if checked is None or checked.fingerprint != fingerprint(reference):
        return Checked(verdict=Verdict.NEEDS_REVIEW, fingerprint=fingerprint(reference))
    return None if checked.lands else checked


def hold_write(actor: Actor, notebook: Notebook, note: Note | None, changes: dict[str, Any],
               checked: Checked, operation_id: uuid.UUID) -> PendingRef:
    """Keep a write that failed its check for the owner (caller holds the tenant
    transaction, and the note locked when it changes one): nothing lands."""
    assert actor.connection_id is not None
    stored = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in changes.items()}
    held = PendingRevision.objects.create(
        account_id=actor.account_id, origin=PendingOrigin.CHECKED, note=note,
        notebook=notebook, base_version=note.version if note is not None else 0,
        changes=stored, connection_id=actor.connection_id, operation_id=operation_id,
        verdict=checked.verdict, findings=checked.findings)
    return PendingRef(id=held.id, verdict=checked.verdict,
                      contradicts=_readable_contradicted(actor, checked.findings))


def _readable_contradicted(actor: Actor, findings: Sequence[dict[str, Any]]) -> list[str]:
    """The declared notes (note:<id>@<version>) a finding says the write contradicts,
    those the caller may read only."""
    cited: dict[uuid.UUID, str] = {}
    for finding in findings:
        cite = str(finding.get("note_id") or "")
        if finding.get("finding") != "contradicts" or not cite.startswith("note:"):
            continue
        try:
            cited.setdefault(uuid.UUID(cite[5:].partition("@")[0]), cite)
        except ValueError:
            continue
    readable = set(notes_live(actor).filter(id__in=cited).values_list("id", flat=True))
    return [cite for note_id, cite in cited.items() if note_id in readable]
