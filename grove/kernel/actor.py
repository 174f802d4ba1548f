"""The resolved caller (STYLE §2). Built once per request by the interface that
authenticated it, then handed to every service and selector as `actor=`."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from grove.kernel.errors import Forbidden

READ = "memory:read"
WRITE = "memory:write"
ALL_CAPABILITIES = frozenset({READ, WRITE})

Via = Literal["session", "connection", "system"]


@dataclass(frozen=True)
class Grant:
    """What an actor may see: personal notes, and all notebooks or exactly a set."""

    personal: bool
    all_notebooks: bool
    notebooks: frozenset[uuid.UUID] = field(default_factory=frozenset)

    @classmethod
    def everything(cls) -> Grant:
        return cls(personal=True, all_notebooks=True)

    def allows(self, notebook_id: uuid.UUID | None) -> bool:
        """Is the notebook (None = Personal) inside this grant? Never inherits down the tree."""
        if notebook_id is None:
            return self.personal
        return self.all_notebooks or notebook_id in self.notebooks


@dataclass(frozen=True)
class Actor:
    account_id: uuid.UUID
    via: Via
    capabilities: frozenset[str]
    grant: Grant
    connection_id: uuid.UUID | None = None
    # A connection's home notebook, while its grant holds it — or the notebook its
    # project names for this request (`at_home`): where writes go and what reads cover
    # (with Personal) when they name no notebook. None: Personal, and everything granted.
    home: uuid.UUID | None = None
    # A project named by the request (`X-Grove-Project`) that is yet to be read as a home
    # (`grove.identity.selectors.actor_for_project`): where a tool call names none.
    project: str | None = None

    @classmethod
    def for_session(cls, account_id: uuid.UUID) -> Actor:
        """The owner in the website: everything, including account administration."""
        return cls(
            account_id=account_id, via="session", capabilities=ALL_CAPABILITIES,
            grant=Grant.everything(),
        )

    @classmethod
    def system(cls, account_id: uuid.UUID) -> Actor:
        """Background work on behalf of one account (periodic jobs, workers)."""
        return cls(
            account_id=account_id, via="system", capabilities=ALL_CAPABILITIES,
            grant=Grant.everything(),
        )

    @classmethod
    def for_connection(cls, connection: object) -> Actor:
        """An API key or OAuth client, from its database row (read on every request)."""
        from grove.models import Connection

        assert isinstance(connection, Connection)
        if connection.status != Connection.Status.ACTIVE:
            raise Forbidden("This connection is not active.", code="connection_inactive")
        return cls.of_active_connection(
            account_id=connection.account_id, connection_id=connection.id,
            capabilities=connection.capabilities, personal=connection.grant_personal,
            all_notebooks=connection.grant_all, notebooks=connection.grant_notebooks,
            home=connection.home_notebook_id)

    @classmethod
    def of_active_connection(cls, *, account_id: uuid.UUID, connection_id: uuid.UUID,
                             capabilities: Iterable[str], personal: bool, all_notebooks: bool,
                             notebooks: Iterable[uuid.UUID],
                             home: uuid.UUID | None = None) -> Actor:
        """An active connection's actor, from its row's fields (the caller checked that
        it is active). Its home counts only while the grant holds it."""
        grant = Grant(personal=personal, all_notebooks=all_notebooks,
                      notebooks=frozenset(notebooks))
        return cls(
            account_id=account_id, via="connection", connection_id=connection_id,
            capabilities=frozenset(capabilities) & ALL_CAPABILITIES, grant=grant,
            home=home if home is not None and grant.allows(home) else None,
        )

    def at_home(self, notebook_id: uuid.UUID) -> Actor:
        """This actor with `notebook_id` as its home for one request (a project it named;
        the caller checked that the grant holds it)."""
        return replace(self, home=notebook_id, project=None)

    def naming(self, project: str | None) -> Actor:
        """This actor with the project its request names, to be read later."""
        return self if project is None else replace(self, project=project)

    @property
    def is_session(self) -> bool:
        return self.via == "session"

    def require(self, capability: str) -> None:
        if capability not in self.capabilities:
            raise Forbidden(
                f"This connection lacks the {capability} capability.",
                code="insufficient_capability",
            )

    def require_session(self) -> None:
        """Account administration is reserved to the owner's website session (SPEC §5)."""
        if not self.is_session:
            raise Forbidden(
                "Only the account owner, signed in to the website, can do this.",
                code="session_required",
            )
