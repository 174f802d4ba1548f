"""Rows that merely need to exist. Anything that must respect domain rules is made
through the services instead (STYLE §9)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable

from grove.kernel.actor import READ, WRITE, Actor
from grove.kernel.tenancy import tenant  # noqa: F401 - re-exported for tests
from grove.models import Account, Connection
from notebooks import services
from notebooks.schemas.notes import NotebookOut, NoteOut

_counter = itertools.count(1)


def op() -> uuid.UUID:
    return uuid.uuid4()


def account(username: str | None = None) -> Account:
    name = username or f"user{next(_counter)}"
    return Account.objects.create_user(username=name, password="correct horse battery")


def owner(username: str | None = None) -> Actor:
    return Actor.for_session(account(username).id)


def connection(
    actor_or_account: Actor | Account,
    *,
    capabilities: Iterable[str] = (READ, WRITE),
    personal: bool = False,
    all_notebooks: bool = False,
    notebooks: Iterable[uuid.UUID] = (),
    status: str = Connection.Status.ACTIVE,
) -> Actor:
    account_id = (
        actor_or_account.account_id if isinstance(actor_or_account, Actor) else actor_or_account.id
    )
    with tenant(account_id):
        row = Connection.objects.create(
            account_id=account_id, name=f"key {next(_counter)}", kind=Connection.Kind.API_KEY,
            status=status, capabilities=list(capabilities), grant_personal=personal,
            grant_all=all_notebooks, grant_notebooks=list(notebooks),
            revoked_at=None if status != Connection.Status.REVOKED else "2026-01-01T00:00:00Z",
        )
    return Actor.for_connection(row) if status == Connection.Status.ACTIVE else row


def notebook(actor: Actor, name: str = "Project", parent: uuid.UUID | None = None) -> NotebookOut:
    return services.notebook_create(actor=actor, operation_id=op(), name=name, parent_id=parent)


def note(actor: Actor, content: str = "The sky is blue.", kind: str = "fact", **kwargs) -> NoteOut:
    return services.note_remember(
        actor=actor, operation_id=op(), content=content, kind=kind, **kwargs
    ).note


def table_counts(*account_ids: uuid.UUID) -> dict[str, int]:
    """Rows per account-owned table, summed over the given accounts (through RLS)."""
    from grove.models import Operation
    from notebooks.models import Note, Notebook, Revision

    totals = {"notes": 0, "revisions": 0, "notebooks": 0, "operations": 0, "connections": 0}
    for account_id in account_ids:
        with tenant(account_id):
            totals["notes"] += Note.objects.count()
            totals["revisions"] += Revision.objects.count()
            totals["notebooks"] += Notebook.objects.count()
            totals["operations"] += Operation.objects.count()
            totals["connections"] += Connection.objects.count()
    return totals


def note_row(actor: Actor, note_id: uuid.UUID):
    """The stored row, whatever its status (for assertions only)."""
    from notebooks.models import Note

    with tenant(actor):
        return Note.objects.get(id=note_id)


def revisions(actor: Actor, note_id: uuid.UUID):
    from notebooks.models import Revision

    with tenant(actor):
        return list(Revision.objects.filter(note_id=note_id).order_by("version"))


def refresh(actor: Actor) -> Actor:
    """Resolve a connection actor again from its row, as the next request would."""
    with tenant(actor):
        return Actor.for_connection(Connection.objects.get(id=actor.connection_id))


def export_records(texts: Iterable[str], when: str) -> list[dict]:
    """An export (format 2) holding one active Personal fact per text, created `when`
    (an ISO instant): what `account_import` takes, for tests and benchmarks that need
    many notes saved in one transaction."""
    records: list[dict] = [{"type": "grove-export", "format": 2, "exportedAt": when}]
    for text in texts:
        fields = {"notebookId": None, "content": text, "kind": "fact", "taskId": None,
                  "sourceAgent": None, "capture": "explicit", "pinned": False,
                  "importance": 0.5, "retentionDays": None, "expiresAt": None,
                  "status": "active", "createdAt": when}
        note_id = str(uuid.uuid4())
        records += [{"type": "note", "id": note_id, "version": 1, "archivedAt": None,
                     "expiredAt": None, "updatedAt": when, **fields},
                    {"type": "revision", "noteId": note_id, "version": 1, "reason": "create",
                     "restoredFrom": None, "operationId": None, **fields}]
    return records
