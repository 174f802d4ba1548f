"""Ground truth (SPEC §10): which notes a place declares authoritative, and which claims
are known to be false there.

A notebook's own declaration replaces the account's; it inherits the account's only
when its `inherit_account_truth` flag is set. Negatives union: the account's always
apply, a notebook's add to them. Declared notes are read at their current accepted
version (declarations follow revisions forward) and only where the caller may read them:
a declaration never widens a grant — what it may not read is counted as `withheld`.

Every read here is a traversal, not a ranking: no query, no score.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from django.db.models import Q

from grove.kernel.actor import READ, Actor
from grove.kernel.tenancy import tenant
from notebooks.models import NegativeClaim, Note, Notebook, TruthDeclaration, TruthNote
from notebooks.rules import EVERYWHERE, clean_bool, notebook_paths, parse_uuid
from notebooks.schemas.briefs import BriefTruth, BriefTruthNote, ToolTruth
from notebooks.schemas.truth import (
    NegativeOut,
    Policy,
    TruthManifest,
    TruthNoteOut,
    TruthOut,
    TruthState,
)
from notebooks.selectors.access import (
    Scope,
    access_notebook,
    live_notebooks,
    notebooks_visible_to,
    notes_live,
    resolve_scope,
)
from notebooks.selectors.passage_rank import Digest, QueryArms, digests_of

MANIFEST_LINE_CHARS = 160
MANIFEST_HEADINGS = 12
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class Truth:
    """The ground truth that applies to one place, for one caller."""

    state: TruthState
    policy: Policy | None
    notebook: Notebook | None  # the place (None: the account)
    declaration: TruthDeclaration | None
    notes: list[tuple[Note, int]] = field(default_factory=list)  # (note, declared_version)
    withheld: int = 0
    negatives: list[NegativeClaim] = field(default_factory=list)

    @property
    def ids(self) -> set[uuid.UUID]:
        return {note.id for note, _ in self.notes}

    @property
    def restricts(self) -> bool:
        return self.policy == "restrict"


def truth_for(actor: Actor, notebook: Notebook | None) -> Truth:
    """The truth that applies to `notebook` (None: the account's own), as `actor` may
    read it. Caller holds a tenant transaction and has checked access to the place."""
    declarations = {d.notebook_id: d for d in TruthDeclaration.objects.filter(
        notebook_id__in=[notebook.id] if notebook else []) | TruthDeclaration.objects.filter(
        notebook__isnull=True)}
    state, declaration = in_effect(notebook.id if notebook else None,
                                   bool(notebook and notebook.inherit_account_truth),
                                   declarations)
    negatives = applying(notebook.id if notebook else None, NegativeClaim.objects.filter(
        notebook_id__in=[notebook.id] if notebook else []) | NegativeClaim.objects.filter(
        notebook__isnull=True))
    if declaration is None:
        return Truth(state="none", policy=None, notebook=notebook, declaration=None,
                     negatives=negatives)
    entries = list(TruthNote.objects.filter(declaration=declaration).order_by("position"))
    readable = {n.id: n for n in notes_live(actor).filter(
        id__in=[e.note_id for e in entries])}
    notes = [(readable[e.note_id], e.declared_version) for e in entries
             if e.note_id in readable]
    return Truth(state=state, policy=cast(Policy, declaration.policy), notebook=notebook,
                 declaration=declaration, notes=notes, withheld=len(entries) - len(notes),
                 negatives=negatives)


def in_effect(place: uuid.UUID | None, inherits: bool,
              declarations: dict[uuid.UUID | None, TruthDeclaration]
              ) -> tuple[TruthState, TruthDeclaration | None]:
    """Which declaration holds in a place (a notebook id; None: the account), among the
    account's (`declarations` by place): its own; else, for a notebook that `inherits`
    (its `inherit_account_truth`), the account's; else none."""
    own = declarations.get(place)
    if own is not None:
        return "own", own
    if place is not None and inherits and None in declarations:
        return "inherited", declarations[None]
    return "none", None


def applying(place: uuid.UUID | None, claims: Any) -> list[NegativeClaim]:
    """The claims known to be false in a place (None: the account): the account's,
    which apply everywhere, then the place's own — each in the order they were added."""
    found = [c for c in claims if c.notebook_id is None or c.notebook_id == place]
    return sorted(found, key=lambda n: (n.notebook_id is not None, n.created_at, str(n.id)))


def truth_place(scope: Scope) -> Notebook | None:
    """The one notebook a read is scoped to, whose truth applies to it — named alone
    (`notebookIds: [id]`), or, with everything granted, the only notebook the caller's
    grant holds. None when the read spans several notebooks (no one declaration
    applies). Caller holds a tenant transaction."""
    if scope.notebook_ids is not None:
        ids = set(scope.notebook_ids)
    elif not scope.actor.grant.all_notebooks:
        ids = set(scope.actor.grant.notebooks)
    else:
        return None
    if len(ids) != 1:
        return None
    if scope.notebook is not None:
        return scope.notebook
    return Notebook.objects.filter(id=ids.pop(), deleted_at__isnull=True).first()


def scoped_truth(scope: Scope) -> Truth:
    """The truth a read over `scope` is held to: its notebook's when it has one
    (`truth_place`); across several notebooks no declaration applies, but the account's
    negatives still do."""
    place = truth_place(scope)
    if place is not None:
        return truth_for(scope.actor, place)
    return Truth(state="none", policy=None, notebook=None, declaration=None,
                 negatives=list(NegativeClaim.objects.filter(notebook__isnull=True)
                                .order_by("created_at", "id")))


def known_false(actor: Actor, place: Any = EVERYWHERE, *,
                include_personal: bool = True) -> list[NegativeClaim]:
    """The claims known to be false anywhere in a read's scope (`resolve_scope`), in
    their own transaction — for Ask, which gives them to the model and checks its
    answer. Held to one place (`truth_place`), that place's negatives; otherwise the
    account's and those of every notebook in scope: a question over everything is held
    to what the owner marked false in any notebook it may read from."""
    with tenant(actor):
        scope = resolve_scope(actor, place, include_personal=include_personal)
        if truth_place(scope) is not None:
            return scoped_truth(scope).negatives
        places = (list(scope.notebook_ids) if scope.notebook_ids is not None
                  else notebooks_visible_to(actor).values("id"))
        return list(NegativeClaim.objects.filter(Q(notebook__isnull=True)
                                                 | Q(notebook_id__in=places))
                    .order_by("created_at", "id"))


def declared_extra(actor: Actor, target: Any) -> dict[str, Any]:
    """The note page's ground-truth badge (a page extra, read in the page's transaction):
    where the note is declared, and how many agents' changes to it wait for the owner."""
    if not isinstance(target, Note) or not actor.is_session:
        return {}
    places = list(TruthNote.objects.filter(note_id=target.id)
                  .values_list("declaration__notebook__name", flat=True))
    if not places:
        return {}
    from notebooks.models import PendingRevision, PendingStatus

    held = PendingRevision.objects.filter(note_id=target.id,
                                          status=PendingStatus.PENDING).count()
    return {"declared_in": sorted(name or "the account" for name in places),
            "held_changes": held}


def is_declared(note_id: uuid.UUID) -> bool:
    """Whether any declaration of the account (a notebook's or its own) names the note.
    Caller holds a tenant transaction."""
    return TruthNote.objects.filter(note_id=note_id).exists()


def manifest_of(content: str) -> TruthManifest:
    lines = [line.strip() for line in content.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    heading = _HEADING.match(first)
    first = heading.group(1) if heading else first
    if len(first) > MANIFEST_LINE_CHARS:
        first = first[:MANIFEST_LINE_CHARS - 1].rstrip() + "…"
    headings = [m.group(1)[:MANIFEST_LINE_CHARS] for m in map(_HEADING.match, lines[1:]) if m]
    return TruthManifest(first_line=first, headings=headings[:MANIFEST_HEADINGS])


def truth_out(truth: Truth, *, full: bool) -> TruthOut:
    return TruthOut(
        state=truth.state, policy=truth.policy,
        notebook_id=truth.notebook.id if truth.notebook else None,
        inherit_account_truth=truth.notebook.inherit_account_truth if truth.notebook else None,
        verify_agent_writes=truth.notebook.verify_agent_writes if truth.notebook else None,
        declared_at=truth.declaration.declared_at if truth.declaration else None,
        notes=[TruthNoteOut(id=note.id, versioned_id=note.versioned_id,
                            declared_version=declared, version=note.version, kind=note.kind,
                            notebook_id=note.notebook_id, updated_at=note.updated_at,
                            manifest=manifest_of(note.content),
                            content=note.content if full else None)
               for note, declared in truth.notes],
        withheld=truth.withheld,
        negatives=[negative_out(n) for n in truth.negatives])


def negative_out(claim: NegativeClaim) -> NegativeOut:
    return NegativeOut(id=claim.id, claim=claim.claim, notebook_id=claim.notebook_id,
                       created_at=claim.created_at)


def agent_truth(truth: Truth, names: Mapping[uuid.UUID, str], *, full: bool,
                digests: Mapping[uuid.UUID, Digest] | None = None) -> BriefTruth:
    """The truth as agents read it — in the brief and from the `truth` tool: each declared
    note by its current versioned id, first line and headings (or in `full`), its
    notebook by name; the negatives as claims. A long document (`digests`) says how many
    passages it has, and in `full` is its digest — the passages that matter, under
    budget — not its whole text (issue 37)."""
    digests = digests or {}
    notes = []
    for note, declared in truth.notes:
        manifest = manifest_of(note.content)
        line = manifest.first_line + (f" (sections: {' · '.join(manifest.headings)})"
                                      if manifest.headings else "")
        digest = digests.get(note.id)
        if digest is not None:
            line += f" — a document in {digest.passages} passages"
        notes.append(BriefTruthNote(
            id=note.versioned_id, declared_version=declared, kind=note.kind,
            notebook=(names.get(note.notebook_id, "(a notebook you cannot see)")
                      if note.notebook_id else None),
            line=line, content=(None if not full else digest.text if digest is not None
                                else note.content)))
    return BriefTruth(state=truth.state, policy=truth.policy, notes=notes,
                      withheld=truth.withheld, negatives=[n.claim for n in truth.negatives])


def truth_for_agent(*, actor: Actor, notebook_id: uuid.UUID | str | None = None,
                    full: Any = False) -> ToolTruth:
    """`truth_get` as the `truth` tool answers it (`agent_truth`), and whether agents'
    writes there are checked against it."""
    full = clean_bool(full, what="full")
    notebook_uuid = None if notebook_id is None else parse_uuid(notebook_id,
                                                                what="notebook id")
    actor.require(READ)
    with tenant(actor):
        notebook = None if notebook_uuid is None else access_notebook(actor, notebook_uuid)
        names = notebook_paths(live_notebooks(actor))
        truth = truth_for(actor, notebook)
        digests = digests_of([note for note, _ in truth.notes], QueryArms(None),
                             matched_words="")
        found = agent_truth(truth, names, full=full, digests=digests)
    checked = notebook is not None and notebook.verify_agent_writes
    return ToolTruth(**dict(found), checked=True if checked else None)


def truth_get(*, actor: Actor, notebook_id: uuid.UUID | str | None = None,
              full: Any = False) -> TruthOut:
    """The declared truth of a notebook (or, `notebook_id` None, of the account): which
    of three states holds (own, inherited, none), its policy, the declared notes — a
    manifest of first lines and headings, or `full` text — and the negatives."""
    full = clean_bool(full, what="full")
    notebook_uuid = None if notebook_id is None else parse_uuid(notebook_id,
                                                                what="notebook id")
    actor.require(READ)
    with tenant(actor):
        notebook = None if notebook_uuid is None else access_notebook(actor, notebook_uuid)
        return truth_out(truth_for(actor, notebook), full=full)
