"""Conversations (SPEC §8): durable Ask threads — the website's Ask mode and
`/v1/conversations…`.

* A conversation and each of its turns are created with the client's UUID. The same
  UUID with the same payload replays (nothing new happens); with anything else it
  conflicts (409), and nothing changes.
* A turn names the conversation version it expects (`expectedVersion`); accepting it
  advances the version. Refused turns — version conflict, the 100-turn limit, an
  unavailable source selection — leave the conversation exactly as it was.
* The answer is made by a background job (`ask.generation`), outside any transaction;
  the turn is `pending` until then, `completed` with its result or `failed` with a code
  (and can be retried).
* A conversation is visible to whoever started it: the owner's website session sees
  all of the account's; a connection only its own. Every turn is answered with the
  starter's grant (the owner asking in an agent's conversation included).
* History lists newest first in pages of 30 and searches titles and questions
  (literal, case-insensitive) with a signed cursor that keeps the exact timestamp of
  the last row, so deleting a row never shifts the next page. Deleting hides a
  conversation; its rows are retained.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from typing import Any, Literal

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ask import providers
from ask.models import TITLE_MAX_CHARS, Conversation, Turn
from ask.services import EVERYWHERE, AnswerBlock, clean_query
from grove.interfaces.rendering import shorten
from grove.kernel import jobs
from grove.kernel.actor import READ, Actor
from grove.kernel.errors import Conflict, Invalid, NotFound
from grove.kernel.operations import request_hash
from grove.kernel.paging import read_cursor, write_cursor
from grove.kernel.schemas import Out
from grove.kernel.tenancy import tenant
from grove.kernel.validation import storable_text
from notebooks.rules import parse_uuid
from notebooks.selectors.access import access_notebook, notebooks_visible_to, notes_visible_to

TURN_LIMIT = 100
HISTORY_TURNS = 8
PAGE = 30
SEARCH_MAX_CHARS = 200
CONTEXT_NOTES_MAX = 12
CONTEXT_NOTEBOOKS_MAX = 6
GENERATE = "ask.generate"
HISTORY_SALT = "grove.ask.history"


# -- shapes ------------------------------------------------------------------------------------


class ContextOut(Out):
    notes: list[uuid.UUID]
    notebooks: list[uuid.UUID]
    only: bool


class SourceOut(Out):
    """A note revision an answer was made from (stored with the turn)."""

    cite_as: str  # note:<uuid>@<version>
    note_id: uuid.UUID
    version: int
    kind: str
    notebook_id: uuid.UUID | None
    label: str  # the note's first line, shortened


class NotebookCoverage(Out):
    id: uuid.UUID
    name: str
    notes: int  # live notes in the notebook
    supplied: int  # of them, shown to the model
    searched: bool  # too many to show all: the best matches for the question were picked


class Coverage(Out):
    """How much of a source selection the answer saw."""

    notes_selected: int
    notes_supplied: int
    notebooks: list[NotebookCoverage]
    supplied: int
    truncated: int  # supplied notes cut to the per-note limit
    complete: bool


class TurnResult(Out):
    status: Literal["answered", "insufficient_evidence", "no_evidence", "disabled"]
    blocks: list[AnswerBlock]
    sources: list[SourceOut]
    context_coverage: Coverage | None = None
    # A follow-up resolved against the earlier turns, as used for retrieval.
    resolved_question: str | None = None


class TurnError(Out):
    code: str
    message: str


class TurnOut(Out):
    id: uuid.UUID
    conversation_id: uuid.UUID
    position: int
    query: str
    format: Literal["plain", "markdown"]
    context: ContextOut | None
    status: Literal["pending", "completed", "failed"]
    result: TurnResult | None
    error: TurnError | None
    created_at: datetime
    completed_at: datetime | None

    @classmethod
    def of(cls, turn: Turn) -> TurnOut:
        return cls(
            id=turn.client_id, conversation_id=turn.conversation.client_id,
            position=turn.position,
            query=turn.query, format=turn.format,  # type: ignore[arg-type]
            context=ContextOut.model_validate(turn.context) if turn.context else None,
            status=turn.status,  # type: ignore[arg-type]
            result=TurnResult.model_validate(turn.result) if turn.result else None,
            error=TurnError(code=turn.error_code, message=turn.error_message)
            if turn.status == Turn.Status.FAILED else None,
            created_at=turn.created_at, completed_at=turn.completed_at)


class ConversationOut(Out):
    id: uuid.UUID
    title: str
    notebook_id: uuid.UUID | None
    # everywhere = every granted notebook (+ Personal when includePersonal); personal;
    # notebook = the one named by notebookId.
    scope: Literal["everywhere", "personal", "notebook"]
    include_personal: bool
    version: int
    turn_count: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, conversation: Conversation) -> ConversationOut:
        return cls(id=conversation.client_id, title=conversation.title,
                   notebook_id=conversation.notebook_id,
                   scope=conversation.scope,  # type: ignore[arg-type]
                   include_personal=conversation.include_personal,
                   version=conversation.version, turn_count=conversation.version,
                   created_at=conversation.created_at, updated_at=conversation.updated_at)


class ConversationDetail(ConversationOut):
    turns: list[TurnOut]


class ConversationFound(Out):
    """A history search hit: no assistant payloads, only what the user wrote."""

    id: uuid.UUID
    title: str
    turn_count: int
    created_at: datetime
    updated_at: datetime
    matched_question: str | None  # the first question that matched, if any


# -- cleaning ----------------------------------------------------------------------------------


def clean_title(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Invalid("title must be text.", code="invalid_title")
    title = " ".join(storable_text(value, what="title", code="invalid_title").split())
    if len(title) > TITLE_MAX_CHARS:
        raise Invalid(f"A title is at most {TITLE_MAX_CHARS} characters.",
                      code="invalid_title")
    return title


def _unavailable(message: str) -> Conflict:
    return Conflict(message, code="context_unavailable")


def clean_context(value: Any) -> dict[str, Any] | None:
    """`{notes: [≤12], notebooks: [≤6], only}` with unique ids and at least one selector,
    normalised; anything else → 409 context_unavailable (SPEC §8)."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"notes", "notebooks", "only"}:
        raise _unavailable("context is {notes, notebooks, only}.")
    notes, notebooks = value.get("notes") or [], value.get("notebooks") or []
    only = value.get("only", False)
    if not isinstance(notes, list | tuple) or not isinstance(notebooks, list | tuple) \
            or not isinstance(only, bool):
        raise _unavailable("context.notes and context.notebooks are lists of ids; only is "
                           "true or false.")
    if len(notes) > CONTEXT_NOTES_MAX or len(notebooks) > CONTEXT_NOTEBOOKS_MAX:
        raise _unavailable(f"Select at most {CONTEXT_NOTES_MAX} notes and "
                           f"{CONTEXT_NOTEBOOKS_MAX} notebooks.")
    if not notes and not notebooks:
        raise _unavailable("Select at least one note or notebook.")
    try:
        note_ids = [uuid.UUID(str(n)) for n in notes]
        notebook_ids = [uuid.UUID(str(n)) for n in notebooks]
    except (ValueError, TypeError, AttributeError):
        raise _unavailable("Selected ids must be UUIDs.") from None
    if len(set(note_ids)) != len(note_ids) or len(set(notebook_ids)) != len(notebook_ids):
        raise _unavailable("Each note and notebook can be selected once.")
    return {"notes": [str(n) for n in note_ids], "notebooks": [str(n) for n in notebook_ids],
            "only": only}


