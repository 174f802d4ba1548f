"""Proposals (SPEC §8): what an answer proposes to change, checked before it is stored;
its preview; its fingerprint; and, on every read, whether it can still be applied or
undone.

* **Checked against what the model was shown** (`plan`): every note a proposal names
  must be one of the note revisions the model was sent, by its exact versioned id, and
  writable under the conversation's grant; every notebook must be one it was listed.
  An edit or a merge may only rewrite a note the model saw whole — or, for a long note
  (issue 37), one passage of it the model was sent whole, named by its passage id
  (`note:<uuid>@<version>#<n>`): that passage's span of the note's text is replaced by
  the proposal's content (its surrounding whitespace kept) and the rest of the note is
  left as it is. Anything else is dropped with a reason and counted, never shown.
* **The preview** names the exact notes and versions, diffs each content change (from
  the version shown to the model), gives full subtree counts for notebooks, and says
  what undo will do — or that a delete has none.
* **The fingerprint** is the state the preview was made from: every affected note's
  version, and every affected notebook's state — its own row (name, parent, archived)
  when notes go into it or a notebook is made under it, its whole subtree (every member
  notebook and every member note's version) when it is the notebook being moved.
  `ask.services.proposals` recomputes it under row locks before it writes anything.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone
from pydantic import ValidationError

from ask import providers
from ask.rules import NOTEBOOKS_SHOWN_MAX, PROPOSAL_SUMMARY_MAX_CHARS, PROPOSALS_MAX
from ask.schemas import (
    DiffRow,
    Preview,
    PreviewDiff,
    PreviewNote,
    PreviewNotebook,
    ProposedChange,
)
from ask.selectors.fingerprints import (
    affected,
    fingerprint,
)
from grove.interfaces.diffs import revision_diff
from grove.interfaces.rendering import note_title
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import Forbidden, GroveError
from grove.kernel.tenancy import tenant
from notebooks.models import Kind, Note, Notebook, Status
from notebooks.rules import (
    EVERYWHERE,
    clean_content,
    clean_name,
    note_is_live,
    notebook_paths,
)
from notebooks.schemas.notes import NoteOut
from notebooks.selectors.access import (
    ancestor_ids,
    live_notebooks,
    notebooks_visible_to,
    notes_visible_to,
    require_parent_granted,
    resolve_scope,
    subtree_ids,
)
from passages.rules import pieces

PERSONAL = "Personal"
TOP_LEVEL = "(top level)"


# -- what the model was shown ------------------------------------------------------------------


@dataclass(frozen=True)
class Shown:
    """What one answer's model call was sent: the note revisions (by versioned id), the
    text of each as sent (perhaps cut), and the notebooks listed as places."""

    notes: dict[str, NoteOut]
    sent: dict[str, str]
    places: dict[uuid.UUID, str]  # notebook id → the path shown
    personal: bool  # Personal offered as a destination (granted)
    # A tidy-up's groups (typed ids): then only merges and edits within one group.
    groups: tuple[frozenset[str], ...] | None = None


def places_for(actor: Actor, scope: Any = EVERYWHERE, *,
               only: Iterable[uuid.UUID] | None = None) -> list[providers.Place]:
    """The live notebooks to list to the model as places it may organise into (at most
    NOTEBOOKS_SHOWN_MAX, by path) — within the question's scope: every granted notebook
    (EVERYWHERE), none (None: Personal only), or one notebook's subtree as far as the
    caller is granted; `only`: just these (a strict source selection names its
    notebooks)."""
    with tenant(actor):
        within = resolve_scope(actor, scope, subtree=True)
        paths = notebook_paths(live_notebooks(actor))
    wanted = None if within.everywhere else set(within.notebook_ids or ())
    if only is not None:
        wanted = set(only) if wanted is None else set(only) & wanted
    listed = sorted((p, i) for i, p in paths.items() if wanted is None or i in wanted)
    return [providers.Place(cite_as=f"notebook:{i}", path=p)
            for p, i in listed[:NOTEBOOKS_SHOWN_MAX]]


def shown_of(actor: Actor, notes: list[NoteOut], evidence: list[providers.Evidence],
             places: list[providers.Place], groups: list[list[str]] | None = None) -> Shown:
    return Shown(groups=None if groups is None else tuple(frozenset(g) for g in groups),
                 notes={n.versioned_id: n for n in notes},
                 sent={e.cite_as: e.content for e in evidence},
                 places={uuid.UUID(p.cite_as.split(":", 1)[1]): p.path for p in places},
                 personal=actor.grant.personal)


# -- checking ----------------------------------------------------------------------------------


class _Drop(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Planned:
    """A proposal that passed every check: what to store."""

    change: ProposedChange
    instruction: dict[str, Any]  # what apply does (ids, content, destinations)
    fingerprint: dict[str, Any]


@dataclass(frozen=True)
class Dropped:
    kind: str
    summary: str
    reason: str


@dataclass
class _Plan:
    """A proposal being checked: what it acts on, as read under the caller's grant."""

    kind: str
    action: str | None
    summary: str
    notes: list[Note] = field(default_factory=list)
    content: str | None = None
    note_kind: str | None = None
    destination: uuid.UUID | None = None  # create, move_notes; the parent for notebooks
    subject: uuid.UUID | None = None  # move_notebook
    name: str | None = None  # create_notebook
    part: tuple[str, int] | None = None  # an edit of one passage: (note id, position)


