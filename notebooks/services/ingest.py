"""Bring a folder of markdown in and keep it in step (issue 22, SPEC §13).

Each file is one transaction: its chunks (`notebooks.ingest.chunking`) become notes of
the target notebook — or of sub-notebooks named after its folders — through the same
services as every other write (`note_remember`, `note_update`, `note_forget`), and the
ledger (`IngestedChunk`) records which note holds which chunk, with hashes. A rerun
compares them: an unchanged file writes nothing (its hash is on the ledger); a chunk
whose text is unchanged but whose tags changed gets a metadata-only revision (no new
vector); chunks past a file's new end are deleted. A killed run leaves every file
either done or untouched, so running it again finishes the work.

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
from notebooks.ingest.chunking import Chunk, chunk_markdown
from notebooks.ingest.source import prepare, strip_private
from notebooks.models import IngestedChunk, Kind, Notebook, Status
from notebooks.rules import BATCH_MAX, TAGS_MAX, clean_kind, clean_tag
from notebooks.selectors.access import live_notebooks
from notebooks.services.batches import note_archive, note_forget
from notebooks.services.notebooks import notebook_create
from notebooks.services.notes import note_remember, note_update
from notebooks.services.notes_many import NewNote, notes_create_many

# Part of every file's hash: a change in how files become notes makes the next run
# look at every file again.
RULES_VERSION = "chunks-1200-150/2"  # 2: Grove's Markdown export kept whole
# Why a file without text (once front matter and private regions are gone) made no note.
EMPTY = "empty: no text to bring in"


@dataclass
class FileOutcome:
    path: str
    created: int = 0
    updated: int = 0  # new text: a revision, embedded again
    retagged: int = 0  # same text, other tags: a revision, no new vector
    unchanged: int = 0
    removed: int = 0  # chunks past the file's new end
    skipped: str | None = None  # why the file was not read
    private_regions: int = 0
    redacted: dict[str, int] = field(default_factory=dict)  # credentials, by kind
    warnings: list[str] = field(default_factory=list)

    @property
    def writes(self) -> int:
        return self.created + self.updated + self.retagged + self.removed


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


def ingest_root(actor: Actor, notebook: str) -> Notebook:
    """The notebook a folder goes into: a live notebook's id, or the name of one at the
    top level (made when there is none)."""
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


def _folder_notebook(actor: Actor, root: Notebook, names: tuple[str, ...],
                     made: dict[tuple[str, ...], uuid.UUID]) -> uuid.UUID:
    """The notebook of `root` at the path `names` (a folder's parts, or an exported
    note's notebook path; one sub-notebook per level), made where missing."""
    parent = root.id
    for depth in range(len(names)):
        walked = names[:depth + 1]
        if walked not in made:
            found = live_notebooks(actor).filter(parent_id=parent,
                                                 name__iexact=walked[-1]).first()
            made[walked] = found.id if found is not None else notebook_create(
                actor=actor, operation_id=uuid.uuid4(), name=walked[-1], parent_id=parent).id
        parent = made[walked]
    return parent


def ingest_file(*, actor: Actor, root: Notebook, path: PurePosixPath, raw: bytes,
                kind: str = Kind.FACT, subfolders: bool = False,
                made: dict[tuple[str, ...], uuid.UUID] | None = None,
                rules: SecretRules | None = None,
                now: datetime | None = None) -> FileOutcome:
    """One file of the folder, in one transaction (see the module's docstring).
    `rules`: the account's secret rules, when the caller has read them once for many
    files."""
    actor.require(WRITE)
    kind = clean_kind(kind)
    now = now or timezone.now()
    rules = rules or secret_rules(actor.account_id)
    outcome = FileOutcome(path=path.as_posix())
    file_hash = _sha(RULES_VERSION, kind, str(subfolders), rules.fingerprint(), raw)
    with tenant(actor):
        rows = {row.chunk: row for row in IngestedChunk.objects.filter(
            root=root, path=outcome.path).select_related("note")}
        if rows and all(r.file_hash == file_hash and r.gone_at is None
                        for r in rows.values()):
            outcome.unchanged = len(rows)
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
        made = {} if made is None else made
        exported, task_id = prepared.exported, None
        if exported is not None:  # Grove's own Markdown export: the note, whole
            kind = _exported_kind(exported.kind, kind, outcome)
            task_id = exported.task_id
            notebook_id = _folder_notebook(actor, root, exported.notebook, made)
            chunks = [Chunk(index=0, text=prepared.body, headings=())]
        else:
            notebook_id = (_folder_notebook(actor, root, path.parent.parts, made)
                           if subfolders and path.parent.parts else root.id)
            chunks = chunk_markdown(prepared.body)
        if not chunks and not rows:  # nothing to bring in, and nothing brought in before
            outcome.skipped = EMPTY
            return outcome
        note_ids: dict[int, uuid.UUID] = {}
        new: list[Chunk] = []
        moved: list[uuid.UUID] = []
        for chunk in chunks:
            row = rows.get(chunk.index)
            if row is None or row.note.status != Status.ACTIVE \
                    or row.note.notebook_id != notebook_id:
                new.append(chunk)
                if row is not None and row.note.status == Status.ACTIVE:  # moved notebook
                    moved.append(row.note_id)
                continue
            note_ids[chunk.index] = row.note_id
            if row.content_hash != _sha(chunk.text):
                note_update(actor=actor, operation_id=uuid.uuid4(), note_id=row.note_id,
                            content=chunk.text, tags=tags, kind=kind, task_id=task_id)
                outcome.updated += 1
            elif sorted(row.note.tags) != tags or row.note.kind != kind:
                note_update(actor=actor, operation_id=uuid.uuid4(), note_id=row.note_id,
                            tags=tags, kind=kind, task_id=task_id)
                outcome.retagged += 1
            else:
                outcome.unchanged += 1
        if new:
            note_ids.update(zip([chunk.index for chunk in new],
                                _create(actor, notebook_id, kind, task_id, tags, new, rules),
                                strict=True))
            outcome.created += len(new)
        _in_batches(note_forget, actor, moved)
        # The file's ledger rows, rewritten in two statements.
        IngestedChunk.objects.filter(root=root, path=outcome.path,
                                     chunk__lt=len(chunks)).delete()
        IngestedChunk.objects.bulk_create([IngestedChunk(
            account_id=actor.account_id, root=root, path=outcome.path, chunk=chunk.index,
            note_id=note_ids[chunk.index], headings=list(chunk.headings),
            file_hash=file_hash, content_hash=_sha(chunk.text), ingested_at=now)
            for chunk in chunks])
        stale = [row for index, row in rows.items() if index >= len(chunks)]
        if stale:
            _in_batches(note_forget, actor,
                        [row.note_id for row in stale if row.note.status != Status.DELETED])
            IngestedChunk.objects.filter(id__in=[row.id for row in stale]).delete()
            outcome.removed = len(stale)
    return outcome


def _create(actor: Actor, notebook_id: uuid.UUID, kind: str, task_id: str | None,
            tags: list[str], chunks: list[Chunk], rules: SecretRules) -> list[uuid.UUID]:
    """New notes for `chunks`: all at once (`notes_create_many`), or a handoff through
    `note_remember`, which keeps one live handoff per task."""
    if kind != Kind.HANDOFF:
        return notes_create_many(actor=actor, notebook_id=notebook_id, kind=kind, rules=rules,
                                 items=[NewNote(chunk.text, tags) for chunk in chunks])
    made = []
    for chunk in chunks:
        saved = note_remember(actor=actor, operation_id=uuid.uuid4(), content=chunk.text,
                              kind=kind, notebook_id=notebook_id, tags=tags,
                              task_id=task_id).note
        assert saved is not None  # held only for a connection, never the owner
        made.append(saved.id)
    return made


def _exported_kind(value: str, default: str, outcome: FileOutcome) -> str:
    try:
        return clean_kind(value)
    except Invalid:
        outcome.warnings.append(f"kind {value[:40]!r} is not a kind; {default} used")
        return default


def ingest_prune(*, actor: Actor, root: Notebook, present: set[str], remove: bool,
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
