"""Ask (SPEC §8): a question answered from the caller's notes, every claim citing the
exact note revision it used. Stateless here (`POST /v1/ask`, the `ask` MCP tool);
conversations build on the same function.

Evidence is recall's (grant-scoped, thresholded). No evidence → `no_evidence` without
calling the model. Generation off, or `mode=search` → the sources alone. Otherwise the
model's answer is checked against the evidence actually sent: a citation of anything
else — unknown, another account's, another version — is dropped and its block marked
unsupported, so an answer never links to a note the model was not shown.

Model output is untrusted (a note it read may carry instructions), so Grove, not the
model, decides what an answer's text may do: before any channel returns or stores it,
`answer_text` turns every markdown image into a link naming its host — answer markdown
may carry links and never images, so no client rendering it fetches anything by itself
(what PostgreSQL cannot hold is already out: `providers` cleans the model's JSON).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from ask import providers
from ask.models import Conversation, Turn
from ask.rules import (
    GENERATE,
    PREVIOUS_MAX,
    TURN_LIMIT,
    answer_text,
    clean_context,
    clean_query,
    clean_tidy,
    clean_title,
)
from ask.schemas import AnswerBlock, AskOut, ConversationOut, Source, TurnOut
from ask.selectors import (
    access_conversation,
    check_context,
    check_tidy,
    conversations_visible_to,
    retrieve,
)
from ask.selectors.proposals import places_for, plan, shown_of
from ask.services.budget import model_calls_charge, turn_model_calls
from grove.interfaces.rendering import shorten
from grove.kernel import jobs
from grove.kernel.actor import READ, Actor
from grove.kernel.errors import Conflict, Invalid, NotFound, Unavailable
from grove.kernel.fences import expect_version
from grove.kernel.operations import request_hash
from grove.kernel.tenancy import tenant
from notebooks.models import NegativeClaim
from notebooks.rules import EVERYWHERE, parse_uuid
from notebooks.selectors import negatives
from notebooks.selectors.access import resolve_scope


def evidence_of(sources: list[Source]) -> list[providers.Evidence]:
    return [providers.Evidence(cite_as=s.cite_as, content=s.note.content, kind=s.note.kind,
                               place="Personal" if s.note.notebook_id is None
                               else str(s.note.notebook_id), authority=s.authority,
                               known_false=tuple(k.claim for k in s.known_false),
                               via=_via(s, sources))
            for s in sources]


def _via(source: Source, sources: list[Source]) -> str:
    """The id the model knows a linked source's note by: the cite of the source it was
    reached from (its first, when a document gave several), else the bare note id."""
    if source.via is None:
        return ""
    return next((s.cite_as for s in sources if s.note.id == source.via), f"note:{source.via}")


def answered(draft: providers.Draft, sources: list[Source],
             known_false: list[NegativeClaim] | None = None) -> tuple[str, list[AnswerBlock]]:
    """The model's draft with its citations checked against the sources it was shown,
    each block checked against the claims known to be false (`contradictsKnownFalse`),
    and its text made safe to store and render (`answer_text`). Every channel — `ask`,
    `aask`, the conversation job — goes through here. Not in a transaction: the check
    may embed the blocks."""
    blocks = check_citations(draft.blocks, {s.cite_as for s in sources})
    if known_false:
        found = negatives.texts_matching([b.text for b in blocks], known_false)
        blocks = [b.model_copy(update={"contradicts_known_false": [k.claim for k in hits]})
                  if hits else b for b, hits in zip(blocks, found, strict=True)]
    status = draft.status if blocks or draft.status != "answered" else "insufficient_evidence"
    return status, blocks


@dataclass(frozen=True)
class _Prepared:
    question: str
    previous: list[str]
    sources: list[Source]
    done: AskOut | None  # the whole answer when no model call is needed
    places: list[providers.Place]  # the notebooks the model may name in proposals
    known_false: list[NegativeClaim]


def _prepare(*, actor: Actor, query: Any, notebook_id: Any, include_personal: bool,
             previous_questions: Any, mode: str) -> _Prepared:
    question = clean_query(query)
    if mode not in ("answer", "search"):
        raise Invalid("mode is answer or search.", code="invalid_mode")
    previous = list(previous_questions or [])
    if len(previous) > PREVIOUS_MAX:
        raise Invalid(f"At most {PREVIOUS_MAX} previous questions.", code="invalid_previous")
    previous = [clean_query(q) for q in previous]
    actor.require(READ)
    found = retrieve(actor=actor, question=question, notebook_id=notebook_id,
                     include_personal=include_personal)
    sources = found.sources
    done = None
    if found.uncovered and mode != "search":
        done = AskOut(status="not_covered", blocks=[], sources=sources)
    elif not sources:
        done = AskOut(status="no_evidence", blocks=[], sources=[])
    elif mode == "search":
        done = AskOut(status="search", blocks=[], sources=sources)
    elif not providers.configured():
        done = AskOut(status="disabled", blocks=[], sources=sources)
    else:  # the model will be asked: counted now, before it is
        model_calls_charge(actor=actor)
    return _Prepared(question=question, previous=previous, sources=sources, done=done,
                     places=places_for(actor, notebook_id) if done is None else [],
                     known_false=found.known_false)


def _answer(actor: Actor, prepared: _Prepared, draft: providers.Draft) -> AskOut:
    """The stateless answer: cited blocks, and its proposals as data (checked like a
    conversation's, never stored, never applied)."""
    status, blocks = answered(draft, prepared.sources, prepared.known_false)
    planned, dropped = plan(actor, draft.proposals, shown_of(
        actor, [s.note for s in prepared.sources], evidence_of(prepared.sources),
        prepared.places))
    return AskOut(status=status, blocks=blocks,  # type: ignore[arg-type]
                  sources=prepared.sources, proposals=[p.change for p in planned],
                  proposals_dropped=len(dropped))


def ask(*, actor: Actor, query: Any, notebook_id: Any = EVERYWHERE,
        include_personal: bool = True, previous_questions: Any = (),
        mode: str = "answer") -> AskOut:
    """Answer `query` from the caller's notes. `notebook_id`: omitted = everything
    granted, None = Personal only, else one notebook. Raises Invalid, NotFound (notebook),
    RateLimited (429 `model_budget_exceeded`: counted before the model is asked),
    Unavailable (503: `provider_unavailable`). Stores nothing."""
    prepared = _prepare(actor=actor, query=query, notebook_id=notebook_id,
                        include_personal=include_personal,
                        previous_questions=previous_questions, mode=mode)
    if prepared.done is not None:
        return prepared.done
    try:
        draft = providers.generate(prepared.question, evidence_of(prepared.sources),
                                   prepared.previous, places=prepared.places,
                                   known_false=[c.claim for c in prepared.known_false])
    except providers.ProviderUnavailable as exc:
        raise Unavailable(str(exc), code="provider_unavailable") from None
    return _answer(actor, prepared, draft)


async def aask(*, actor: Actor, query: Any, notebook_id: Any = EVERYWHERE,
               include_personal: bool = True, previous_questions: Any = (),
               mode: str = "answer") -> AskOut:
    """`ask` for async callers (`POST /v1/ask`): the database work runs in a thread, the
    model call on the async client, so a caller that hangs up cancels it (SPEC §8)."""
    from asgiref.sync import sync_to_async

    prepared = await sync_to_async(_prepare)(
        actor=actor, query=query, notebook_id=notebook_id, include_personal=include_personal,
        previous_questions=previous_questions, mode=mode)
    if prepared.done is not None:
        return prepared.done
    try:
        draft = await providers.agenerate(
            prepared.question, evidence_of(prepared.sources), prepared.previous,
            places=prepared.places, known_false=[c.claim for c in prepared.known_false])
    except providers.ProviderUnavailable as exc:
        raise Unavailable(str(exc), code="provider_unavailable") from None
    return await sync_to_async(_answer)(actor, prepared, draft)


def _scope_of(actor: Actor, notebook_id: Any) -> tuple[str, uuid.UUID | None]:
    """A new conversation's scope as it is stored, checked against the grant."""
    scope = resolve_scope(actor, notebook_id)
    if scope.everywhere:
        return Conversation.Scope.EVERYWHERE, None
    if scope.notebook is None:
        return Conversation.Scope.PERSONAL, None
    return Conversation.Scope.NOTEBOOK, scope.notebook.id


@dataclass(frozen=True)
class _NewConversation:
    key: uuid.UUID
    title: str
    include_personal: bool


def _conversation_args(conversation_id: Any, include_personal: Any,
                       title: Any) -> _NewConversation:
    key = parse_uuid(conversation_id, what="id")
    clean = clean_title(title)
    if not isinstance(include_personal, bool):
        raise Invalid("includePersonal is true or false.", code="invalid_include_personal")
    return _NewConversation(key=key, title=clean, include_personal=include_personal)


def _conversation_open(actor: Actor, args: _NewConversation, notebook_id: Any, *,
                       for_update: bool = False) -> tuple[Conversation, bool]:
    """Create the conversation, or replay it (caller holds a tenant transaction;
    `for_update`: a replayed one is locked)."""
    actor.require(READ)
    scope, notebook = _scope_of(actor, notebook_id)
    digest = request_hash("conversation.create", {
        "scope": scope, "notebook": notebook, "personal": args.include_personal,
        "title": args.title}, actor.connection_id)
    rows = conversations_visible_to(actor, hidden=True)
    if for_update:
        rows = rows.select_for_update()
    existing = rows.filter(client_id=args.key).first()
    if existing is not None:
        if existing.request_hash != digest or existing.deleted_at is not None:
            raise Conflict("This conversation id was already used for a different "
                           "conversation.", code="conversation_conflict")
        return existing, False
    now = timezone.now()
    try:
        with transaction.atomic():
            conversation = Conversation.objects.create(
                client_id=args.key, account_id=actor.account_id,
                connection_id=actor.connection_id, title=args.title, scope=scope,
                notebook_id=notebook, include_personal=args.include_personal,
                request_hash=digest, created_at=now, updated_at=now)
    except IntegrityError:  # a concurrent create took this id a moment ago
        raise Conflict("This conversation id is already in use.",
                       code="conversation_conflict") from None
    return conversation, True


def conversation_create(*, actor: Actor, conversation_id: Any, notebook_id: Any = EVERYWHERE,
                        include_personal: bool = True,
                        title: Any = None) -> tuple[ConversationOut, bool]:
    """Start a conversation under the client's UUID. Returns (conversation, created);
    the same UUID and payload again replays, anything else → 409."""
    args = _conversation_args(conversation_id, include_personal, title)
    with tenant(actor):
        conversation, created = _conversation_open(actor, args, notebook_id)
        return ConversationOut.of(conversation), created


@dataclass(frozen=True)
class _NewTurn:
    key: uuid.UUID
    question: str
    format: str
    expected_version: int
    context: dict[str, Any] | None
    tidy: dict[str, Any] | None


def _turn_args(turn_id: Any, query: Any, format: Any, expected_version: Any,
               context: Any, tidy: Any = None) -> _NewTurn:
    key = parse_uuid(turn_id, what="id")
    question = clean_query(query)
    if format not in Turn.Format.values:
        raise Invalid("format is plain or markdown.", code="invalid_format")
    if isinstance(expected_version, bool) or not isinstance(expected_version, int) \
            or expected_version < 0:
        raise Invalid("expectedVersion is the conversation version you last saw (a whole "
                      "number).", code="invalid_expected_version")
    return _NewTurn(key=key, question=question, format=format,
                    expected_version=expected_version, context=clean_context(context),
                    tidy=clean_tidy(tidy, context))


def _turn_add(actor: Actor, conversation: Conversation, args: _NewTurn) -> tuple[Turn, bool]:
    """Add the next turn to `conversation`, or replay it (caller holds a tenant
    transaction and the conversation's row lock). Enqueues its generation."""
    digest = request_hash("turn.submit", {
        "conversation": conversation.id, "query": args.question, "format": args.format,
        "expected": args.expected_version, "context": args.context,
        **({"tidy": args.tidy} if args.tidy else {})}, actor.connection_id)
    existing = Turn.objects.filter(client_id=args.key).first()
    if existing is not None:
        if existing.request_hash != digest:
            raise Conflict("This turn id was already used for a different question.",
                           code="turn_conflict")
        return existing, False
    expect_version(what="conversation", actual=conversation.version,
                   expected=args.expected_version, name_current=False,
                   message=f"The conversation is at version {conversation.version}, not "
                           f"{args.expected_version}: reload it and ask again.")
    if conversation.version >= TURN_LIMIT:
        raise Conflict(f"A conversation holds at most {TURN_LIMIT} turns; start a new "
                       "one.", code="turn_limit")
    check_context(actor, args.context)
    check_tidy(actor, args.tidy)
    position = conversation.version + 1
    model_calls_charge(actor=actor, calls=turn_model_calls(
        position=position, context=args.context, tidy=args.tidy))  # before it is queued
    now = timezone.now()
    try:
        with transaction.atomic():
            # Answered with the grant of whoever started the conversation, so
            # that a client never reads (or builds on) answers from notes outside
            # its grant, even when the owner asks in its conversation.
            turn = Turn.objects.create(
                client_id=args.key, account_id=actor.account_id, conversation=conversation,
                connection_id=conversation.connection_id, position=position,
                query=args.question, format=args.format, context=args.context,
                tidy=args.tidy, request_hash=digest, provider=providers.fingerprint(),
                created_at=now)
    except IntegrityError:
        raise Conflict("This turn id is already in use.", code="turn_conflict") from None
    conversation.version += 1
    conversation.updated_at = now
    if not conversation.title:
        conversation.title = shorten(" ".join(args.question.split()), 80)
    conversation.save(update_fields=["version", "updated_at", "title"])
    jobs.enqueue(account_id=actor.account_id, kind=GENERATE, target_id=turn.id)
    return turn, True


def turn_submit(*, actor: Actor, conversation_id: Any, turn_id: Any, query: Any,
                expected_version: Any, format: Any = "plain", context: Any = None,
                tidy: Any = None) -> tuple[TurnOut, bool]:
    """Ask the next question of a conversation. Returns (turn, created): a new turn is
    `pending` and its answer is generated in the background; the same turn UUID and
    payload again replays the turn as it is now. Its model calls are counted first
    (`budget`): over the budget → RateLimited, and nothing is stored or queued.
    `tidy`: `{"notebookId": id | None}` — the answer proposes merges and edits over
    that place's likely duplicates."""
    args = _turn_args(turn_id, query, format, expected_version, context, tidy)
    with tenant(actor):
        conversation = access_conversation(actor, conversation_id, for_update=True)
        turn, created = _turn_add(actor, conversation, args)
        return TurnOut.of(turn), created


def conversation_start(*, actor: Actor, conversation_id: Any, turn_id: Any, query: Any,
                       notebook_id: Any = EVERYWHERE, include_personal: bool = True,
                       title: Any = None, format: Any = "plain", expected_version: Any = 0,
                       context: Any = None,
                       tidy: Any = None) -> tuple[ConversationOut, TurnOut | None]:
    """A new conversation with its first question, in one transaction: the website's
    Start. The same ids and payload again replay (a double submit asks once); a
    conversation that already has turns is returned as it is (turn None). A refused
    first question (invalid, `context_unavailable`, a version conflict …) raises and
    stores nothing — no conversation is left behind. Enqueues the turn's generation."""
    conversation_args = _conversation_args(conversation_id, include_personal, title)
    turn_args = _turn_args(turn_id, query, format, expected_version, context, tidy)
    with tenant(actor):
        conversation, created = _conversation_open(actor, conversation_args, notebook_id,
                                                   for_update=True)
        turn = None
        if created or conversation.version == 0:
            turn, _ = _turn_add(actor, conversation, turn_args)
        return ConversationOut.of(conversation), TurnOut.of(turn) if turn else None


def turn_reask(*, actor: Actor, conversation_id: Any, turn_id: Any, new_turn_id: Any,
               expected_version: int | None = None) -> TurnOut:
    """Ask turn `turn_id`'s question again, with its format and source selection, as the
    next turn under `new_turn_id` (the notes it cited have changed). `expected_version`:
    the conversation version the caller saw (a stale one → 409 version_conflict), None =
    as it is now. A repeat with the same `new_turn_id` returns the turn it made.
    Enqueues the new turn's generation."""
    key = parse_uuid(turn_id, what="turn id")
    with tenant(actor):
        conversation = access_conversation(actor, conversation_id, for_update=True)
        asked = conversation.turns.filter(client_id=key).first()
        if asked is None:
            raise NotFound("No such turn.", code="turn_not_found")
        try:
            new_key = uuid.UUID(str(new_turn_id))
        except ValueError:
            raise Invalid("The re-ask form is not valid; reload the page.",
                          code="invalid_id") from None
        # A repeated click carries the same id: the turn it made is already there.
        made = conversation.turns.filter(client_id=new_key).first()
        if made is None:
            expected = conversation.version if expected_version is None else expected_version
            made, _ = _turn_add(actor, conversation, _turn_args(
                new_key, asked.query, asked.format, expected, asked.context, asked.tidy))
        return TurnOut.of(made)


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
        model_calls_charge(actor=actor, calls=turn_model_calls(
            position=turn.position, context=turn.context, tidy=turn.tidy))
        turn.status, turn.error_code, turn.error_message = Turn.Status.PENDING, "", ""
        turn.provider, turn.completed_at, turn.result = providers.fingerprint(), None, None
        turn.save(update_fields=["status", "error_code", "error_message", "provider",
                                 "completed_at", "result"])
        jobs.enqueue(account_id=actor.account_id, kind=GENERATE, target_id=turn.id)
        return TurnOut.of(turn)


def conversation_delete(*, actor: Actor, conversation_id: Any) -> None:
    """Hide a conversation (its rows are retained; its id stays taken)."""
    with tenant(actor):
        conversation = access_conversation(actor, conversation_id, for_update=True)
        conversation.deleted_at = timezone.now()
        conversation.save(update_fields=["deleted_at"])


def check_citations(drafted: list[providers.DraftBlock], allowed: set[str]) -> list[AnswerBlock]:
    blocks = []
    for block in drafted:
        kept = list(dict.fromkeys(c for c in block.citations if c in allowed))
        dropped = len(set(block.citations)) != len(kept)
        blocks.append(AnswerBlock(text=answer_text(block.text), citations=kept,
                                  supported=bool(kept) and not dropped))
    return blocks
