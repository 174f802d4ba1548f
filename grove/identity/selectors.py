"""Reads of core data."""

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, NamedTuple
from urllib.parse import unquote

from django.apps import apps
from django.db.models import QuerySet
from django.utils import timezone

from grove.identity.schemas import AccountSettingsOut, ConnectionOut
from grove.kernel.actor import Actor
from grove.kernel.errors import Invalid, NotFound
from grove.kernel.tenancy import tenant
from grove.models import Account, Connection


def account_exists() -> bool:
    """Whether the one-time owner setup has happened. A deleted account still counts:
    setup never reopens to whoever reaches the site first (the operator makes a new
    account with `grove createsuperuser`)."""
    return Account.objects.exists()


def connection_list(*, actor: Actor, connection_id: Any = None) -> list[ConnectionOut]:
    """Every connection of the account (or just `connection_id`), newest first, OAuth
    clients with the hosts they send the owner back to (website owner only)."""
    actor.require_session()
    with tenant(actor):
        found = Connection.objects.filter(account_id=actor.account_id)
        if connection_id is not None:
            try:
                found = found.filter(id=uuid.UUID(str(connection_id)))
            except ValueError:
                return []
        rows = list(found.order_by("-created_at", "id"))
    return _described(rows)


def _described(rows: list[Connection]) -> list[ConnectionOut]:
    """Connections as the owner sees them: OAuth clients with the hosts they send the
    owner back to."""
    from grove.identity.redirects import redirect_hosts

    hosts = redirect_hosts({row.oauth_client_id for row in rows if row.oauth_client_id})
    return [ConnectionOut.of(row, hosts.get(row.oauth_client_id or "")) for row in rows]


def connection_get(*, actor: Actor, connection_id: Any) -> ConnectionOut:
    """One connection of the account (website owner only); NotFound otherwise."""
    found = connection_list(actor=actor, connection_id=connection_id)
    if not found:
        raise NotFound("No such connection.", code="not_found")
    return found[0]


def account_settings(*, actor: Actor) -> AccountSettingsOut:
    """The account's settings (any caller of the account may read them; the owner's
    credential patterns only the owner: they often hold parts of real secrets, and
    they would tell an agent what to evade)."""
    settings = AccountSettingsOut.of(Account.objects.get(id=actor.account_id))
    return settings if actor.is_session else settings.model_copy(
        update={"secret_patterns": None})


# What feature apps add to the Settings page, read in the page's own transaction
# (notebooks: the account's vision card — `notebooks.apps`). Registered at start-up, so
# the core never imports the apps that build on it.
SettingsExtra = Callable[[Actor], dict[str, Any]]
SETTINGS_EXTRAS: list[SettingsExtra] = []


def register_settings_extra(extra: SettingsExtra) -> None:
    if extra not in SETTINGS_EXTRAS:
        SETTINGS_EXTRAS.append(extra)


@dataclass(frozen=True)
class AccountSettingsPage:
    settings: AccountSettingsOut
    extras: dict[str, Any]  # from feature apps (SETTINGS_EXTRAS)


def account_settings_page(*, actor: Actor) -> AccountSettingsPage:
    """The Settings page's read, in one transaction: the account's settings and what
    feature apps add (`SETTINGS_EXTRAS`). Website owner only."""
    actor.require_session()
    with tenant(actor):
        extras: dict[str, Any] = {}
        for extra in SETTINGS_EXTRAS:
            extras.update(extra(actor))
        return AccountSettingsPage(settings=account_settings(actor=actor), extras=extras)


def grantable_notebooks(actor: Actor) -> QuerySet[Any]:
    """The account's notebooks a connection's grant may name: every one not deleted.
    Core does not import feature apps, so the notebook model is resolved by name.
    Caller holds a tenant transaction."""
    notebook_model = apps.get_model("notebooks", "Notebook")
    return notebook_model.objects.filter(account_id=actor.account_id, deleted_at__isnull=True)


PROJECT_HEADER = "X-Grove-Project"  # percent-encoded UTF-8 (`project_header`)
PROJECT_MAX_CHARS = 200


def project_header(request: Any) -> str | None:
    """The project a request names in its header: percent-encoded, since a header is
    ASCII and a project's name need not be."""
    value = request.headers.get(PROJECT_HEADER)
    return None if value is None else unquote(value)


