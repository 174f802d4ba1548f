"""Shapes shared by services, REST and MCP across apps.

JSON is camelCase (SPEC §3); Python code uses the snake_case attribute names.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class In(BaseModel):
    """Arguments (a REST body, an MCP tool's arguments): camelCase on the wire, unknown
    fields refused."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def given(self, *names: str) -> dict[str, Any]:
        """The named fields the caller actually sent (omitted ≠ null)."""
        return {n: getattr(self, n) for n in names if n in self.model_fields_set}

    def not_null(self, *names: str) -> dict[str, Any]:
        """Sent fields, refusing null where the service has no null meaning."""
        from grove.kernel.errors import Invalid

        given = self.given(*names)
        for name, value in given.items():
            if value is None:
                raise Invalid(f"{name} cannot be null.", code="invalid_argument")
        return given


class Out(BaseModel):
    """A result: camelCase on the wire, immutable in Python."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True, frozen=True
    )

    def to_json(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)


class GrantOut(Out):
    personal: bool
    all_notebooks: bool
    notebooks: list[uuid.UUID]


class ConnectionOut(Out):
    id: uuid.UUID
    name: str
    kind: str  # api_key | oauth
    status: str  # pending | active | revoked
    capabilities: list[str]
    grant: GrantOut
    key_prefix: str | None
    created_at: datetime
    revoked_at: datetime | None
    last_contact_at: datetime | None
    # OAuth clients: the client id, where it sends the owner back after sign-in (anyone
    # can register as "Claude": the host tells them apart), and while pending the
    # outstanding approval request.
    client_id: str | None = None
    redirect_host: str | None = None
    pending_request_id: str | None = None
    # Fingerprint of status, capabilities and grant (not timestamps): send it back as
    # `expectedState` to change the connection only if nobody else did meanwhile.
    state: str

    @classmethod
    def of(cls, row: object, redirect_host: str | None = None) -> ConnectionOut:
        from grove.models import Connection

        assert isinstance(row, Connection)
        return cls(
            id=row.id, name=row.name, kind=row.kind, status=row.status,
            capabilities=sorted(row.capabilities),
            grant=GrantOut(personal=row.grant_personal, all_notebooks=row.grant_all,
                           notebooks=sorted(row.grant_notebooks, key=str)),
            key_prefix=row.key_prefix or None, created_at=row.created_at,
            revoked_at=row.revoked_at, last_contact_at=row.last_used_at,
            client_id=row.oauth_client_id, redirect_host=redirect_host,
            pending_request_id=(row.pending_request or {}).get("id"),
            state=connection_state(row),
        )


class NewKeyOut(Out):
    connection: ConnectionOut
    # The secret, shown once; only its hash is stored.
    key: str


def connection_state(row: object) -> str:
    import hashlib
    import json

    from grove.models import Connection

    assert isinstance(row, Connection)
    canonical = json.dumps({
        "status": row.status, "capabilities": sorted(row.capabilities),
        "personal": row.grant_personal, "all": row.grant_all,
        "notebooks": sorted(str(n) for n in row.grant_notebooks),
    }, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class AccountSettingsOut(Out):
    username: str
    # While paused, saves with capture "automatic" are refused (`capture_paused`).
    capture_paused: bool
    capture_paused_at: datetime | None
