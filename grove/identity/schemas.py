"""Shapes of identity: connections, their grants, new keys and account settings (REST and
the owner's pages share them). JSON is camelCase (SPEC §3).
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field
from pydantic.json_schema import JsonDict

from grove.kernel.schemas import In, Out, Uuid
from grove.kernel.validation import NONBLANK_TEXT


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
    # Where its writes go and what its reads cover by default (with Personal); None:
    # Personal, and everything granted.
    home_notebook_id: uuid.UUID | None = None
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
            home_notebook_id=row.home_notebook_id, state=connection_state(row),
        )


class NewKeyOut(Out):
    connection: ConnectionOut
    # The secret, shown once; only its hash is stored.
    key: str


def connection_state(row: object) -> str:
    import hashlib

    from grove.models import Connection

    assert isinstance(row, Connection)
    canonical = json.dumps({
        "status": row.status, "capabilities": sorted(row.capabilities),
        "personal": row.grant_personal, "all": row.grant_all,
        "notebooks": sorted(str(n) for n in row.grant_notebooks),
        **({"home": str(row.home_notebook_id)} if row.home_notebook_id else {}),
    }, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class SecretPatternOut(Out):
    name: str
    pattern: str


class AccountSettingsOut(Out):
    username: str
    # While paused, saves with capture "automatic" are refused (`capture_paused`).
    capture_paused: bool
    capture_paused_at: datetime | None
    # The IANA zone the website shows times in (set on the Settings page).
    time_zone: str
    # What a save does with a credential, by where the text comes from: "redact" or
    # "refuse" (grove.kernel.credentials), and the owner's own patterns.
    secrets_on_ingest: str
    secrets_on_automatic: str
    secrets_on_explicit: str
    # The owner's own patterns: for the owner's session only (left out for connections).
    secret_patterns: list[SecretPatternOut] | None = Field(
        default=None, exclude_if=lambda v: v is None)

    @classmethod
    def of(cls, account: Any) -> AccountSettingsOut:
        return cls(username=account.username,
                   capture_paused=account.capture_paused_at is not None,
                   capture_paused_at=account.capture_paused_at,
                   time_zone=account.time_zone,
                   secrets_on_ingest=account.secrets_on_ingest,
                   secrets_on_automatic=account.secrets_on_automatic,
                   secrets_on_explicit=account.secrets_on_explicit,
                   secret_patterns=[SecretPatternOut(**item)
                                    for item in account.secret_patterns])


# What the services check across fields, for the OpenAPI document
# (grove.interfaces.rest): a grant names every notebook or a list, not both.
_ALL_OR_LIST: JsonDict = {"not": {
    "required": ["allNotebooks", "notebooks"],
    "properties": {"allNotebooks": {"const": True}, "notebooks": {"minItems": 1}}}}
_NAME: JsonDict = {"pattern": NONBLANK_TEXT}
Capabilities = Annotated[list[Literal["memory:read", "memory:write"]], Field(min_length=1)]


class KeyCreateIn(In):
    name: str = Field(max_length=200, json_schema_extra=_NAME)
    capabilities: Capabilities = ["memory:read", "memory:write"]
    personal: bool = False
    all_notebooks: bool = False
    notebooks: list[Uuid] = Field(default_factory=list, max_length=1000)

    openapi_rules: ClassVar[JsonDict] = _ALL_OR_LIST


class ConnectionPatchIn(In):
    expected_state: str = Field(min_length=1, max_length=64)
    name: str | None = Field(default=None, max_length=200, json_schema_extra=_NAME)
    capabilities: Capabilities | None = None
    personal: bool | None = None
    all_notebooks: bool | None = None
    notebooks: list[Uuid] | None = Field(default=None, max_length=1000)
    home_notebook_id: Uuid | None = Field(
        default=None, description="Its home notebook (granted to it): where its writes go "
        "and what its reads cover with Personal, when they name no notebook; null: none.")

    openapi_rules: ClassVar[JsonDict] = _ALL_OR_LIST


class AccountSettingsIn(In):
    capture_paused: bool