def check_context(actor: Actor, context: dict[str, Any] | None) -> None:
    """Every selected note and notebook exists and is reachable by the caller (caller
    holds a tenant transaction); otherwise 409 context_unavailable."""
    if not context:
        return
    notes = notes_visible_to(actor).filter(id__in=context["notes"]).count()
    notebooks = notebooks_visible_to(actor).filter(id__in=context["notebooks"]).count()
    if notes != len(context["notes"]) or notebooks != len(context["notebooks"]):
        raise _unavailable("A selected note or notebook does not exist or is not "
                           "reachable.")


def _scope_of(actor: Actor, notebook_id: Any) -> tuple[str, uuid.UUID | None]:
    if notebook_id is EVERYWHERE:
        return Conversation.Scope.EVERYWHERE, None
    if notebook_id is None:
        return Conversation.Scope.PERSONAL, None
    return Conversation.Scope.NOTEBOOK, access_notebook(actor, notebook_id).id


def scope_of(conversation: Conversation) -> Any:
    """The conversation's notebook argument for retrieval (see services.retrieve)."""
    if conversation.scope == Conversation.Scope.EVERYWHERE:
        return EVERYWHERE
    return conversation.notebook_id


# -- access ------------------------------------------------------------------------------------


def _conversations(actor: Actor, *, hidden: bool = False) -> Any:
    rows = Conversation.objects.all()
    if not hidden:
        rows = rows.filter(deleted_at__isnull=True)
    if actor.connection_id is not None:
        rows = rows.filter(connection_id=actor.connection_id)
    return rows


