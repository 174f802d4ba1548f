"""Bring a folder of markdown in and keep it in step (issues 22 and 37, SPEC §13).

Each file is one note — the file's text whole, front matter included (issue 37;
docs/architecture.md, "Files in and out") — in one transaction, through the same
services as every other write (`notes_create_many`, `note_update`, `note_archive`),
in the target notebook or, with folders as notebooks, in the sub-notebook of its
folder. The ledger (`IngestedChunk`, one row per file) records which note holds the
file, with hashes and the whitespace around its text. A rerun compares them: an
unchanged file writes nothing (its hash is on the ledger); a changed file is one new
revision, whose passages are re-embedded only where they changed (`passages_sync`);
the same text with other tags is a tag-only revision (no new vector). A file that an
earlier release cut into "Part N" notes is folded into one note by its next ingest
(`_fold`). A killed run leaves every file either done or untouched, so running it
again finishes the work.

Private regions are gone before any of this (`notebooks.ingest.source`), and so are
credentials: the account's rule for ingest (`grove.identity.hygiene`, default redact)
replaces each with a marker, or skips the file when it says refuse.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath

from django.utils import timezone

from grove.identity.hygiene import Origin, SecretRules, screen, secret_rules
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import Invalid, NotFound
from grove.kernel.tenancy import tenant
from links.services import NoteText, links_sync
from notebooks.ingest.source import Exported, prepare, strip_private
from notebooks.models import IngestedChunk, Kind, Note, Notebook, Status
from notebooks.rules import BATCH_MAX, TAGS_MAX, clean_kind, clean_tag, content_max_chars
from notebooks.selectors.access import live_notebooks
from notebooks.services.batches import note_archive, note_forget
from notebooks.services.notebooks import notebook_create
from notebooks.services.notes import note_update
from notebooks.services.notes_many import NewNote, notes_create_many
from notebooks.services.remember import note_remember

# Part of every file's hash: a change in how files become notes makes the next run
# look at every file again.
RULES_VERSION = "whole/3"  # 2: Grove's Markdown export kept whole; 3: every file whole
# Why a file without text (once private regions are gone) made no note.
EMPTY = "empty: no text to bring in"

# Called when a file's "Part N" notes are folded into one note: (account, the folded
# notes, the note that holds the file) → lines for the summary. Sharing registers the
# move of share links (sharing.apps); notebooks cannot import what sits above it.
FoldHandler = Callable[[uuid.UUID, list[uuid.UUID], uuid.UUID], list[str]]
_FOLD_HANDLERS: list[FoldHandler] = []


def register_fold(handler: FoldHandler) -> None:
    if handler not in _FOLD_HANDLERS:
        _FOLD_HANDLERS.append(handler)


@dataclass
class FileOutcome:
    path: str
    created: int = 0
    updated: int = 0  # new text: a revision, embedded again
    retagged: int = 0  # same text, other tags: a revision, no new vector
    unchanged: int = 0
    folded: int = 0  # an earlier release's "Part N" notes of the file, folded into one
    skipped: str | None = None  # why the file was not read
    private_regions: int = 0
    redacted: dict[str, int] = field(default_factory=dict)  # credentials, by kind
    warnings: list[str] = field(default_factory=list)

    @property
    def writes(self) -> int:
        return self.created + self.updated + self.retagged + self.folded


@dataclass
class PruneOutcome:
    files: list[str]  # gone from the folder since the last run
    archived: int = 0
    removed: int = 0


def _sha(*parts: str | bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()


def _in_batches(apply: Callable[..., object], actor: Actor, ids: list[uuid.UUID]) -> None:
    """A batch service (`note_forget`, `note_archive`) over any number of notes."""
    for start in range(0, len(ids), BATCH_MAX):
        apply(actor=actor, operation_id=uuid.uuid4(), items=ids[start:start + BATCH_MAX])


def _tags(raw: tuple[str, ...], outcome: FileOutcome) -> list[str]:
    tags: set[str] = set()
    for value in raw:
        try:
            tags.add(clean_tag(value))
        except Invalid:
            outcome.warnings.append(f"tag {value[:40]!r} is not a valid tag; left out")
    if len(tags) > TAGS_MAX:
        outcome.warnings.append(f"more than {TAGS_MAX} tags; the first {TAGS_MAX} kept")
    return sorted(tags)[:TAGS_MAX]


class Unreadable(Exception):
    """A file that is not ingested, and why (a line of the summary)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Source:
    text: str  # private regions and credentials gone
    private_regions: int
    redacted: dict[str, int]


