"""Notebooks: create, rename and move, and the subtree actions (archive, restore, delete)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import NoReturn

from django.db import connection
from django.db.models import Value
from django.db.models.functions import Lower
from django.utils import timezone

from grove.kernel import operations
from grove.kernel.actor import WRITE, Actor
from grove.kernel.errors import Conflict, Invalid
from grove.models import Connection
from links.services import places_changed
from notebooks.models import (
    NAME_MAX_CHARS,
    NO_PARENT,
    Note,
    Notebook,
    RevisionReason,
    Status,
)
from notebooks.rules import UNSET, _Unset, clean_name, given, parse_uuid
from notebooks.schemas.notes import NotebookOut, SubtreeCounts
from notebooks.selectors.access import (
    LIVE_NOTEBOOK,
    access_destination,
    access_notebook,
    ancestor_ids,
    lock_subtree,
    require_parent_granted,
    subtree_ids,
)
from notebooks.selectors.library import count_subtree
from notebooks.services.frame import idempotent, require_open_notebook, tree_lock
from notebooks.services.revisions import save_new_version


def notebook_create(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    name: str,
    parent_id: uuid.UUID | str | None = None,
) -> NotebookOut:
    """Create a notebook (at the root, or inside `parent_id`). A connection limited to a
    set of notebooks gets the new one added to its grant, so it can use what it made.
    Refused where a live notebook has the name already (`notebook_name_taken`)."""
    op_id = operations.coerce_operation_id(operation_id)
    name = clean_name(name)
    parent_uuid = None if parent_id is None else parse_uuid(parent_id, what="parent id")

    def write() -> NotebookOut:
        tree_lock(actor)  # the name stays free until this commits
        if parent_uuid is not None:
            require_open_notebook(access_destination(actor, parent_uuid))
        now = timezone.now()
        notebook = Notebook(account_id=actor.account_id, name=name, parent_id=parent_uuid,
                            created_at=now, updated_at=now)
        require_name_free(notebook)
        notebook.save(force_insert=True)
        if actor.connection_id is not None and not actor.grant.all_notebooks:
            conn = Connection.objects.select_for_update().get(id=actor.connection_id)
            conn.grant_notebooks = [*conn.grant_notebooks, notebook.id]
            conn.save(update_fields=["grant_notebooks"])
        return NotebookOut.of(notebook)

    return idempotent(actor=actor, operation_id=op_id, action="notebook_create",
                      arguments={"name": name, "parentId": parent_uuid},
                      decode=NotebookOut.model_validate, write=write)


def notebook_update(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    notebook_id: uuid.UUID | str,
    name: str | _Unset = UNSET,
    parent_id: uuid.UUID | str | None | _Unset = UNSET,
) -> NotebookOut:
    """Rename and/or move a notebook. `parent_id=None` moves it to the root; a move under
    itself or a descendant is refused (`notebook_cycle`), and so is a name a live notebook
    has there already (`notebook_name_taken`)."""
    op_id = operations.coerce_operation_id(operation_id)
    notebook_uuid = parse_uuid(notebook_id, what="notebook id")
    changes = given(
        name=(name, clean_name),
        parent_id=(parent_id, lambda value: None if value is None
                   else parse_uuid(value, what="parent id")),
    )
    if not changes:
        raise Invalid("Nothing to change: give a name or a parentId.", code="no_changes")

    def write() -> NotebookOut:
        tree_lock(actor)  # cycle checks and free names stay true until this commits
        notebook = access_notebook(actor, notebook_uuid, need=WRITE, for_update=True)
        before = (notebook.name, notebook.parent_id)
        if "parent_id" in changes and changes["parent_id"] != notebook.parent_id:
            new_parent = changes["parent_id"]
            require_parent_granted(actor, notebook)
            if new_parent is not None:
                parent = access_destination(actor, new_parent)
                assert parent is not None
                require_open_notebook(parent)
                if notebook.id in ancestor_ids(parent.id):
                    raise Conflict("A notebook cannot move inside itself or its descendants.",
                                   code="notebook_cycle")
            notebook.parent_id = new_parent
        if "name" in changes:
            notebook.name = changes["name"]
        if (notebook.name, notebook.parent_id) != before:  # a repeat changes nothing
            require_name_free(notebook)
            notebook.updated_at = timezone.now()
            notebook.save()
            # Its folder, named in links' paths, is elsewhere now.
            places_changed(actor.account_id, subtree_ids(notebook.id))
        return NotebookOut.of(notebook)

    return idempotent(actor=actor, operation_id=op_id, action="notebook_update",
                      arguments={"notebookId": notebook_uuid, **changes},
                      decode=NotebookOut.model_validate, write=write)


def require_name_free(notebook: Notebook) -> None:
    """Two live notebooks under one parent cannot share a name (SPEC §3): refuse to make
    `notebook`, as it is about to be stored, live where a live one — neither archived nor
    deleted — already has its name. Names are compared in lower case (PostgreSQL's
    `lower`, as the unique index `NOTEBOOK_NAME_UNIQUE` under it does; they are stored
    trimmed). An archived notebook is not live: its name is checked when it comes back
    (`require_names_free`). Caller holds a tenant transaction and the tree lock."""
    if notebook.archived_at is not None or notebook.deleted_at is not None:
        return
    siblings = Notebook.objects.filter(account_id=notebook.account_id, **LIVE_NOTEBOOK) \
        .alias(key=Lower("name")).filter(key=Lower(Value(notebook.name)))
    siblings = siblings.filter(parent__isnull=True) if notebook.parent_id is None \
        else siblings.filter(parent_id=notebook.parent_id)
    taken = siblings.exclude(id=notebook.id).values_list("name", flat=True).first()
    if taken is not None:
        _name_taken(taken)


# The live notebooks, and those about to be live, under the parents of the latter:
# any name (in lower case) there twice that one of the latter has.
_NAMES_CLASH = """
SELECT min(n.name) FROM notebooks_notebook n
WHERE (n.id = ANY(%(ids)s) OR (n.archived_at IS NULL AND n.deleted_at IS NULL))
  AND coalesce(n.parent_id, %(top)s) IN (
      SELECT coalesce(back.parent_id, %(top)s) FROM notebooks_notebook back
      WHERE back.id = ANY(%(ids)s))