def _passage_cited(step: str, cited: list[str],
                   shown: Shown) -> tuple[str, int] | None:
    """(the note's versioned id, the passage's position) when the draft names a passage
    (`…#<n>`): only an edit of that one passage, which the model must have been sent."""
    if not any("#" in c for c in cited):
        return None
    if step != "edit" or len(cited) != 1:
        raise _Drop("malformed")
    note, _, position = cited[0].partition("#")
    if cited[0] not in shown.sent or note not in shown.notes or not position.isdigit():
        raise _Drop("unseen_note")
    return note, int(position)


def _with_passage(note: Note, position: int, sent: str | None, text: str) -> str:
    """The note's text with passage `position` — which must read as the model was sent
    it — replaced by `text`, the passage's surrounding whitespace kept."""
    cut = pieces(note.kind, note.content)
    if not 1 <= position <= len(cut) or cut[position - 1].text != sent:
        raise _Drop("note_changed")
    piece = cut[position - 1]
    old = note.content[piece.start:piece.end]
    lead = old[:len(old) - len(old.lstrip())]
    tail = old[len(old.rstrip()):]
    return note.content[:piece.start] + lead + text + tail + note.content[piece.end:]


_COUNTS = {"edit": (1, 1), "merge": (2, None), "archive": (1, None), "restore": (1, None),
           "delete": (1, None), "move_notes": (1, None), "create": (0, 0),
           "create_notebook": (0, 0), "move_notebook": (0, 0)}


def _notebook_ref(actor: Actor, value: str | None, shown: Shown, *,
                  none_word: str) -> uuid.UUID | None:
    """A notebook the model names: one it was listed and that is still live for the
    caller now (the model call takes a while), or `none_word` (personal / root)."""
    if value is None:
        raise _Drop("malformed")
    if value.strip().lower() == none_word:
        if none_word == "personal" and not shown.personal:
            raise _Drop("outside_grant")
        return None
    raw = value.removeprefix("notebook:")
    try:
        notebook_id = uuid.UUID(raw)
    except ValueError:
        raise _Drop("unseen_notebook") from None
    if notebook_id not in shown.places:
        raise _Drop("unseen_notebook")
    if not live_notebooks(actor).filter(id=notebook_id).exists():
        raise _Drop("not_applicable")  # archived or deleted since it was listed
    return notebook_id