def access_conversation(actor: Actor, conversation_id: Any, *,
                        for_update: bool = False) -> Conversation:
    """The conversation if the actor may see it (caller holds a tenant transaction)."""
    actor.require(READ)
    key = parse_uuid(conversation_id, what="conversation id")
    rows = _conversations(actor)
    if for_update:
        rows = rows.select_for_update()
    conversation = rows.filter(client_id=key).first()
    if conversation is None:
        raise NotFound("No such conversation.", code="conversation_not_found")
    return conversation


# -- services ----------------------------------------------------------------------------------


def conversation_create(*, actor: Actor, conversation_id: Any, notebook_id: Any = EVERYWHERE,
                        include_personal: bool = True,
                        title: Any = None) -> tuple[ConversationOut, bool]:
    """Start a conversation under the client's UUID. Returns (conversation, created);
    the same UUID and payload again replays, anything else → 409."""
    key = parse_uuid(conversation_id, what="id")
    clean = clean_title(title)
    if not isinstance(include_personal, bool):
        raise Invalid("includePersonal is true or false.", code="invalid_include_personal")
    with tenant(actor):
        actor.require(READ)
        scope, notebook = _scope_of(actor, notebook_id)
        digest = request_hash("conversation.create", {
            "scope": scope, "notebook": notebook, "personal": include_personal,
            "title": clean}, actor.connection_id)
        existing = _conversations(actor, hidden=True).filter(client_id=key).first()
        if existing is not None:
            if existing.request_hash != digest or existing.deleted_at is not None:
                raise Conflict("This conversation id was already used for a different "
                               "conversation.", code="conversation_conflict")
            return ConversationOut.of(existing), False
        now = timezone.now()
        try:
            with transaction.atomic():
                conversation = Conversation.objects.create(
                    client_id=key, account_id=actor.account_id, connection_id=actor.connection_id,
                    title=clean, scope=scope, notebook_id=notebook,
                    include_personal=include_personal, request_hash=digest, created_at=now,
                    updated_at=now)
        except IntegrityError:  # a concurrent create took this id a moment ago
            raise Conflict("This conversation id is already in use.",
                           code="conversation_conflict") from None
        return ConversationOut.of(conversation), True


