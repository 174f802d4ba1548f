"""Grant-scoped reads of notebooks and notes, and the `access_*` helpers (STYLE §3, §8).

Every function takes the resolved `Actor`. Row-level security already limits rows to
the actor's account; the grant (personal / notebook set / all) is applied here.
Missing, deleted, foreign and not-granted all raise the same `NotFound`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from grove.kernel.actor import READ, WRITE, Actor
from grove.kernel.errors import Forbidden, Invalid, NotFound
from grove.kernel.paging import read_cursor, write_cursor
from grove.kernel.tenancy import tenant
from notebooks.models import Note, Notebook, Revision, Status
from notebooks.schemas import NotebookOut, SubtreeCounts


def parse_uuid(value: uuid.UUID | str, *, what: str = "id") -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (ValueError, AttributeError, TypeError):
        raise Invalid(f"{what} must be a UUID.", code="invalid_id") from None


def grant_filter(actor: Actor, field: str = "notebook_id") -> Q:
    """Rows whose notebook (None = Personal) is inside the actor's grant."""
    grant = actor.grant
    if grant.all_notebooks:
        granted = Q(**{f"{field}__isnull": False})
    elif grant.notebooks:
        granted = Q(**{f"{field}__in": list(grant.notebooks)})
    else:
        granted = Q(**{f"{field}__in": []})
    if grant.personal:
        granted |= Q(**{f"{field}__isnull": True})
    return granted


def visible_filter(actor: Actor, *, prefix: str = "") -> Q:
    """Notes the actor may reach by id: its account, granted, not deleted. `prefix`
    applies the rule through a relation (e.g. "note__" from NoteEmbedding)."""
    return (
        grant_filter(actor, f"{prefix}notebook_id")
        & Q(**{f"{prefix}account_id": actor.account_id})
        & ~Q(**{f"{prefix}status": Status.DELETED})
    )


def live_filter(actor: Actor, *, now: datetime | None = None, prefix: str = "") -> Q:
    """What lists and recall show: visible, active, not past expiry, and not in an
    archived or deleted notebook."""
    now = now or timezone.now()
    return (
        visible_filter(actor, prefix=prefix)
        & Q(**{f"{prefix}status": Status.ACTIVE})
        & (Q(**{f"{prefix}expires_at__isnull": True}) | Q(**{f"{prefix}expires_at__gt": now}))
        & (
            Q(**{f"{prefix}notebook__isnull": True})
            | Q(**{f"{prefix}notebook__{field}": value
                   for field, value in LIVE_NOTEBOOK.items()})
        )
    )


# A notebook whose notes are live: neither archived nor deleted.
LIVE_NOTEBOOK = {"archived_at__isnull": True, "deleted_at__isnull": True}


def live_notebooks(actor: Actor) -> QuerySet[Notebook]:
    """Granted notebooks whose notes lists and recall show."""
    return notebooks_visible_to(actor).filter(**LIVE_NOTEBOOK)


def notes_visible_to(actor: Actor) -> QuerySet[Note]:
    """Every non-deleted note the actor may reach by id (any status but deleted)."""
    return Note.objects.filter(visible_filter(actor))


def notes_live(actor: Actor, *, now: datetime | None = None) -> QuerySet[Note]:
    return Note.objects.filter(live_filter(actor, now=now))


def notebooks_visible_to(actor: Actor) -> QuerySet[Notebook]:
    notebooks = Notebook.objects.filter(account_id=actor.account_id, deleted_at__isnull=True)
    grant = actor.grant
    if grant.all_notebooks:
        return notebooks
    return notebooks.filter(id__in=list(grant.notebooks))


def access_note(
    actor: Actor, note_id: uuid.UUID | str, *, need: str = READ, for_update: bool = False
) -> Note:
    """The note if the actor may `need` it; caller holds a tenant transaction."""
    actor.require(need)
    note_uuid = parse_uuid(note_id, what="note id")
    queryset = notes_visible_to(actor)
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    note = queryset.filter(id=note_uuid).first()
    if note is None:
        raise NotFound("No such note.", code="note_not_found")
    return note


def access_notebook(
    actor: Actor, notebook_id: uuid.UUID | str, *, need: str = READ, for_update: bool = False
) -> Notebook:
    actor.require(need)
    notebook_uuid = parse_uuid(notebook_id, what="notebook id")
    queryset = notebooks_visible_to(actor)
    if for_update:
        queryset = queryset.select_for_update()
    notebook = queryset.filter(id=notebook_uuid).first()
    if notebook is None:
        raise NotFound("No such notebook.", code="notebook_not_found")
    return notebook


