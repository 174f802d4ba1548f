"""Checking an agent's write against declared ground truth before it lands (SPEC §10).

Per notebook and off by default (`Notebook.verify_agent_writes`, set by the owner once
the notebook has a declaration in effect and a model is configured): a connection's
`remember` or `update_memory` that brings new text into a fact, decision or solution of
the notebook — new content, or a note becoming one of those kinds — is checked against
the declared set the way a held change to a declared note is (`ask.verification`: the
reference first, the write after it, a verdict computed from per-claim findings).
Supported or unverifiable (something new), it lands. A contradiction is held for the
owner as a pending write instead (`PendingRevision`, origin `checked`) — and so is a
write that could not be checked (the model failed, the declared set is larger than one
check takes, or it changed while the write was checked: fail closed). A connection's
move or restore that would bring such a note into the notebook unchecked is refused
(`writes_checked`): it can write the text with `update_memory`, which is checked.

The reference is the declared notes the **caller may read** — as everywhere, a
declaration never widens a grant: were notes outside it in the reference, whether a
write lands would answer guesses about them. The owner's own writes are never checked;
preferences and handoffs are not held to declared truth (`UNRESTRICTED_KINDS`).

In two steps, because a model call must not hold a transaction open: `check_write` asks
the model before the write's transaction — after the checks that would refuse the write
anyway, so no model call is made for it — and `decide`, inside it, says whether the
write must be held. What the caller is told (`answer`) is the verdict and the declared
notes it contradicts, by id; never a model's words.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.utils import timezone

from grove.kernel import operations
from grove.kernel.actor import READ, WRITE, Actor
from grove.kernel.errors import Conflict, GroveError
from grove.kernel.tenancy import tenant
from notebooks.models import Capture, Note, Notebook, PendingRevision, Verdict
from notebooks.rules import REFERENCE_MAX_NOTES, UNRESTRICTED_KINDS, check_content_fits
from notebooks.schemas.truth import PendingRef
from notebooks.selectors.access import access_note, live_notebooks, notes_visible_to
from notebooks.selectors.truth import is_declared, truth_for
from notebooks.services.frame import expect_version, require_active, require_capture_allowed

Reference = list[tuple[str, str]]  # (note:<id>@<version>, text), the declared set


class Checker(Protocol):
    """What checks text against a reference: `ask.verification.WriteChecker`."""

    def configured(self) -> bool: ...

    def __call__(self, actor: Actor, reference: Reference, subject: str, text: str,
                 current: tuple[str, str] | None = None) -> tuple[str, list[dict[str, Any]]]:
        """The verdict and findings for the caller's write (`current`: the note it
        revises as it stands — context, not ground truth; `actor`: whose model call it
        is — the checker may refuse it, e.g. over the caller's model-call budget, and
        then the write is refused with it)."""
        ...


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


def brings_news(note: Note | None, kind: str, content: str) -> bool:
    """Whether a write brings text the notebook has not checked into a checked kind: a
    new note, new content, or a note becoming a fact, decision or solution."""
    if not checks(kind):
        return False
    return note is None or content != note.content or not checks(note.kind)


def checking(actor: Actor, notebook: Notebook | None) -> bool:
    return (actor.connection_id is not None and notebook is not None
            and notebook.verify_agent_writes)


def reference_for(actor: Actor, notebook: Notebook,
                  note: Note | None) -> tuple[Reference, bool]:
    """The declared notes in effect in the notebook (its own, or the account's it
    inherits) that the caller may read — never the note being changed, which is
    context (`current_of`), not ground truth — and whether that is all of them (at most
    `REFERENCE_MAX_NOTES` go in a check). Empty: nothing (readable) is declared. Caller
    holds a tenant transaction."""
    truth = truth_for(actor, notebook)
    declared = [n for n, _ in truth.notes if note is None or n.id != note.id]
    return ([(n.versioned_id, n.content) for n in declared[:REFERENCE_MAX_NOTES]],
            len(declared) <= REFERENCE_MAX_NOTES)


def current_of(note: Note | None) -> tuple[str, str] | None:
    """The note a correction changes, as it stands: shown to the check beside the
    reference, never in it."""
    return (note.versioned_id, note.content) if note is not None else None


def fingerprint(reference: Reference, note: Note | None) -> tuple[str, ...]:
    """What a check was made against: the declared set, and the head of the note it
    revises."""
    return tuple(cite for cite, _ in reference) + ((note.versioned_id,) if note else ())


def check_write(actor: Actor, *, operation_id: uuid.UUID, notebook_id: uuid.UUID | None,
                note_id: uuid.UUID | None, kind: str | None, content: str | None,
                capture: str | None = None,
                expected_version: int | None = None) -> Checked | None:
    """Before the write's transaction: check a connection's write when its notebook asks
    for it. None: not checked — the owner's, nothing new (`brings_news`), a notebook
    that does not check, nothing declared, a replay, or a write that will be refused
    anyway (outside the grant, archived, paused capture, a stale expected version, a
    note not active), which the write then says. `note_id` names the note a correction
    changes (its notebook, kind and content come from it unless given). Raises what the
    checker refuses with (RateLimited: the caller's model-call budget is spent), before
    anything is written."""
    if actor.connection_id is None or WRITE not in actor.capabilities:
        return None
    with tenant(actor):
        if operations.seen(actor, operation_id):
            return None  # the frame replays it (or refuses a different request)
        note = None
        try:  # the write's own refusals, by the write's own rules
            if note_id is not None:
                note = access_note(actor, note_id, need=WRITE)
                expect_version(note, expected_version)
                require_active(note, timezone.now())
            else:
                require_capture_allowed(actor, capture or Capture.EXPLICIT)
        except GroveError:
            return None  # the write says why
        if note is not None:
            if is_declared(note.id):
                return None  # a declared note's change is held anyway
            notebook_id, kind = note.notebook_id, kind or note.kind
            content = note.content if content is None else content
        try:
            if kind is not None and content is not None:
                check_content_fits(content, kind)  # too long for its kind: refused
        except GroveError:
            return None  # the write says why
        if notebook_id is None or kind is None or content is None \
                or not brings_news(note, kind, content):
            return None
        notebook = live_notebooks(actor).filter(id=notebook_id).first()
        if not checking(actor, notebook):
            return None
        assert notebook is not None
        reference, complete = reference_for(actor, notebook, note)
    if not reference:
        return None
    subject = f"revision of {note.versioned_id}" if note is not None else "new note"
    if not complete or not available():
        return Checked(verdict=Verdict.NEEDS_REVIEW, fingerprint=fingerprint(reference, note))
    verdict, findings = _checkers[0](actor, reference, subject, content, current_of(note))
    return Checked(verdict=verdict, findings=findings,
                   fingerprint=fingerprint(reference, note))


def decide(actor: Actor, notebook: Notebook | None, note: Note | None, kind: str,
           content: str, checked: Checked | None) -> Checked | None:
    """In the write's transaction, before anything changes: the check that holds this
    write, or None to let it land. A write the notebook checks that was not checked
    against the declared set as it stands now (checking turned on meanwhile, the set
    changed) is held as needing review."""
    if not checking(actor, notebook) or not brings_news(note, kind, content):
        return None
    assert notebook is not None
    reference, complete = reference_for(actor, notebook, note)
    if not reference:
        return None
    if checked is None or not complete or \
            checked.fingerprint != fingerprint(reference, note):
        return Checked(verdict=Verdict.NEEDS_REVIEW, fingerprint=fingerprint(reference, note))
    return None if checked.lands else checked


def refuse_unchecked(actor: Actor, note: Note) -> None:
    """A connection's move or restore that would put a fact, decision or solution into
    a notebook that checks writes without the check: refused (`writes_checked`). Caller
    holds the tenant transaction, the note changed in memory (its new place and kind)."""
    if actor.connection_id is None or note.notebook_id is None or not checks(note.kind):
        return
    notebook = Notebook.objects.filter(id=note.notebook_id).first()
    if notebook is None or not checking(actor, notebook):
        return
    if reference_for(actor, notebook, None)[0]:
        raise Conflict("That notebook checks agents' writes against its ground truth: "
                       "write the text with update_memory or remember, which are "
                       "checked, or ask the owner.", code="writes_checked")


def answer(actor: Actor, held: PendingRevision) -> PendingRef:
    """What the caller is told of its held write: the verdict, and the declared notes
    the check found it contradicts — those it may read, by id; nothing at all without
    the read capability."""
    contradicted = _contradicted(actor, held.findings) if READ in actor.capabilities else []
    return PendingRef(id=held.id, verdict=held.verdict, contradicts=contradicted)


def _contradicted(actor: Actor, findings: Sequence[dict[str, Any]]) -> list[str]:
    cited: dict[uuid.UUID, str] = {}
    for finding in findings:
        cite = str(finding.get("note_id") or "")
        if finding.get("finding") != "contradicts" or not cite.startswith("note:"):
            continue
        try:
            cited.setdefault(uuid.UUID(cite[5:].partition("@")[0]), cite)
        except ValueError:
            continue
    readable = set(notes_visible_to(actor).filter(id__in=cited).values_list("id", flat=True))
    return [cite for note_id, cite in cited.items() if note_id in readable]


def still_readable(actor: Actor, held: PendingRef | None) -> PendingRef | None:
    """A replayed answer names only the declared notes the caller may still read
    (grants can narrow). Caller holds a tenant transaction."""
    if held is None or not held.contradicts:
        return held
    ids = {uuid.UUID(c[5:].partition("@")[0]): c for c in held.contradicts}
    readable = set(notes_visible_to(actor).filter(id__in=ids).values_list("id", flat=True)) \
        if READ in actor.capabilities else set()
    return held.model_copy(update={"contradicts": [c for i, c in ids.items() if i in readable]})