def turn_submit(*, actor: Actor, conversation_id: Any, turn_id: Any, query: Any,
                expected_version: Any, format: Any = "plain",
                context: Any = None) -> tuple[TurnOut, bool]:
    """Ask the next question of a conversation. Returns (turn, created): a new turn is
    `pending` and its answer is generated in the background; the same turn UUID and
    payload again replays the turn as it is now."""
    key = parse_uuid(turn_id, what="id")
    question = clean_query(query)
    if format not in Turn.Format.values:
        raise Invalid("format is plain or markdown.", code="invalid_format")
    if isinstance(expected_version, bool) or not isinstance(expected_version, int) \
            or expected_version < 0:
        raise Invalid("expectedVersion is the conversation version you last saw (a whole "
                      "number).", code="invalid_expected_version")
    selection = clean_context(context)
    with tenant(actor):
        conversation = access_conversation(actor, conversation_id, for_update=True)
        digest = request_hash("turn.submit", {
            "conversation": conversation.id, "query": question, "format": format,
            "expected": expected_version, "context": selection}, actor.connection_id)
        existing = Turn.objects.filter(client_id=key).first()
        if existing is not None:
            if existing.request_hash != digest:
                raise Conflict("This turn id was already used for a different question.",
                               code="turn_conflict")
            return TurnOut.of(existing), False
        if expected_version != conversation.version:
            raise Conflict(f"The conversation is at version {conversation.version}, not "
                           f"{expected_version}: reload it and ask again.",
                           code="version_conflict")
        if conversation.version >= TURN_LIMIT:
            raise Conflict(f"A conversation holds at most {TURN_LIMIT} turns; start a new "
                           "one.", code="turn_limit")
        check_context(actor, selection)
        now = timezone.now()
        try:
            with transaction.atomic():
                # Answered with the grant of whoever started the conversation, so
                # that a client never reads (or builds on) answers from notes outside
                # its grant, even when the owner asks in its conversation.
                turn = Turn.objects.create(
                    client_id=key, account_id=actor.account_id, conversation=conversation,
                    connection_id=conversation.connection_id,
                    position=conversation.version + 1,
                    query=question, format=format, context=selection, request_hash=digest,
                    provider=providers.fingerprint(), created_at=now)
        except IntegrityError:
            raise Conflict("This turn id is already in use.", code="turn_conflict") from None
        conversation.version += 1
        conversation.updated_at = now
        if not conversation.title:
            conversation.title = shorten(" ".join(question.split()), 80)
        conversation.save(update_fields=["version", "updated_at", "title"])
        jobs.enqueue(account_id=actor.account_id, kind=GENERATE, target_id=turn.id)
        return TurnOut.of(turn), True




def turn_retry(*, actor: Actor, conversation_id: Any, turn_id: Any) -> TurnOut:
    """Generate a failed turn's answer again (with the provider configured now)."""
    key = parse_uuid(turn_id, what="turn id")
    with tenant(actor):
        conversation = access_conversation(actor, conversation_id, for_update=True)
        turn = Turn.objects.select_for_update().filter(client_id=key, conversation=conversation)\
            .first()
        if turn is None:
            raise NotFound("No such turn.", code="turn_not_found")
        if turn.status != Turn.Status.FAILED:
            raise Conflict("Only a failed turn can be retried.", code="turn_not_failed")
        turn.status, turn.error_code, turn.error_message = Turn.Status.PENDING, "", ""
        turn.provider, turn.completed_at, turn.result = providers.fingerprint(), None, None
        turn.save(update_fields=["status", "error_code", "error_message", "provider",
                                 "completed_at", "result"])
        jobs.enqueue(account_id=actor.account_id, kind=GENERATE, target_id=turn.id)
        return TurnOut.of(turn)


def conversation_get(*, actor: Actor, conversation_id: Any) -> ConversationDetail:
    with tenant(actor):
        conversation = access_conversation(actor, conversation_id)
        turns = [TurnOut.of(t) for t in conversation.turns.order_by("position")]
    return ConversationDetail(**ConversationOut.of(conversation).model_dump(), turns=turns)


def turn_get(*, actor: Actor, conversation_id: Any, turn_id: Any) -> TurnOut:
    key = parse_uuid(turn_id, what="turn id")
    with tenant(actor):
        conversation = access_conversation(actor, conversation_id)
        turn = conversation.turns.filter(client_id=key).first()
        if turn is None:
            raise NotFound("No such turn.", code="turn_not_found")
        return TurnOut.of(turn)