def _check(actor: Actor, draft: providers.DraftProposal, shown: Shown) -> _Plan:
    """The draft as a plan, or _Drop (caller holds a tenant transaction)."""
    kind, action = draft.kind, draft.action
    if (kind == "organise") != (action is not None):
        raise _Drop("malformed")
    step = action or kind
    cited = list(dict.fromkeys(draft.notes))
    least, most = _COUNTS[step]
    if len(cited) != len(draft.notes) or len(cited) < least \
            or (most is not None and len(cited) > most):
        raise _Drop("malformed")
    plan = _Plan(kind=kind, action=action, summary=_summary(draft.summary))
    part = _passage_cited(step, cited, shown)
    if part is not None:
        plan.part = part
        cited = [part[0]]
    if any(c not in shown.notes for c in cited):
        raise _Drop("unseen_note")
    if shown.groups is not None:  # a tidy-up: merges and edits within one group
        if step not in ("merge", "edit"):
            raise _Drop("not_applicable")
        if not any(set(cited) <= group for group in shown.groups):
            raise _Drop("outside_group")
    if WRITE not in actor.capabilities:  # every proposal writes
        raise _Drop("outside_grant")
    if cited:
        ids = [shown.notes[c].id for c in cited]
        found = {n.id: n for n in notes_visible_to(actor).filter(id__in=ids)}
        if len(found) != len(ids):
            raise _Drop("outside_grant")
        plan.notes = [found[i] for i in ids]
        if any(n.version != shown.notes[c].version for n, c in zip(plan.notes, cited,
                                                                   strict=True)):
            raise _Drop("note_changed")  # changed between the evidence and the answer
    try:
        if draft.content is not None:
            plan.content = clean_content(draft.content)
        if draft.name is not None:
            plan.name = clean_name(draft.name)
    except GroveError:
        raise _Drop("malformed") from None
    plan.note_kind = draft.note_kind
    _check_step(actor, plan, step, draft, shown, cited)
    return plan


def _check_step(actor: Actor, plan: _Plan, step: str, draft: providers.DraftProposal,
                shown: Shown, cited: list[str]) -> None:
    live = [note_is_live(n, timezone.now()) for n in plan.notes]
    if step in ("edit", "merge"):
        if not all(live):
            raise _Drop("not_applicable")
        if plan.part is not None:  # one passage of a long note: spliced into the rest
            if plan.content is None:
                raise _Drop("malformed")  # a kind change is for the whole note
            note_id, position = plan.part
            spliced = _with_passage(plan.notes[0], position,
                                    shown.sent.get(f"{note_id}#{position}"), plan.content)
            try:
                plan.content = clean_content(spliced, kind=plan.notes[0].kind)
            except GroveError:
                raise _Drop("malformed") from None
        elif any(shown.sent.get(c) != n.content for n, c in zip(plan.notes, cited,
                                                                strict=True)):
            raise _Drop("too_long")  # the model saw only part of it: it cannot rewrite it
        if step == "merge" and plan.content is None:
            raise _Drop("malformed")
        if step == "edit" and plan.content is None and plan.note_kind is None:
            raise _Drop("malformed")
        if plan.note_kind is not None and any(n.kind == Kind.HANDOFF for n in plan.notes):
            raise _Drop("not_applicable")  # a handoff's kind goes with its task id
    elif step == "create":
        if plan.content is None or plan.note_kind is None:
            raise _Drop("malformed")
        plan.destination = _notebook_ref(actor, draft.notebook, shown, none_word="personal")
    elif step == "archive":
        if not all(live):
            raise _Drop("not_applicable")
    elif step == "restore":
        if any(n.status != Status.ARCHIVED for n in plan.notes):
            raise _Drop("not_applicable")  # only archived notes come back this way
    elif step == "move_notes":
        plan.destination = _notebook_ref(actor, draft.notebook, shown, none_word="personal")
        if all(n.notebook_id == plan.destination for n in plan.notes):
            raise _Drop("not_applicable")
    elif step == "create_notebook":
        if plan.name is None:
            raise _Drop("malformed")
        plan.destination = _notebook_ref(actor, draft.notebook, shown, none_word="root")
    elif step == "move_notebook":
        subject = _notebook_ref(actor, draft.subject, shown, none_word="\0")
        parent = _notebook_ref(actor, draft.notebook, shown, none_word="root")
        if subject is None:
            raise _Drop("malformed")
        notebook = Notebook.objects.get(id=subject)
        try:
            require_parent_granted(actor, notebook)  # notebook_update's own rule
        except Forbidden:
            raise _Drop("outside_grant") from None
        if notebook.parent_id == parent or (parent is not None
                                            and subject in ancestor_ids(parent)):
            raise _Drop("not_applicable")  # where it is, or under itself
        plan.subject, plan.destination = subject, parent
    else:
        assert step in ("delete",), step


