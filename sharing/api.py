"""Share links over REST — the owner's website session only: API keys and OAuth tokens
get 403 `session_required` (SPEC §9)."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest
from ninja import Status

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
from sharing import selectors, services
from sharing.schemas import ShareIn, ShareOut

router = ApiRouter(tags=["shares"])


@router.post("/shares", auth=KEY_OR_SESSION,
             response={201: Ok[ShareOut], 200: Ok[ShareOut], **WRITE_ERRORS},
             summary="Publish a note or notebook as a read-only link (201; an existing live "
                     "link → 200). Website session only")
def share_create(request: HttpRequest, payload: ShareIn) -> Any:
    share, created = services.share_create(
        actor=actor_of(request), note_id=payload.note_id, notebook_id=payload.notebook_id,
        include_subnotebooks=payload.include_subnotebooks,
        allow_indexing=payload.allow_indexing)
    return Status(201 if created else 200, ok(share))


@router.get("/shares", auth=KEY_OR_SESSION, response={200: OkList[ShareOut], **ERRORS},
            summary="The live share links with view counts. Website session only")
def share_list(request: HttpRequest) -> Any:
    return listed(selectors.share_list(actor=actor_of(request)))


@router.post("/shares/{share_id}/revoke", auth=KEY_OR_SESSION,
             response={200: Ok[dict], **WRITE_ERRORS},
             summary="Revoke a link, at once and for good. Website session only")
def share_revoke(request: HttpRequest, share_id: uuid.UUID) -> Any:
    services.share_revoke(actor=actor_of(request), share_id=share_id)
    return ok({"revoked": True})
