"""Grant-scoped reads of notebooks and notes, and the `access_*` helpers (STYLE §3, §8).

Every function takes the resolved `Actor`. Row-level security already limits rows to
the actor's account; the grant (personal / notebook set / all) is applied here.
Missing, deleted, foreign and not-granted all raise the same `NotFound`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone

from grove.kernel.actor import READ, WRITE, Actor
from grove.kernel.errors import Forbidden, NotFound
from notebooks.models import Note, Notebook, Status
from notebooks.rules import EVERYWHERE, parse_uuid, unexpired_filter


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
    applies the rule through a relation (e.g. "note__" from PassageVector)."""
    return (
        grant_filter(actor, f"{prefix}notebook_id")
        & Q(**{f"{prefix}account_id": actor.account_id})
        & ~Q(**{f"{prefix}status": Status.DELETED})
    )


def live_filter(actor: Actor, *, now: datetime | None = None, prefix: str = "") -> Q:
    """What lists and recall show: visible, active, not past expiry, and not in an
    archived or deleted notebook. (The security-definer functions of migrations
    notebooks 0008 and sharing 0003 spell the same rule in SQL; a migration is a snapshot
    of what it installs, so they stay as written.)"""
    now = now or timezone.now()
    return (
        visible_filter(actor, prefix=prefix)
        & unexpired_filter(now=now, prefix=prefix)
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


@dataclass(frozen=True)
class Scope:
    """What a read covers, resolved once against the caller's grant (STYLE §13):
    every granted notebook (`notebook_ids` None), or exactly these notebooks (each
    granted and live-or-archived, never deleted), with or without Personal (`personal`
    is only ever true when the grant holds Personal). Made by `resolve_scope` and taken
    by every read that is scoped — recall, the brief, library search and lists,
    activity, ground truth, Ask — so none of them derives it again."""

    actor: Actor
    notebook_ids: tuple[uuid.UUID, ...] | None
    personal: bool
    notebook: Notebook | None = None  # the one notebook named, when one was

    @property
    def everywhere(self) -> bool:
        return self.notebook_ids is None

    @property
    def personal_only(self) -> bool:
        return self.notebook_ids == () and self.personal

    def place_q(self, prefix: str = "") -> Q:
        """The scope's places as a condition on a note's notebook."""
        if self.notebook_ids is None:
            return Q() if self.personal else Q(**{f"{prefix}notebook_id__isnull": False})
        place = Q(**{f"{prefix}notebook_id__in": list(self.notebook_ids)})
        if self.personal:
            place |= Q(**{f"{prefix}notebook_id__isnull": True})
        return place

    def q(self, prefix: str = "", *, now: datetime | None = None) -> Q:
        """The live notes of the scope (`live_filter` holds the grant)."""
        return live_filter(self.actor, now=now, prefix=prefix) & self.place_q(prefix)

    def notes(self) -> QuerySet[Note]:
        return Note.objects.filter(self.q())

    def places(self) -> list[Scope]:
        """Each place of a named scope on its own: every notebook, then Personal."""
        if self.notebook_ids is None:
            return [self]
        alone = [Scope(actor=self.actor, notebook_ids=(nb,), personal=False)
                 for nb in self.notebook_ids]
        if self.personal:
            alone.append(Scope(actor=self.actor, notebook_ids=(), personal=True))
        return alone


def resolve_scope(actor: Actor, place: Any = EVERYWHERE, *,
                  include_personal: bool | None = None, subtree: bool = False) -> Scope:
    """The one reading of a scope argument, checked against the grant.

    `place`: `EVERYWHERE` (every granted notebook), None (Personal alone:
    `personal_not_granted` when the grant leaves it out), a notebook id, or a list of
    them (each must be granted: `notebook_not_found` otherwise, as for a missing one).
    `include_personal`: Personal beside the place, when the grant holds it; None (the
    default) is the place's own answer — with everything granted, yes; with notebooks
    named, no. An empty list with `include_personal` is Personal alone, asked for by
    name. `subtree`: a notebook with the notebooks inside it that the caller is granted
    (`granted_subtree_ids`). A connection with a home notebook (`Actor.home`) that names
    no place reads its home, with Personal unless told otherwise. Caller holds a tenant
    transaction."""
    actor.require(READ)
    if place is EVERYWHERE and actor.home is not None and live_notebooks(actor).filter(
            id=actor.home).exists():  # a home deleted since: everything granted, as before
        place = actor.home
        include_personal = True if include_personal is None else include_personal
    if include_personal is None:
        include_personal = place is EVERYWHERE
    with_personal = include_personal and actor.grant.personal
    if place is EVERYWHERE:
        return Scope(actor=actor, notebook_ids=None, personal=with_personal)
    if place is None:
        require_personal(actor)
        return Scope(actor=actor, notebook_ids=(), personal=True)
    if isinstance(place, Sequence) and not isinstance(place, str):
        if not place and include_personal:
            require_personal(actor)
        notebooks = [access_notebook(actor, nb) for nb in place]
        return Scope(actor=actor, notebook_ids=tuple(dict.fromkeys(nb.id for nb in notebooks)),
                     personal=with_personal,
                     notebook=notebooks[0] if len(notebooks) == 1 else None)
    notebook = access_notebook(actor, place)
    ids = (tuple(granted_subtree_ids(actor, notebook.id)) if subtree else (notebook.id,))
    return Scope(actor=actor, notebook_ids=ids, personal=with_personal, notebook=notebook)


def require_parent_granted(actor: Actor, notebook: Notebook) -> None:
    """Moving a notebook changes the notebook it is in (and what that one's shares show):
    a connection must be granted that one too."""
    if notebook.parent_id is not None and not actor.grant.allows(notebook.parent_id):
        raise Forbidden("Moving this notebook changes the notebook it is in, which "
                        "this connection is not granted.", code="parent_not_granted")


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


def granted_subtree_ids(actor: Actor, notebook_id: uuid.UUID) -> list[uuid.UUID]:
    """The notebook and its non-deleted descendants as far as the actor is granted: each
    one granted itself (grants never inherit down the tree) and reached only through
    granted ones — a notebook below one the actor may not see is outside this subtree,
    as the actor's own tree shows it (at its top). Caller holds a tenant tx."""
    if actor.grant.all_notebooks:
        return subtree_ids(notebook_id)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH RECURSIVE tree(id) AS (
                SELECT id FROM notebooks_notebook
                WHERE id = %(root)s AND id = ANY(%(granted)s) AND deleted_at IS NULL
                UNION
                SELECT child.id FROM notebooks_notebook child
                JOIN tree ON child.parent_id = tree.id
                WHERE child.deleted_at IS NULL AND child.id = ANY(%(granted)s)
            )
            SELECT id FROM tree
            """,
            {"root": notebook_id, "granted": list(actor.grant.notebooks)},
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


def deleted_together(notebook_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[uuid.UUID]]:
    """For each deleted notebook given, itself and the descendants deleted in the same
    subtree delete (the same `deleted_at`: `notebook_delete` stamps one instant on the
    whole subtree). A descendant deleted on its own before stays out: it comes back on
    its own. Caller holds a tenant transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH RECURSIVE tree(root, id, deleted_at) AS (
                SELECT id, id, deleted_at FROM notebooks_notebook
                WHERE id = ANY(%s) AND deleted_at IS NOT NULL
                UNION
                SELECT tree.root, child.id, child.deleted_at FROM notebooks_notebook child
                JOIN tree ON child.parent_id = tree.id AND child.deleted_at = tree.deleted_at
            )
            SELECT root, id FROM tree
            """,
            [list(notebook_ids)],
        )
        together: dict[uuid.UUID, list[uuid.UUID]] = {}
        for root, notebook_id in cursor.fetchall():
            together.setdefault(root, []).append(notebook_id)
        return together
