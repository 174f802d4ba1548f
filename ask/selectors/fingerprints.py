"""Proposal fingerprints (SPEC §8): the state a preview was made from, compared again
before an apply or an undo writes anything.

A fingerprint holds every affected note's version (absent: deleted) and, for every
affected notebook, a digest of its own row (name, parent, archived) when notes go into
it or a notebook is made under it, or of its whole subtree (every member notebook's row
and every member note's id and version) when it is the notebook being moved. Reads only:
the caller has locked the rows to rely on it (`ask.services.proposals`).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ask.models import Proposal
from ask.schemas import Changed
from notebooks.models import Note, Notebook, Status
from notebooks.selectors.access import subtree_ids


@dataclass(frozen=True)
class Affected:
    """What a proposal's fingerprint covers."""

    notes: tuple[uuid.UUID, ...]
    notebooks: tuple[uuid.UUID, ...]  # their own row
    subtrees: tuple[uuid.UUID, ...]  # their whole subtree


def affected(instruction: dict[str, Any], made: dict[str, Any] | None = None) -> Affected:
    """What an instruction touches; with `made` (what its apply created), that too."""
    step = instruction["step"]
    notes = [uuid.UUID(i) for i, _ in instruction["notes"]]
    notebooks: list[uuid.UUID] = []
    subtrees: list[uuid.UUID] = []
    if instruction["destination"]:
        notebooks.append(uuid.UUID(instruction["destination"]))
    if step == "move_notebook":
        subtrees.append(uuid.UUID(instruction["subject"]))
    if made:
        notes += [uuid.UUID(i) for i in made.get("notes", [])]
        subtrees += [uuid.UUID(i) for i in made.get("notebooks", [])]
        notebooks += [uuid.UUID(i) for i in made.get("origins", [])]
    return Affected(notes=tuple(sorted(set(notes), key=str)),
                    notebooks=tuple(sorted(set(notebooks), key=str)),
                    subtrees=tuple(sorted(set(subtrees), key=str)))


def _digest(rows: Any) -> str:
    return hashlib.sha256(json.dumps(rows, default=str, sort_keys=True).encode()).hexdigest()


def _row_state(notebook_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, str]:
    rows = Notebook.objects.filter(id__in=list(notebook_ids), deleted_at__isnull=True)\
        .values_list("id", "parent_id", "name", "archived_at")
    return {row[0]: _digest(list(row[1:])) for row in rows}


def _subtree_state(notebook_id: uuid.UUID) -> str | None:
    ids = subtree_ids(notebook_id)
    if not ids:
        return None
    members = sorted(Notebook.objects.filter(id__in=ids)
                     .values_list("id", "parent_id", "name", "archived_at"), key=str)
    notes = sorted(Note.objects.filter(notebook_id__in=ids).exclude(status=Status.DELETED)
                   .values_list("id", "version"), key=str)
    return _digest({"notebooks": members, "notes": notes})


def fingerprint(scope: Affected) -> dict[str, Any]:
    """The state of what `scope` covers now (caller holds a tenant transaction; to
    rely on it, the caller has locked those rows): notes by version (absent: deleted),
    notebooks by a digest of their row or their whole subtree (absent: deleted)."""
    return fingerprints([scope])[0]


def fingerprints(scopes: list[Affected]) -> list[dict[str, Any]]:
    """`fingerprint` of many scopes, read together: one query for every note's version,
    one for every notebook row, and each subtree once — what a page of proposals costs
    does not grow with its proposals."""
    note_ids = {i for scope in scopes for i in scope.notes}
    versions = dict(Note.objects.filter(id__in=note_ids).exclude(status=Status.DELETED)
                    .values_list("id", "version")) if note_ids else {}
    notebook_ids = {i for scope in scopes for i in scope.notebooks}
    rows = _row_state(notebook_ids) if notebook_ids else {}
    trees = {i: _subtree_state(i) for scope in scopes for i in set(scope.subtrees)}
    return [{
        "notes": {str(i): versions.get(i) for i in scope.notes},
        "notebooks": {str(i): rows.get(i) for i in scope.notebooks},
        "subtrees": {str(i): trees[i] for i in scope.subtrees},
    } for scope in scopes]


def changes(expected: dict[str, Any], now: dict[str, Any]) -> list[Changed]:
    """What differs between two fingerprints of the same scope."""
    found = [Changed(what="note", id=uuid.UUID(i), was=v, now=now["notes"].get(i))
             for i, v in expected["notes"].items() if now["notes"].get(i) != v]
    for part in ("notebooks", "subtrees"):
        found += [Changed(what="notebook", id=uuid.UUID(i))
                  for i, v in expected[part].items() if now[part].get(i) != v]
    return found


def covered_by(proposal: Proposal, *, after_apply: bool) -> Affected:
    """What a proposal's fingerprint covers: before apply (the apply's fence), or after
    it (the undo's fence: also what apply made and the notebooks things left)."""
    made = (proposal.applied or {}).get("made") if after_apply else None
    return affected(proposal.change, made)