def clean_source(actor: Actor, raw: bytes, rules: SecretRules) -> Source:
    """A file's text as anything may keep it: UTF-8, its `<private>` regions removed,
    then its credentials — front matter included — redacted by the account's ingest
    rule. `Unreadable` when it is not UTF-8, or holds a credential the rule refuses.
    The one place both `grove ingest` and the website's upload make a file safe."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("not UTF-8 text") from None
    text, private = strip_private(text)
    try:
        screened = screen(actor, text, origin=Origin.INGEST, rules=rules)
    except Invalid as exc:
        if exc.code != "secret_detected":
            raise
        kinds = ", ".join(sorted(exc.details["kinds"]))
        raise Unreadable(f"holds a credential ({kinds}); this account refuses them") from None
    return Source(screened.text, private, screened.redacted)


def ingest_root(actor: Actor, notebook: str | None) -> Notebook | None:
    """The notebook a folder goes into: a live notebook's id, or the name of one at the
    top level (made when there is none). None: the account's top level (files into
    Personal, folders as top-level notebooks)."""
    actor.require(WRITE)
    return None if notebook is None else ingest_notebook(actor, notebook)


def ingest_notebook(actor: Actor, notebook: str) -> Notebook:
    """A live notebook named by its id, or by the name of one at the top level (made
    when there is none)."""
    actor.require(WRITE)
    with tenant(actor):
        notebooks = live_notebooks(actor)
        try:
            found = notebooks.filter(id=uuid.UUID(notebook)).first()
        except ValueError:
            found = notebooks.filter(parent_id=None, name=notebook).first()
            if found is None:
                made = notebook_create(actor=actor, operation_id=uuid.uuid4(), name=notebook)
                found = notebooks.get(id=made.id)
        if found is None:
            raise NotFound("No live notebook has that id.", code="notebook_not_found")
        return found


def _folder_notebook(actor: Actor, root: Notebook | None, names: tuple[str, ...],
                     made: dict[tuple[str, ...], uuid.UUID]) -> uuid.UUID | None:
    """The notebook of `root` (None: the top level) at the path `names` (a folder's
    parts, or an exported note's notebook path; one sub-notebook per level), made where
    missing."""
    parent = root.id if root is not None else None
    for depth in range(len(names)):
        walked = names[:depth + 1]
        if walked not in made:
            found = live_notebooks(actor).filter(parent_id=parent,
                                                 name__iexact=walked[-1]).first()
            made[walked] = found.id if found is not None else notebook_create(
                actor=actor, operation_id=uuid.uuid4(), name=walked[-1], parent_id=parent).id
        parent = made[walked]
    return parent


def _placed(actor: Actor, root: Notebook | None, path: PurePosixPath,
            exported: Exported | None, subfolders: bool,
            made: dict[tuple[str, ...], uuid.UUID]) -> uuid.UUID | None:
    """The notebook a file's note belongs in: its folder's (folders as notebooks, or
    the top level), a format-1 export's named path, else the root."""
    if exported is not None and exported.notebook is not None:
        return _folder_notebook(actor, root, exported.notebook, made)
    if subfolders or root is None:
        return _folder_notebook(actor, root, path.parent.parts, made)
    return root.id


def ingest_file(*, actor: Actor, root: Notebook | None, path: PurePosixPath, raw: bytes,
                kind: str = Kind.NOTE, subfolders: bool = False,
                made: dict[tuple[str, ...], uuid.UUID] | None = None,
                rules: SecretRules | None = None,
                now: datetime | None = None) -> FileOutcome:
    """One file of the folder, in one transaction (see the module's docstring).
    `root` None: the account's top level (folders are notebooks). `rules`: the
    account's secret rules, when the caller has read them once for many files."""
    actor.require(WRITE)
    kind = clean_kind(kind)
    now = now or timezone.now()
    rules = rules or secret_rules(actor.account_id)
    subfolders = subfolders or root is None
    outcome = FileOutcome(path=path.as_posix())
    file_hash = _sha(RULES_VERSION, kind, str(subfolders), rules.fingerprint(), raw)
    with tenant(actor):
        rows = sorted(IngestedChunk.objects.filter(root=root, path=outcome.path)
                      .select_related("note"), key=lambda row: row.chunk)
        if len(rows) == 1 and rows[0].file_hash == file_hash and rows[0].gone_at is None:
            outcome.unchanged = 1
            return outcome
        try:
            source = clean_source(actor, raw, rules)
        except Unreadable as exc:
            outcome.skipped = exc.reason
            return outcome
        prepared = prepare(source.text)
        outcome.private_regions = source.private_regions
        outcome.redacted = source.redacted
        outcome.warnings.extend(prepared.warnings)
        tags = _tags(prepared.tags, outcome)
        exported, task_id = prepared.exported, None
        content = prepared.text
        if exported is not None:  # a memory record Grove's Markdown export wrote
            kind = _exported_kind(exported.kind, kind, outcome)
            task_id = exported.task_id
            content = prepared.body
        if not content:
            if not rows:  # nothing to bring in, and nothing brought in before
                outcome.skipped = EMPTY
                return outcome
            outcome.skipped = f"{EMPTY}; the note of its last text is kept"
            return outcome
        if len(content) > content_max_chars(kind):
            outcome.skipped = (f"too long for a {kind} ({len(content):,} characters, at most "
                               f"{content_max_chars(kind):,})")
            return outcome
        kept = rows[0] if rows and rows[0].note.status == Status.ACTIVE else None
        if kept is None:
            notebook_id = _placed(actor, root, path, exported, subfolders,
                                  {} if made is None else made)
            note_id = _create(actor, notebook_id, kind, task_id, tags, content, rules)
            outcome.created = 1
        else:
            # Where it is: a note a person moved stays where they put it.
            note_id = kept.note_id
            note = kept.note
            if note.content != content:
                note_update(actor=actor, operation_id=uuid.uuid4(), note_id=note_id,
                            content=content, tags=tags, kind=kind, task_id=task_id)
                outcome.updated = 1
            elif sorted(note.tags) != tags or note.kind != kind:
                note_update(actor=actor, operation_id=uuid.uuid4(), note_id=note_id,
                            tags=tags, kind=kind, task_id=task_id)
                outcome.retagged = 1
            else:
                outcome.unchanged = 1
        if Note.objects.filter(id=note_id).exclude(source_path=outcome.path) \
                .update(source_path=outcome.path):
            # The file's name is a name the note answers to, and where its links start.
            placed = Note.objects.only("notebook_id", "content").get(id=note_id)
            links_sync(actor.account_id, [NoteText(note_id, placed.notebook_id,
                                                   placed.content, outcome.path)],
                       placed=True)
        if len(rows) > 1:
            outcome.warnings += _fold(actor, [row.note for row in rows[1:]], note_id)
            outcome.folded = len(rows) - 1
        IngestedChunk.objects.filter(id__in=[row.id for row in rows]).delete()
        IngestedChunk.objects.create(
            account_id=actor.account_id, root=root, path=outcome.path, chunk=0,
            note_id=note_id, file_hash=file_hash, content_hash=_sha(content),
            lead=prepared.lead, tail=prepared.tail, subfolders=subfolders, ingested_at=now)
    return outcome


def _fold(actor: Actor, parts: list[Note], into: uuid.UUID) -> list[str]:
    """An earlier release's "Part N" notes of one file, now that the file is one note:
    archived with their history (so their citations still resolve), and what else
    pointed at them moved along (`register_fold`)."""
    live = [note.id for note in parts if note.status != Status.DELETED]
    _in_batches(note_archive, actor,
                [note.id for note in parts if note.status == Status.ACTIVE])
    said: list[str] = [f"{len(parts)} earlier parts folded into one note"]
    for handler in _FOLD_HANDLERS:
        said += handler(actor.account_id, live, into)
    return said


def _create(actor: Actor, notebook_id: uuid.UUID | None, kind: str, task_id: str | None,
            tags: list[str], content: str, rules: SecretRules) -> uuid.UUID:
    """The file's new note: through `notes_create_many` (one INSERT each of note,
    revision and job), or for a handoff `note_remember`, which keeps one live handoff
    per task."""
    if kind != Kind.HANDOFF:
        return notes_create_many(actor=actor, notebook_id=notebook_id, kind=kind, rules=rules,
                                 items=[NewNote(content, tags)])[0]
    saved = note_remember(actor=actor, operation_id=uuid.uuid4(), content=content,
                          kind=kind, notebook_id=notebook_id, tags=tags,
                          task_id=task_id).note
    assert saved is not None  # held only for a connection, never the owner
    return saved.id


def _exported_kind(value: str, default: str, outcome: FileOutcome) -> str:
    try:
        return clean_kind(value)
    except Invalid:
        outcome.warnings.append(f"kind {value[:40]!r} is not a kind; {default} used")
        return default


def ingest_prune(*, actor: Actor, root: Notebook | None, present: set[str], remove: bool,
                 now: datetime | None = None) -> PruneOutcome:
    """The files of earlier runs into `root` that are not in `present` (gone from the
    folder): their notes archived, the ledger keeping why (`gone_at`), or with `remove`
    deleted and forgotten by the ledger."""
    actor.require(WRITE)
    now = now or timezone.now()
    with tenant(actor):
        gone = IngestedChunk.objects.filter(root=root).exclude(path__in=present)
        if not remove:
            gone = gone.filter(gone_at__isnull=True)
        rows = list(gone.select_related("note"))
        outcome = PruneOutcome(files=sorted({row.path for row in rows}))
        if remove:
            live = [row.note_id for row in rows if row.note.status != Status.DELETED]
            _in_batches(note_forget, actor, live)
            IngestedChunk.objects.filter(id__in=[row.id for row in rows]).delete()
            outcome.removed = len(live)
        else:
            active = [row.note_id for row in rows if row.note.status == Status.ACTIVE]
            _in_batches(note_archive, actor, active)
            IngestedChunk.objects.filter(id__in=[row.id for row in rows]).update(gone_at=now)
            outcome.archived = len(active)
    return outcome