def actor_for_project(actor: Actor, project: str | None) -> Actor:
    """`actor` with the notebook its project names as its home for this request: the
    one live notebook it is granted whose name is `project` (ignoring case) — the owner
    allows a project by granting a notebook of that name. None or blank: `actor` as it
    is. Raises NotFound (`project_not_found`: none it may use has that name — the same
    answer for one it may not see) or Invalid (`project_ambiguous`: several do)."""
    if project is None:
        return actor
    name = project.strip()
    if not name:
        return replace(actor, project=None)
    if len(name) > PROJECT_MAX_CHARS or not name.isprintable():
        raise Invalid(f"A project is a notebook's name (at most {PROJECT_MAX_CHARS} "
                      "characters).", code="invalid_project")
    with tenant(actor):
        found = [notebook_id for notebook_id in grantable_notebooks(actor).filter(
            archived_at__isnull=True, name__iexact=name).values_list("id", flat=True)
            if actor.grant.allows(notebook_id)]
    if not found:
        raise NotFound(f"No notebook this connection may use is called “{name}”; the "
                       "owner allows a project by granting a notebook of that name.",
                       code="project_not_found")
    if len(found) > 1:
        raise Invalid(f"Several notebooks this connection may use are called “{name}”; "
                      "name one by notebookId.", code="project_ambiguous")
    return actor.at_home(found[0])


class NotebookChoice(NamedTuple):
    """A notebook a grant may name, as the key, approve and grant forms offer it."""

    id: str
    name: str
    parent: str | None  # its parent's id; None at the top (or if the parent is not offered)


def notebook_choices(*, actor: Actor) -> list[NotebookChoice]:
    """The notebooks a grant may name as their tree: each parent before its children,
    siblings by name (website owner only)."""
    actor.require_session()
    with tenant(actor):
        rows = [NotebookChoice(str(i), name, str(parent) if parent else None) for i, name, parent
                in grantable_notebooks(actor).values_list("id", "name", "parent_id")]
    listed = {row.id for row in rows}
    children: dict[str | None, list[NotebookChoice]] = {}
    for row in sorted(rows, key=lambda row: (row.name.casefold(), row.id)):
        parent = row.parent if row.parent in listed else None
        children.setdefault(parent, []).append(row._replace(parent=parent))
    ordered: list[NotebookChoice] = []
    pending = list(reversed(children.get(None, [])))
    while pending:  # depth first
        row = pending.pop()
        ordered.append(row)
        pending.extend(reversed(children.get(row.id, [])))
    return ordered


@dataclass(frozen=True)
class ConnectionsOverview:
    """The Connections page: every connection, and the notebooks a new key may name."""

    connections: list[ConnectionOut]
    notebooks: list[NotebookChoice]


def connection_overview(*, actor: Actor) -> ConnectionsOverview:
    """Every connection of the account and the notebook choices (website owner only)."""
    return ConnectionsOverview(connections=connection_list(actor=actor),
                               notebooks=notebook_choices(actor=actor))


def approval_request_open(pending: dict[str, Any] | None, request_id: Any = None) -> bool:
    """Is this stored approval request still usable (and, if given, the one named)?
    (A rule of the stored request that the approval page and the approving services
    both apply; here, below both, since selectors do not import services.)"""
    pending = pending or {}
    expires = pending.get("expiresAt")
    if not pending.get("id") or not expires:
        return False
    if request_id is not None and pending["id"] != str(request_id):
        return False
    return datetime.fromisoformat(expires) > timezone.now()


@dataclass(frozen=True)
class ApprovalReview:
    """What the owner reviews before approving an OAuth client: the connection (with
    where it sends the owner back), its outstanding request, whether the request the
    link names is that one and still open, and the notebooks a grant may name."""

    connection: ConnectionOut
    pending: dict[str, Any]
    fresh: bool
    notebooks: list[NotebookChoice]


def connection_approval(*, actor: Actor, connection_id: Any,
                        request_id: Any = None) -> ApprovalReview:
    """An OAuth connection of the account under review (website owner only); any other
    id — another kind, another account's, none — is NotFound."""
    actor.require_session()
    try:
        wanted = uuid.UUID(str(connection_id))
    except ValueError:
        raise NotFound("No such connection.", code="not_found") from None
    with tenant(actor):
        row = Connection.objects.filter(id=wanted, account_id=actor.account_id,
                                        kind=Connection.Kind.OAUTH).first()
    if row is None:
        raise NotFound("No such connection.", code="not_found")
    return ApprovalReview(connection=_described([row])[0], pending=row.pending_request or {},
                          fresh=approval_request_open(row.pending_request, request_id),
                          notebooks=notebook_choices(actor=actor))


@dataclass(frozen=True)
class ConnectionEditing:
    """A connection's grant page: the connection as it is now, and the notebooks a
    grant may name."""

    connection: ConnectionOut
    notebooks: list[NotebookChoice]


def connection_editing(*, actor: Actor, connection_id: Any) -> ConnectionEditing:
    """What the grant page shows, read in one transaction (website owner only)."""
    with tenant(actor):
        return ConnectionEditing(
            connection=connection_get(actor=actor, connection_id=connection_id),
            notebooks=notebook_choices(actor=actor))
