"""Ask over REST: `POST /v1/ask` (stateless; nothing is stored) and conversations
(`/v1/conversations…`). Each route parses, calls one service and wraps the result."""

from __future__ import annotations

import json
import uuid
from typing import Annotated, Any, ClassVar

from django.http import HttpRequest, HttpResponse
from ninja import Query, Status
from pydantic import Field
from pydantic.json_schema import JsonDict

from ask import selectors, services
from ask.rules import PAGE
from ask.schemas import (
    AskIn,
    AskOut,
    ConversationCreateIn,
    ConversationDetail,
    ConversationFound,
    ConversationOut,
    EmptyIn,
    HistorySearchIn,
    ListFilters,
    ProposalOut,
    TurnIn,
    TurnOut,
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
    operation_id,
)
from grove.kernel.validation import NONBLANK_TEXT
from notebooks.schemas.arguments import Operated
from notebooks.schemas.notes import NoteOut
from notebooks.schemas.truth import PendingRef

router = ApiRouter(tags=["ask"])


class SessionHandoffIn(Operated):
    """A client session that ended (`grove hook session-end`, `pre-compact`)."""

    session_id: str = Field(min_length=1, max_length=200,
                            description="The client's session id: the handoff's task id.",
                            json_schema_extra={"pattern": NONBLANK_TEXT})
    client: str = Field(min_length=1, max_length=100, description="Which client, e.g. "
                        "claude-code: the note's source agent.",
                        json_schema_extra={"pattern": NONBLANK_TEXT})
    request: str = Field(default="", max_length=2000, description="The last request.")
    outcome: str = Field(default="", max_length=4000, description="How it ended.")
    files: list[Annotated[str, Field(max_length=500)]] = Field(
        default_factory=list, max_length=100, description="The files touched.")
    excerpt: str = Field(default="", max_length=12000,
                         description="The conversation, for the model's summary only "
                         "(never saved).")

    # What the service checks across fields: a session id and client that are not blank,
    # and a request or an outcome to hand over.
    openapi_rules: ClassVar[JsonDict] = {
        "anyOf": [{"required": [name], "properties": {name: {"pattern": NONBLANK_TEXT}}}
                  for name in ("request", "outcome")]}


@router.post("/handoffs/session", tags=["notes"],
             response={201: Ok[NoteOut], 200: Ok[NoteOut], 202: Ok[PendingRef],
                       **WRITE_ERRORS},
             summary="Save a client session's handoff (kind handoff, the session id as "
                     "its task id), summarised by the owner's model when there is one")
def session_handoff(request: HttpRequest, payload: SessionHandoffIn) -> Any:
    result = services.handoff_from_session(
        actor=actor_of(request), operation_id=operation_id(request, payload.operation_id),
        session_id=payload.session_id, client=payload.client, request=payload.request,
        outcome=payload.outcome, files=payload.files, excerpt=payload.excerpt)
    if result.note is None:
        return Status(202, ok(result.pending_revision))
    return Status(201 if result.created else 200, ok(result.note))


@router.post("/ask", response={200: Ok[AskOut], **ERRORS},
             summary="Ask: an answer from your notes, each block citing the exact note "
                     "revisions it used (or the sources alone when generation is off)")
async def ask(request: HttpRequest, payload: AskIn) -> Any:
    # Async: a caller that hangs up cancels the model call (aask).
    return ok(await services.aask(actor=actor_of(request), **payload.service_kwargs()))


@router.post("/conversations", auth=KEY_OR_SESSION,
             response={201: Ok[ConversationOut],
                       200: Ok[ConversationOut], **WRITE_ERRORS},
             summary="Start a conversation under your UUID (201; the same create again → 200)")
def conversation_create(request: HttpRequest, payload: ConversationCreateIn) -> Any:
    made, created = services.conversation_create(actor=actor_of(request),
                                                      **payload.service_kwargs())
    return Status(201 if created else 200, ok(made))


@router.get("/conversations", auth=KEY_OR_SESSION,
            response={200: OkList[ConversationOut], **ERRORS},
            summary="Your conversations, newest first, 30 per page (`after` = the last id)")
def conversation_list(request: HttpRequest, filters: Query[ListFilters]) -> Any:
    page, after, total = selectors.conversation_list(actor=actor_of(request),
                                                         after=filters.after)
    return listed(page, available=total,
                  limit=PAGE, next_cursor=str(after) if after else None)


@router.post("/conversations/search", auth=KEY_OR_SESSION,
             response={200: OkList[ConversationFound], **ERRORS},
             summary="History search: titles and questions containing the text (literal, "
                     "case-insensitive), newest first, by signed cursor")