GROUP BY coalesce(n.parent_id, %(top)s), lower(n.name)
HAVING count(*) > 1 AND bool_or(n.id = ANY(%(ids)s))
LIMIT 1
"""


def require_names_free(notebook_ids: list[uuid.UUID]) -> None:
    """`require_name_free` for stored notebooks about to be live together (a subtree
    restored from the archive or from Recently deleted): none may share its name with a
    live sibling, nor with another of them. Caller holds a tenant transaction and the
    tree lock."""
    if not notebook_ids:
        return
    with connection.cursor() as cursor:
        cursor.execute(_NAMES_CLASH, {"ids": list(notebook_ids), "top": NO_PARENT})
        row = cursor.fetchone()
    if row is not None:
        _name_taken(row[0])


def _name_taken(name: str) -> NoReturn:
    raise Conflict(f"A notebook named “{name}” is already there: choose another name, or "
                   "rename one of them first.", code="notebook_name_taken")


def free_name(actor: Actor, name: str, parent_id: uuid.UUID | None) -> str:
    """`name`, or the first of "name (2)", "name (3)", … that no live notebook has under
    `parent_id` (an import's notebook beside one of the same name — as migration 0020
    renamed the twins it found). Caller holds a tenant transaction and the tree lock."""
    candidate, n = name, 1
    while True:
        try:
            require_name_free(Notebook(account_id=actor.account_id, name=candidate,
                                       parent_id=parent_id))
        except Conflict:
            n += 1
            suffix = f" ({n})"
            candidate = name[: NAME_MAX_CHARS - len(suffix)] + suffix
        else:
            return candidate


def _subtree_action(
    *,
    actor: Actor,
    operation_id: uuid.UUID | str,
    notebook_id: uuid.UUID | str,
    action: str,
    apply: Callable[[Notebook, list[uuid.UUID], datetime, uuid.UUID], None],
) -> SubtreeCounts:
    actor.require_session()
    op_id = operations.coerce_operation_id(operation_id)
    notebook_uuid = parse_uuid(notebook_id, what="notebook id")

    def write() -> SubtreeCounts:
        tree_lock(actor)
        notebook = access_notebook(actor, notebook_uuid, need=WRITE, for_update=True)
        ids = lock_subtree(notebook.id)
        counts = count_subtree(ids)
        apply(notebook, ids, timezone.now(), op_id)
        return counts

    # The session requirement above stands for `need`: subtree actions are the owner's.
    return idempotent(actor=actor, operation_id=op_id, action=action,
                      arguments={"notebookId": notebook_uuid},
                      decode=SubtreeCounts.model_validate, write=write, need=None)


def notebook_archive(
    *, actor: Actor, operation_id: uuid.UUID | str, notebook_id: uuid.UUID | str
) -> SubtreeCounts:
    """Archive a notebook and its whole subtree (website owner only). Their notes keep
    their own status but leave lists and recall until the notebook is restored.
    Returns what was acted on."""

    def apply(notebook: Notebook, ids: list[uuid.UUID], now: datetime, op: uuid.UUID) -> None:
        Notebook.objects.filter(id__in=ids, archived_at__isnull=True).update(
            archived_at=now, updated_at=now
        )

    return _subtree_action(actor=actor, operation_id=operation_id, notebook_id=notebook_id,
                           action="notebook_archive", apply=apply)


def notebook_restore(
    *, actor: Actor, operation_id: uuid.UUID | str, notebook_id: uuid.UUID | str
) -> SubtreeCounts:
    """Restore an archived notebook and its whole subtree (website owner only). Refused
    while its parent is archived (`parent_archived`), and where a live notebook has the
    name of one coming back (`notebook_name_taken`)."""

    def apply(notebook: Notebook, ids: list[uuid.UUID], now: datetime, op: uuid.UUID) -> None:
        if notebook.parent_id is not None and Notebook.objects.filter(
            id=notebook.parent_id, archived_at__isnull=False
        ).exists():
            raise Conflict("Its parent notebook is archived; restore that first.",
                           code="parent_archived")
        require_names_free(ids)
        Notebook.objects.filter(id__in=ids).update(archived_at=None, updated_at=now)

    return _subtree_action(actor=actor, operation_id=operation_id, notebook_id=notebook_id,
                           action="notebook_restore", apply=apply)


def notebook_delete(
    *, actor: Actor, operation_id: uuid.UUID | str, notebook_id: uuid.UUID | str
) -> SubtreeCounts:
    """Delete a notebook, its subtree and every note in it (retained soft deletion;
    website owner only; not reversible through any interface)."""

    def apply(notebook: Notebook, ids: list[uuid.UUID], now: datetime, op: uuid.UUID) -> None:
        notes = (Note.objects.select_for_update().filter(notebook_id__in=ids)
                 .exclude(status=Status.DELETED).order_by("id"))
        for note in notes:
            note.status, note.deleted_at = Status.DELETED, now
            save_new_version(note, reason=RevisionReason.DELETE, actor=actor,
                             operation_id=op, now=now)
        Notebook.objects.filter(id__in=ids).update(deleted_at=now, updated_at=now)

    return _subtree_action(actor=actor, operation_id=operation_id, notebook_id=notebook_id,
                           action="notebook_delete", apply=apply)
