"""REST routes for what agents read first (SPEC §10): visions, the brief, recent activity
and who-am-I (`/v1`, see `grove.interfaces.rest`). Each route parses, calls one service
or selector, and answers in the envelope; the `brief`, `recent_activity`, `whoami` and
`update_vision` tools (notebooks/mcp_context.py) call the same functions with the same
argument shapes.

Registered before `notebooks.api` (grove/urls.py): its `/notebooks/{id}/{action}` pattern
would otherwise answer `/notebooks/{id}/vision` with 405.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest
from ninja import Query

from grove.interfaces.rest import (
    ERRORS,
    WRITE_ERRORS,
    ApiRouter,
    Ok,
    OkList,
    actor_of,
    listed,
    ok,
    operation_id,
)
from notebooks import selectors, services
from notebooks.schemas.briefs import (
    ActivityItem,
    ActivityQuery,
    BriefOut,
    BriefQuery,
    VisionIn,
    VisionOut,
    VisionRevisionOut,
    WhoamiOut,
)
from notebooks.schemas.truth import TruthOut, TruthQuery

router = ApiRouter()

# -- vision ------------------------------------------------------------------------------------


def _vision_put(request: HttpRequest, notebook_id: uuid.UUID | None, payload: VisionIn) -> Any:
    return ok(services.vision_update(
        actor=actor_of(request), operation_id=operation_id(request, payload.operation_id),
        notebook_id=notebook_id, content=payload.content,
        expected_version=payload.expected_version))


@router.get("/vision", tags=["vision"], response={200: Ok[VisionOut], **ERRORS},
            summary="The account's vision (version 0: none yet)")
def vision_account(request: HttpRequest) -> Any:
    return ok(selectors.vision_get(actor=actor_of(request)))


@router.put("/vision", tags=["vision"], response={200: Ok[VisionOut], **WRITE_ERRORS},
            summary="Replace the account's vision (a new version; empty clears it)")
def vision_account_put(request: HttpRequest, payload: VisionIn) -> Any:
    """A connection needs every notebook and Personal: this vision heads every brief."""
    return _vision_put(request, None, payload)


@router.get("/vision/revisions", tags=["vision"],
            response={200: OkList[VisionRevisionOut], **ERRORS},
            summary="The account's vision as it was, newest first")
def vision_account_revisions(request: HttpRequest) -> Any:
    return listed(selectors.vision_revisions(actor=actor_of(request)))


@router.get("/notebooks/{notebook_id}/vision", tags=["vision"],
            response={200: Ok[VisionOut], **ERRORS}, summary="A notebook's vision")
def vision_notebook(request: HttpRequest, notebook_id: uuid.UUID) -> Any:
    return ok(selectors.vision_get(actor=actor_of(request), notebook_id=notebook_id))


@router.put("/notebooks/{notebook_id}/vision", tags=["vision"],
            response={200: Ok[VisionOut], **WRITE_ERRORS},
            summary="Replace a notebook's vision (a new version; empty clears it)")
def vision_notebook_put(request: HttpRequest, notebook_id: uuid.UUID,
                        payload: VisionIn) -> Any:
    return _vision_put(request, notebook_id, payload)


@router.get("/notebooks/{notebook_id}/vision/revisions", tags=["vision"],
            response={200: OkList[VisionRevisionOut], **ERRORS},
            summary="A notebook's vision as it was, newest first")
def vision_notebook_revisions(request: HttpRequest, notebook_id: uuid.UUID) -> Any:
    return listed(selectors.vision_revisions(actor=actor_of(request),
                                             notebook_id=notebook_id))


# -- ground truth ------------------------------------------------------------------------------


@router.get("/truth", tags=["truth"], response={200: Ok[TruthOut], **ERRORS},
            summary="The account's declared ground truth and negative claims")
def truth_account(request: HttpRequest, arguments: Query[TruthQuery]) -> Any:
    """Unranked: the declared notes in declaration order (a manifest, or `full=true`)."""
    return ok(selectors.truth_get(actor=actor_of(request), full=arguments.full))


@router.get("/notebooks/{notebook_id}/truth", tags=["truth"],
            response={200: Ok[TruthOut], **ERRORS},
            summary="A notebook's ground truth: its own, inherited from the account, or none")
def truth_notebook(request: HttpRequest, notebook_id: uuid.UUID,
                   arguments: Query[TruthQuery]) -> Any:
    """`state` says which holds; the declared notes this caller may read follow, and
    `withheld` counts the rest. Negatives: the account's and the notebook's."""
    return ok(selectors.truth_get(actor=actor_of(request), notebook_id=notebook_id,
                                  full=arguments.full))


# -- the first read ----------------------------------------------------------------------------


@router.get("/brief", tags=["brief"], response={200: Ok[BriefOut], **ERRORS},
            summary="The brief: vision, handoffs, recent changes and the notes that apply, "
                    "within a token budget")
def brief(request: HttpRequest, arguments: Query[BriefQuery]) -> Any:
    """`data.meta` counts what was returned in full, indexed and dropped, with their ids;
    `format=markdown` (default) gives one document, `format=json` its parts."""
    return ok(selectors.brief_get(actor=actor_of(request), **arguments.service_kwargs()))


@router.get("/activity", tags=["brief"], response={200: OkList[ActivityItem], **ERRORS},
            summary="Recent activity: revisions in scope since a time, newest first, with "
                    "who made them")
def activity(request: HttpRequest, arguments: Query[ActivityQuery]) -> Any:
    page = selectors.activity_list(actor=actor_of(request), **arguments.service_kwargs())
    return ok(page.data, meta=page.meta)


@router.get("/whoami", tags=["brief"], response={200: Ok[WhoamiOut], **ERRORS},
            summary="Who am I: this connection's name, capabilities and grant")
def whoami(request: HttpRequest) -> Any:
    return ok(selectors.whoami(actor=actor_of(request)))