def _summary(text: str) -> str:
    return " ".join(text.split())[:PROPOSAL_SUMMARY_MAX_CHARS]


def plan(actor: Actor, drafts: list[Any], shown: Shown) -> tuple[list[Planned], list[Dropped]]:
    """The model's proposals checked one by one against what it was shown and the
    caller's grant: (the ones to store with their previews and fingerprints, the
    dropped ones with why)."""
    kept: list[Planned] = []
    dropped: list[Dropped] = []
    if not drafts:  # most answers propose nothing: no reads
        return kept, dropped
    with tenant(actor):
        paths = notebook_paths(notebooks_visible_to(actor))  # what previews call them
        for raw in drafts:
            try:
                draft = providers.DraftProposal.model_validate(raw)
            except ValidationError:
                summary = raw.get("summary") if isinstance(raw, dict) else None
                dropped.append(Dropped(kind=str(raw.get("kind", "")) if isinstance(raw, dict)
                                       else "",
                                       summary=_summary(str(summary or "")),
                                       reason="malformed"))
                continue
            if len(kept) >= PROPOSALS_MAX:
                dropped.append(Dropped(kind=draft.kind, summary=_summary(draft.summary),
                                       reason="too_many"))
                continue
            try:
                checked = _check(actor, draft, shown)
            except _Drop as drop:
                dropped.append(Dropped(kind=draft.kind, summary=_summary(draft.summary),
                                       reason=drop.reason))
                continue
            kept.append(_planned(checked, paths))
    return kept, dropped


# -- the preview -------------------------------------------------------------------------------


def _counts(notebook_id: uuid.UUID) -> tuple[int, int]:
    ids = subtree_ids(notebook_id)
    notes = Note.objects.filter(notebook_id__in=ids).exclude(status=Status.DELETED).count()
    return len(ids), notes


def _where(notebook_id: uuid.UUID | None, paths: dict[uuid.UUID, str]) -> str:
    return PERSONAL if notebook_id is None else paths.get(notebook_id, "a notebook")


def _diff(note: Note | None, content: str, kind_to: str) -> PreviewDiff:
    old = note.content if note is not None else ""
    return PreviewDiff(note_id=note.id if note else None,
                       from_version=note.version if note else None,
                       kind_from=note.kind if note else None, kind_to=kind_to,
                       rows=[DiffRow(kind=k, text=t)  # type: ignore[arg-type]
                             for k, t in revision_diff(old, content)])


_EFFECT = {"edit": "edited", "archive": "archived", "restore": "restored",
           "delete": "deleted", "move_notes": "moved"}
_UNDO = {
    "edit": "Undo writes the note's earlier version back as a new revision.",
    "create": "Undo deletes the new note.",
    "merge": "Undo writes the survivor's earlier version back as a new revision and "
             "restores the archived notes.",
    "archive": "Undo restores the notes.",
    "restore": "Undo archives the notes again.",
    "move_notes": "Undo moves each note back to where it was.",
    "create_notebook": "Undo deletes the new notebook (while it is still empty).",
    "move_notebook": "Undo moves the notebook back under its earlier parent.",
}