def conversation_search(request: HttpRequest, payload: HistorySearchIn) -> Any:
    page, cursor, total = selectors.conversation_search(actor=actor_of(request),
                                                            query=payload.query,
                                                            cursor=payload.cursor)
    return listed(page, available=total,
                  limit=PAGE, next_cursor=cursor)


@router.get("/conversations/{conversation_id}", auth=KEY_OR_SESSION,
            response={200: Ok[ConversationDetail], **ERRORS},
            summary="A conversation with its turns")
def conversation_get(request: HttpRequest, conversation_id: uuid.UUID) -> Any:
    return ok(selectors.conversation_get(actor=actor_of(request),
                                             conversation_id=conversation_id))


@router.get("/conversations/{conversation_id}/export", auth=KEY_OR_SESSION,
            response={200: ConversationDetail, **ERRORS},
            summary="Download a conversation (turns, answers, sources and the source "
                    "selections) as JSON")
def conversation_export(request: HttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    detail = selectors.conversation_get(actor=actor_of(request),
                                            conversation_id=conversation_id)
    body = {"type": "grove-conversation", "format": 1, **detail.to_json()}
    response = HttpResponse(json.dumps(body, indent=2), content_type="application/json")
    response["Content-Disposition"] = \
        f'attachment; filename="grove-conversation-{conversation_id}.json"'
    return response


@router.delete("/conversations/{conversation_id}", auth=KEY_OR_SESSION,
               response={204: None, **WRITE_ERRORS},
               summary="Delete (hide) a conversation; it is retained, not shown")
def conversation_delete(request: HttpRequest, conversation_id: uuid.UUID) -> Any:
    services.conversation_delete(actor=actor_of(request),
                                      conversation_id=conversation_id)
    return Status(204, None)


@router.post("/conversations/{conversation_id}/turns", auth=KEY_OR_SESSION,
             response={202: Ok[TurnOut], 200: Ok[TurnOut],
                       **WRITE_ERRORS},
             summary="Ask the next question (202, pending; poll the turn). The same turn "
                     "id and body again → 200 with the turn as it is")
def turn_submit(request: HttpRequest, conversation_id: uuid.UUID, payload: TurnIn) -> Any:
    turn, created = services.turn_submit(actor=actor_of(request),
                                              conversation_id=conversation_id,
                                              **payload.service_kwargs())
    return Status(202 if created else 200, ok(turn))


@router.get("/conversations/{conversation_id}/turns/{turn_id}", auth=KEY_OR_SESSION,
            response={200: Ok[TurnOut], **ERRORS},
            summary="One turn: pending, completed (with its result) or failed (with a code)")
def turn_get(request: HttpRequest, conversation_id: uuid.UUID, turn_id: uuid.UUID) -> Any:
    return ok(selectors.turn_get(actor=actor_of(request), conversation_id=conversation_id,
                                     turn_id=turn_id))


@router.post("/conversations/{conversation_id}/turns/{turn_id}/retry", auth=KEY_OR_SESSION,
             response={202: Ok[TurnOut], **WRITE_ERRORS},
             summary="Generate a failed turn again")
def turn_retry(request: HttpRequest, conversation_id: uuid.UUID, turn_id: uuid.UUID) -> Any:
    return Status(202, ok(services.turn_retry(actor=actor_of(request),
                                                   conversation_id=conversation_id,
                                                   turn_id=turn_id)))


@router.post("/conversations/{conversation_id}/turns/{turn_id}/proposals/{proposal_id}/apply",
             auth=KEY_OR_SESSION, response={200: Ok[ProposalOut], **WRITE_ERRORS},
             summary="Apply a proposal exactly as previewed (the owner's session only; "
                     "body {}). Anything changed since the preview → 409 proposal_stale, "
                     "nothing written; a repeat returns the first result")
def proposal_apply(request: HttpRequest, conversation_id: uuid.UUID, turn_id: uuid.UUID,
                   proposal_id: uuid.UUID, payload: EmptyIn) -> Any:
    return ok(services.proposal_apply(actor=actor_of(request),
                                      conversation_id=conversation_id, turn_id=turn_id,
                                      proposal_id=proposal_id))


@router.post("/conversations/{conversation_id}/turns/{turn_id}/proposals/{proposal_id}/undo",
             auth=KEY_OR_SESSION, response={200: Ok[ProposalOut], **WRITE_ERRORS},
             summary="Undo an applied proposal: the earlier versions written back as new "
                     "revisions (the owner's session only; body {}). Anything touched since "
                     "the apply → 409 proposal_stale; a delete has no undo")
def proposal_undo(request: HttpRequest, conversation_id: uuid.UUID, turn_id: uuid.UUID,
                  proposal_id: uuid.UUID, payload: EmptyIn) -> Any:
    return ok(services.proposal_undo(actor=actor_of(request),
                                     conversation_id=conversation_id, turn_id=turn_id,
                                     proposal_id=proposal_id))
