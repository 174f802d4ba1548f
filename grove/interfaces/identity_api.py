"""REST routes for the owner's connections and account settings (website session or key):
identity's services and selectors behind the REST envelope and authentication of
`grove.interfaces.rest`, so on the interfaces' floor."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest
from ninja import Status

from grove.identity import selectors, services
from grove.identity.schemas import (
    AccountSettingsIn,
    AccountSettingsOut,
    ConnectionOut,
    ConnectionPatchIn,
    KeyCreateIn,
    NewKeyOut,
)
from grove.interfaces.rest import (
    ERRORS,
    KEY_OR_SESSION,
    WRITE_ERRORS,
    ApiRouter,
    Ok,
    OkList,
    actor_of,
    listed,
    ok,
)

router = ApiRouter(tags=["connections"])


@router.get("/connections", auth=KEY_OR_SESSION,
            response={200: OkList[ConnectionOut], **ERRORS},
            summary="List every connection (website session only)")
def connection_list(request: HttpRequest) -> Any:
    return listed(selectors.connection_list(actor=actor_of(request)))


@router.post("/connections/keys", auth=KEY_OR_SESSION,
             response={201: Ok[NewKeyOut], **WRITE_ERRORS},
             summary="Create an API key (website session only; the key is shown once)")
def connection_create_key(request: HttpRequest, payload: KeyCreateIn) -> Any:
    created = services.connection_create_key(
        actor=actor_of(request), name=payload.name, capabilities=payload.capabilities,
        personal=payload.personal, all_notebooks=payload.all_notebooks,
        notebooks=payload.notebooks)
    return Status(201, ok(created))


@router.patch("/connections/{connection_id}", auth=KEY_OR_SESSION,
              response={200: Ok[ConnectionOut], **WRITE_ERRORS},
              summary="Change a connection's name, capabilities or grant")
def connection_update(request: HttpRequest, connection_id: uuid.UUID,
                      payload: ConnectionPatchIn) -> Any:
    return ok(services.connection_update(
        actor=actor_of(request), connection_id=connection_id,
        expected_state=payload.expected_state,
        **payload.given("name", "capabilities", "personal", "all_notebooks", "notebooks"),
        home_notebook=payload.home_notebook_id
        if "home_notebook_id" in payload.model_fields_set else services.KEEP))


@router.post("/connections/{connection_id}/revoke", auth=KEY_OR_SESSION,
             response={200: Ok[ConnectionOut], **WRITE_ERRORS},
             summary="Revoke a connection for good")
def connection_revoke(request: HttpRequest, connection_id: uuid.UUID) -> Any:
    return ok(services.connection_revoke(actor=actor_of(request), connection_id=connection_id))


@router.get("/account/settings", tags=["account"], auth=KEY_OR_SESSION,
            response={200: Ok[AccountSettingsOut], **ERRORS},
            summary="Account settings (whether automatic capture is paused)")
def account_settings(request: HttpRequest) -> Any:
    return ok(selectors.account_settings(actor=actor_of(request)))


@router.patch("/account/settings", tags=["account"], auth=KEY_OR_SESSION,
              response={200: Ok[AccountSettingsOut], **WRITE_ERRORS},
              summary="Pause or resume automatic capture (website session only)")
def account_settings_update(request: HttpRequest, payload: AccountSettingsIn) -> Any:
    return ok(services.account_set_capture_paused(actor=actor_of(request),
                                                  paused=payload.capture_paused))