def _planned(plan: _Plan, paths: dict[uuid.UUID, str]) -> Planned:
    """The checked plan's preview, instruction and fingerprint (caller holds a tenant
    transaction); `paths`: the caller's notebooks by path."""
    step = plan.action or plan.kind
    notes: list[PreviewNote] = []
    diffs: list[PreviewDiff] = []
    notebooks: list[PreviewNotebook] = []

    def listed(note: Note, effect: str, to: str | None = None) -> PreviewNote:
        return PreviewNote(id=note.id, version=note.version,
                           label=note_title(note.content, 80, path=note.source_path),
                           notebook_id=note.notebook_id,
                           notebook=_where(note.notebook_id, paths), effect=effect,
                           to_notebook=to)

    def destination(notebook_id: uuid.UUID | None, effect: str) -> PreviewNotebook:
        if notebook_id is None:
            return PreviewNotebook(id=None, path=PERSONAL if effect == "destination"
                                   else TOP_LEVEL, effect=effect, notebooks=0, notes=0)
        count, members = _counts(notebook_id)
        return PreviewNotebook(id=notebook_id, path=paths.get(notebook_id, "a notebook"),
                               effect=effect, notebooks=count, notes=members)

    if step == "edit":
        note = plan.notes[0]
        notes.append(listed(note, "edited"))
        diffs.append(_diff(note, plan.content if plan.content is not None else note.content,
                           plan.note_kind or note.kind))
    elif step == "merge":
        survivor, others = plan.notes[0], plan.notes[1:]
        notes.append(listed(survivor, "survives"))
        notes.extend(listed(n, "archived") for n in others)
        assert plan.content is not None
        diffs.append(_diff(survivor, plan.content, plan.note_kind or survivor.kind))
    elif step == "create":
        assert plan.content is not None and plan.note_kind is not None
        notes.append(PreviewNote(id=None, version=None, label=note_title(plan.content, 80),
                                 notebook_id=plan.destination,
                                 notebook=_where(plan.destination, paths), effect="created"))
        diffs.append(_diff(None, plan.content, plan.note_kind))
        notebooks.append(destination(plan.destination, "destination"))
    elif step == "move_notes":
        to = _where(plan.destination, paths)
        notes.extend(listed(n, "moved", to) for n in plan.notes)
        notebooks.append(destination(plan.destination, "destination"))
    elif step == "create_notebook":
        notebooks.append(PreviewNotebook(id=None, path=(
            f"{paths.get(plan.destination, 'a notebook')} / " if plan.destination else "")
                                         + str(plan.name), effect="created", notebooks=1,
                                         notes=0))
        notebooks.append(destination(plan.destination, "parent"))
    elif step == "move_notebook":
        assert plan.subject is not None
        notebooks.append(destination(plan.subject, "moved"))
        notebooks.append(destination(plan.destination, "parent"))
    else:  # archive, restore, delete
        notes.extend(listed(n, _EFFECT[step]) for n in plan.notes)
    instruction = {
        "step": step,
        "notes": [[str(n.id), n.version] for n in plan.notes],
        "content": plan.content, "noteKind": plan.note_kind,
        "destination": str(plan.destination) if plan.destination else None,
        "subject": str(plan.subject) if plan.subject else None, "name": plan.name,
    }
    preview = Preview(notes=notes, diffs=diffs, notebooks=notebooks, undo=_UNDO.get(step))
    change = ProposedChange(kind=plan.kind, action=plan.action,  # type: ignore[arg-type]
                            summary=plan.summary, preview=preview)
    return Planned(change=change, instruction=instruction,
                   fingerprint=fingerprint(affected(instruction)))