def require_personal(actor: Actor) -> None:
    """Personal notes are asked for: say so plainly when the grant leaves them out
    (Personal always exists, so naming it reveals nothing)."""
    if not actor.grant.personal:
        raise Forbidden("Personal notes are not granted to this connection; name a "
                        "notebook it may use (list_notebooks), or ask the owner to add "
                        "Personal on the Connections page.", code="personal_not_granted")


def notebook_names(*, actor: Actor, notes: Iterable[Any]) -> dict[uuid.UUID, str]:
    """Names of the notebooks these notes (or revisions) are in, for compact results, as
    far as the actor may see them. Personal notes have none."""
    ids = {note.notebook_id for note in notes if note.notebook_id is not None}
    if not ids:
        return {}
    with tenant(actor):
        return dict(notebooks_visible_to(actor).filter(id__in=ids).values_list("id", "name"))


def access_destination(actor: Actor, notebook_id: uuid.UUID | str | None) -> Notebook | None:
    """A place notes may be written to: Personal (None) or a live granted notebook.

    The notebook row is locked FOR KEY SHARE until the caller's transaction ends, so a
    concurrent subtree archive or delete (which locks FOR UPDATE) either waits for this
    write — and counts it — or has already happened, and this raises NotFound.
    """
    actor.require(WRITE)
    if notebook_id is None:
        require_personal(actor)
        return None
    notebook = access_notebook(actor, notebook_id, need=WRITE)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT archived_at FROM notebooks_notebook "
            "WHERE id = %s AND deleted_at IS NULL FOR KEY SHARE",
            [notebook.id],
        )
        row = cursor.fetchone()
    if row is None:
        raise NotFound("No such notebook.", code="notebook_not_found")
    notebook.archived_at = row[0]
    return notebook


def lock_subtree(notebook_id: uuid.UUID) -> list[uuid.UUID]:
    """Lock the notebook's whole live subtree FOR UPDATE and return its ids.

    Writers into a notebook hold FOR KEY SHARE on it (`access_destination`), so once the
    subtree is locked nothing can be added under it until the caller commits. A child
    committed between reading the tree and locking it is caught by reading again.
    """
    locked: set[uuid.UUID] = set()
    while True:
        ids = subtree_ids(notebook_id)
        missing = sorted(set(ids) - locked, key=str)
        if not missing:
            return ids
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id FROM notebooks_notebook WHERE id = ANY(%s) ORDER BY id FOR UPDATE",
                [missing],
            )
        locked.update(missing)


def subtree_ids(notebook_id: uuid.UUID) -> list[uuid.UUID]:
    """The notebook and all its non-deleted descendants (caller holds a tenant tx)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH RECURSIVE tree(id) AS (
                SELECT id FROM notebooks_notebook WHERE id = %s AND deleted_at IS NULL
                UNION
                SELECT child.id FROM notebooks_notebook child
                JOIN tree ON child.parent_id = tree.id
                WHERE child.deleted_at IS NULL
            )
            SELECT id FROM tree
            """,
            [notebook_id],
        )
        return [row[0] for row in cursor.fetchall()]


def ancestor_ids(notebook_id: uuid.UUID) -> list[uuid.UUID]:
    """The notebook and every ancestor up to the root."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH RECURSIVE up(id, parent_id) AS (
                SELECT id, parent_id FROM notebooks_notebook WHERE id = %s
                UNION
                SELECT p.id, p.parent_id FROM notebooks_notebook p JOIN up ON p.id = up.parent_id
            )
            SELECT id FROM up
            """,
            [notebook_id],
        )
        return [row[0] for row in cursor.fetchall()]


def count_subtree(ids: list[uuid.UUID]) -> SubtreeCounts:
    notes = Note.objects.filter(notebook_id__in=ids).exclude(status=Status.DELETED).count()
    return SubtreeCounts(notebooks=len(ids), notes=notes)


# -- public selectors ---------------------------------------------------------------------


def note_get(*, actor: Actor, note_id: uuid.UUID | str) -> Note:
    with tenant(actor):
        return access_note(actor, note_id)


def notebook_get(*, actor: Actor, notebook_id: uuid.UUID | str) -> Notebook:
    with tenant(actor):
        return access_notebook(actor, notebook_id)


