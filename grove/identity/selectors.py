"""Reads of core data."""

import uuid
from typing import Any

from django.apps import apps
from django.db.models import QuerySet

from grove.identity.schemas import AccountSettingsOut, ConnectionOut
from grove.kernel.actor import Actor
from grove.kernel.tenancy import tenant
from grove.models import Account, Connection


def account_exists() -> bool:
    """Whether the one-time owner setup has happened."""
    return Account.objects.exists()




def connection_list(*, actor: Actor, connection_id: Any = None) -> list[ConnectionOut]:
    """Every connection of the account (or just `connection_id`), newest first, OAuth
    clients with the hosts they send the owner back to (website owner only)."""
    from grove.identity.oauth import redirect_hosts

    actor.require_session()
    with tenant(actor):
        found = Connection.objects.filter(account_id=actor.account_id)
        if connection_id is not None:
            try:
                found = found.filter(id=uuid.UUID(str(connection_id)))
            except ValueError:
                return []
        rows = list(found.order_by("-created_at", "id"))
    hosts = redirect_hosts({row.oauth_client_id for row in rows if row.oauth_client_id})
    return [ConnectionOut.of(row, hosts.get(row.oauth_client_id or "")) for row in rows]


def connection_get(*, actor: Actor, connection_id: Any) -> ConnectionOut:
    """One connection of the account (website owner only); NotFound otherwise."""
    from grove.kernel.errors import NotFound

    found = connection_list(actor=actor, connection_id=connection_id)
    if not found:
        raise NotFound("No such connection.", code="not_found")
    return found[0]


def account_settings(*, actor: Actor) -> AccountSettingsOut:
    """The account's settings (any caller of the account may read them)."""
    account = Account.objects.get(id=actor.account_id)
    return AccountSettingsOut(username=account.username,
                              capture_paused=account.capture_paused_at is not None,
                              capture_paused_at=account.capture_paused_at)


def grantable_notebooks(actor: Actor) -> QuerySet[Any]:
    """The account's notebooks a connection's grant may name: every one not deleted.
    Core does not import feature apps, so the notebook model is resolved by name.
    Caller holds a tenant transaction."""
    notebook_model = apps.get_model("notebooks", "Notebook")
    return notebook_model.objects.filter(account_id=actor.account_id, deleted_at__isnull=True)
