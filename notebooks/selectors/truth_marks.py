"""What declared ground truth says about each note a read hands out (SPEC §10, STYLE §15):
`authority` — the note is declared ground truth — and `knownFalse` — the claims known
to be false that it matches. Worked out here once, for every read that returns notes:
recall, library search and lists, a note by id, the `note://` resources and the brief,
over REST and MCP alike — so the same note carries the same marks everywhere.

**Which truth.** A read held to one place's truth (`truth.scoped_truth`: scoped to one
notebook, or by a grant of one notebook) marks every note by that truth: its
declaration and its negatives. A read with no such place (everything granted, several
notebooks, Personal, a note by id) marks each note by the truth of its own place — its
notebook's declaration in effect (its own, or the account's it inherits) and the
negatives there (the account's and its notebook's); a Personal note, by the account's.
A note outside that declaration is not an authority however another notebook ranks it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from grove.embeddings import get_embedder
from grove.embeddings.profile import active_profile_name
from notebooks.models import NegativeClaim, Notebook, TruthDeclaration, TruthNote
from notebooks.schemas.notes import KnownFalse
from notebooks.selectors import negatives
from notebooks.selectors.truth import Truth, applying, in_effect


@dataclass(frozen=True)
class Marks:
    authority: bool = False
    known_false: tuple[KnownFalse, ...] = ()


UNMARKED = Marks()


def active_profile() -> str | None:
    """The embedding profile claims and notes are compared under (None: lexical only)."""
    return active_profile_name() if get_embedder() is not None else None


def truth_marks(notes: Sequence[Any], held_to: Truth, *,
                profile: str | None) -> dict[uuid.UUID, Marks]:
    """The marks of each note (a `Note` or `NoteOut`: its `id` and `notebook_id`) of a
    read held to `held_to` (see the module's docstring). Caller holds a tenant
    transaction; the notes are ones the caller may read."""
    if not notes:
        return {}
    if held_to.notebook is not None:
        declared = held_to.ids
        places: dict[uuid.UUID | None, list[NegativeClaim]] = {None: held_to.negatives}

        def place(note: Any) -> uuid.UUID | None:
            return None
    else:
        declared, places = _by_place({note.notebook_id for note in notes},
                                     [note.id for note in notes])

        def place(note: Any) -> uuid.UUID | None:
            return note.notebook_id
    claims = list({claim.id: claim for found in places.values() for claim in found}.values())
    matched = negatives.notes_matching([note.id for note in notes], claims, profile)
    marks = {}
    for note in notes:
        applies = {claim.id for claim in places[place(note)]}
        known_false = tuple(k for k in matched.get(note.id, []) if k.claim_id in applies)
        authority = note.id in declared if held_to.notebook is not None else (
            (note.notebook_id, note.id) in declared)
        marks[note.id] = Marks(authority=authority, known_false=known_false)
    return marks


def claims_on(note: Any, held_to: Truth) -> list[NegativeClaim]:
    """The claims known to be false that apply to one note (a `Note`) in a read held to
    `held_to` — by the rule above — for marking text of it that has no stored lexemes or
    vector (a past revision: `negatives.texts_matching`). Caller holds a tenant
    transaction."""
    if held_to.notebook is not None:
        return list(held_to.negatives)
    return _by_place({note.notebook_id}, [note.id])[1][note.notebook_id]


def _by_place(place_ids: Iterable[uuid.UUID | None], note_ids: list[uuid.UUID]
              ) -> tuple[set[Any], dict[uuid.UUID | None, list[NegativeClaim]]]:
    """For the places these notes are in: which of the notes each place's declaration
    in effect names — as (place, note id) — and each place's negatives. Two reads when
    nothing is declared, four at most."""
    ids = [p for p in place_ids if p is not None]
    declarations = {d.notebook_id: d for d in TruthDeclaration.objects.filter(
        Q(notebook_id__in=ids) | Q(notebook__isnull=True))}
    declared: set[Any] = set()
    if declarations:
        # A notebook's inherit flag matters only where it has no declaration of its own.
        without = [p for p in ids if p not in declarations] if None in declarations else []
        inherits = set(Notebook.objects.filter(id__in=without, inherit_account_truth=True)
                       .values_list("id", flat=True)) if without else set()
        holding = {p: in_effect(p, p in inherits, declarations)[1] for p in [*ids, None]}
        named = set(TruthNote.objects.filter(
            declaration_id__in=[d.id for d in holding.values() if d is not None],
            note_id__in=note_ids).values_list("declaration_id", "note_id"))
        declared = {(p, note_id) for p, d in holding.items() if d is not None
                    for declaration_id, note_id in named if declaration_id == d.id}
    claims = list(NegativeClaim.objects.filter(Q(notebook_id__in=ids)
                                               | Q(notebook__isnull=True)))
    return declared, {p: applying(p, claims) for p in [*ids, None]}