def notebooks_as_seen(actor: Actor, notebooks: list[Notebook]) -> list[NotebookOut]:
    """Notebooks as an interface shows them: a parent the caller cannot see is hidden
    (`parentId: null`). Caller holds a tenant transaction."""
    parents = {nb.parent_id for nb in notebooks if nb.parent_id}
    seen = set(notebooks_visible_to(actor).filter(id__in=parents).values_list("id", flat=True))
    return [NotebookOut.of(nb).model_copy(
        update={"parent_id": nb.parent_id if nb.parent_id in seen else None})
        for nb in notebooks]


def notebook_out(*, actor: Actor, notebook_id: uuid.UUID | str) -> NotebookOut:
    with tenant(actor):
        return notebooks_as_seen(actor, [access_notebook(actor, notebook_id)])[0]


class _Everywhere:
    def __repr__(self) -> str:
        return "EVERYWHERE"


EVERYWHERE = _Everywhere()
"""`note_list(notebook_id=EVERYWHERE)`: every granted notebook and Personal."""


def note_list(
    *, actor: Actor, notebook_id: uuid.UUID | str | None | _Everywhere = EVERYWHERE,
    limit: int = 100,
) -> list[Note]:
    """Live notes, newest first; `notebook_id=None` means Personal."""
    with tenant(actor):
        actor.require(READ)
        notes = notes_live(actor)
        if notebook_id is None:
            notes = notes.filter(notebook__isnull=True)
        elif not isinstance(notebook_id, _Everywhere):
            notes = notes.filter(notebook_id=parse_uuid(notebook_id, what="notebook id"))
        return list(notes.order_by("-updated_at", "-id")[: max(1, min(limit, 500))])


NOTEBOOK_PAGE_MAX = 200
NOTEBOOK_CURSOR_SALT = "grove.notebooks.list"


def notebook_page(
    *, actor: Actor, include_archived: bool = False, cursor: str | None = None,
    limit: int = 100,
) -> tuple[list[NotebookOut], int, str | None]:
    """One page of the granted notebooks, oldest first, with the real count and the next
    signed cursor. A notebook whose parent the caller cannot see shows `parentId: null`
    (the hidden parent stays hidden)."""
    if isinstance(limit, bool) or not isinstance(limit, int) \
            or not 1 <= limit <= NOTEBOOK_PAGE_MAX:
        raise Invalid(f"limit must be a whole number from 1 to {NOTEBOOK_PAGE_MAX}.",
                      code="invalid_limit")
    fingerprint = "archived" if include_archived else "live"
    ceiling, after = read_cursor(actor, cursor, fingerprint, salt=NOTEBOOK_CURSOR_SALT)
    with tenant(actor):
        actor.require(READ)
        ceiling = ceiling or timezone.now()
        notebooks = notebooks_visible_to(actor).filter(created_at__lte=ceiling)
        if not include_archived:
            notebooks = notebooks.filter(archived_at__isnull=True)
        available = notebooks.count()
        if after is not None:
            created = parse_datetime(str(after[0]))
            notebooks = notebooks.filter(Q(created_at__gt=created)
                                         | Q(created_at=created, id__gt=uuid.UUID(after[1])))
        rows = list(notebooks.order_by("created_at", "id")[: limit + 1])
        more = len(rows) > limit
        rows = rows[:limit]
        out = notebooks_as_seen(actor, rows)
    next_cursor = write_cursor(actor, fingerprint, ceiling,
                               [rows[-1].created_at.isoformat(), str(rows[-1].id)],
                               salt=NOTEBOOK_CURSOR_SALT) if more else None
    return out, available, next_cursor


def notebook_list(*, actor: Actor, include_archived: bool = False) -> list[Notebook]:
    with tenant(actor):
        actor.require(READ)
        notebooks = notebooks_visible_to(actor)
        if not include_archived:
            notebooks = notebooks.filter(archived_at__isnull=True)
        return list(notebooks.order_by("name", "id"))


def note_revisions(*, actor: Actor, note_id: uuid.UUID | str) -> list[Revision]:
    with tenant(actor):
        note = access_note(actor, note_id)
        return list(Revision.objects.filter(note=note).order_by("-version"))


def notebook_subtree_counts(*, actor: Actor, notebook_id: uuid.UUID | str) -> SubtreeCounts:
    """What archiving, restoring or deleting this notebook would act on (for confirmation),
    as far as the caller may see: a connection granted a notebook but not its children
    learns nothing about them (grants never inherit down the tree)."""
    with tenant(actor):
        notebook = access_notebook(actor, notebook_id)
        return count_subtree([i for i in subtree_ids(notebook.id) if actor.grant.allows(i)])