def conversation_delete(*, actor: Actor, conversation_id: Any) -> None:
    """Hide a conversation (its rows are retained; its id stays taken)."""
    with tenant(actor):
        conversation = access_conversation(actor, conversation_id, for_update=True)
        conversation.deleted_at = timezone.now()
        conversation.save(update_fields=["deleted_at"])


def conversation_list(*, actor: Actor, after: Any = None
                      ) -> tuple[list[ConversationOut], uuid.UUID | None, int]:
    """Newest first, 30 per page; `after` is the last id of the previous page (it may
    have been deleted since). Returns (page, the id to pass as `after` or None, how
    many conversations there are in all)."""
    with tenant(actor):
        actor.require(READ)
        rows = _conversations(actor).order_by("-created_at", "-id")
        total = rows.count()
        if after is not None:
            key = parse_uuid(after, what="after")
            mark = _conversations(actor, hidden=True).filter(client_id=key)\
                .values_list("created_at", "id").first()
            if mark is None:
                raise Invalid("after names no conversation of yours.", code="invalid_after")
            rows = rows.filter(Q(created_at__lt=mark[0]) | Q(created_at=mark[0], id__lt=mark[1]))
        page = list(rows[:PAGE + 1])
    more = len(page) > PAGE
    page = page[:PAGE]
    return [ConversationOut.of(c) for c in page], (page[-1].client_id if more else None), total


def conversation_search(*, actor: Actor, query: Any = None, cursor: Any = None
                        ) -> tuple[list[ConversationFound], str | None, int]:
    """History search: conversations whose title or any question contains `query`
    (literal, case-insensitive; omitted = all), newest first, 30 per page. The cursor
    is signed, bound to the account, the caller and the query, and keeps the last
    row's exact timestamp. Returns (page, next cursor or None, matches in all)."""
    text = ""
    if query is not None:
        if not isinstance(query, str):
            raise Invalid("query must be text.", code="invalid_query")
        text = storable_text(query, what="query", code="invalid_query").strip()
        if len(text) > SEARCH_MAX_CHARS:
            raise Invalid(f"A history search is at most {SEARCH_MAX_CHARS} characters.",
                          code="invalid_query")
    fingerprint = hashlib.sha256(f"history\n{text}".encode()).hexdigest()
    ceiling, last = read_cursor(actor, cursor, fingerprint, salt=HISTORY_SALT)
    with tenant(actor):
        actor.require(READ)
        now = timezone.now()
        rows = _conversations(actor)
        if text:
            asked = Turn.objects.filter(query__icontains=text).values("conversation_id")
            rows = rows.filter(Q(title__icontains=text) | Q(id__in=asked))
        if ceiling is not None:
            rows = rows.filter(created_at__lte=ceiling)
        total = rows.count()
        if last is not None:
            at, key = parse_datetime(str(last[0])), uuid.UUID(str(last[1]))
            rows = rows.filter(Q(created_at__lt=at) | Q(created_at=at, id__lt=key))
        page = list(rows.order_by("-created_at", "-id")[:PAGE + 1])
        matched: dict[uuid.UUID, str] = {}
        if text and page:
            for conversation_id, asked_text in Turn.objects.filter(
                    conversation_id__in=[c.id for c in page[:PAGE]],
                    query__icontains=text).order_by("-position")\
                    .values_list("conversation_id", "query"):
                matched[conversation_id] = asked_text[:SEARCH_MAX_CHARS]
    more = len(page) > PAGE
    page = page[:PAGE]
    found = [ConversationFound(id=c.client_id, title=c.title, turn_count=c.version,
                               created_at=c.created_at, updated_at=c.updated_at,
                               matched_question=matched.get(c.id)) for c in page]
    next_cursor = None
    if more:
        next_cursor = write_cursor(actor, fingerprint, ceiling or now,
                                   [page[-1].created_at.isoformat(), str(page[-1].id)],
                                   salt=HISTORY_SALT)
    return found, next_cursor, total
