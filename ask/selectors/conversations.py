"""Ask's reads (SPEC §8): conversations and their turns as their starter may see them,
history (list and search), the evidence for a question, and what the Ask pages show.
The rules of conversations — written by `ask.services`:

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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q
from django.utils import timezone

from ask.models import Conversation, Turn
from ask.rules import (
    CONTEXT_NOTES_MAX,
    EVIDENCE_LIMIT,
    EVIDENCE_MAX_CHARS,
    PAGE,
    SEARCH_MAX_CHARS,
    context_unavailable,
    personal_in,
)
from ask.schemas import (
    ConversationDetail,
    ConversationFound,
    ConversationOut,
    ConversationPage,
    Source,
    TurnOut,
)
from ask.selectors.citations import with_changes
from ask.selectors.proposal_state import proposals_of
from grove.kernel.actor import READ, Actor
from grove.kernel.errors import Forbidden, NotFound
from grove.kernel.paging import caller_binding, cursor_after, cursor_read, keyset_page
from grove.kernel.tenancy import tenant
from grove.kernel.validation import clean_text
from notebooks.models import NegativeClaim
from notebooks.rules import EVERYWHERE, parse_uuid
from notebooks.schemas.notes import NoteOut
from notebooks.selectors import recall, search
from notebooks.selectors.access import notebooks_visible_to, notes_visible_to, resolve_scope
from notebooks.selectors.truth import known_false

HISTORY_SALT = "grove.ask.history"


# -- cleaning ----------------------------------------------------------------------------------


def check_context(actor: Actor, context: dict[str, Any] | None) -> None:
    """Every selected note and notebook exists and is reachable by the caller (caller
    holds a tenant transaction); otherwise 409 context_unavailable."""
    if not context:
        return
    notes = notes_visible_to(actor).filter(id__in=context["notes"]).count()
    notebooks = notebooks_visible_to(actor).filter(id__in=context["notebooks"]).count()
    if notes != len(context["notes"]) or notebooks != len(context["notebooks"]):
        raise context_unavailable("A selected note or notebook does not exist or is not "
                           "reachable.")


def check_tidy(actor: Actor, tidy: dict[str, Any] | None) -> None:
    """The place a tidy-up names is reachable by the caller (caller holds a tenant
    transaction); otherwise 409 context_unavailable."""
    if not tidy:
        return
    try:
        resolve_scope(actor, tidy["notebookId"])
    except (NotFound, Forbidden):
        raise context_unavailable("The notebook to tidy does not exist or is not "
                                  "reachable.") from None


# -- access ------------------------------------------------------------------------------------


def conversations_visible_to(actor: Actor, *, hidden: bool = False) -> Any:
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
    rows = conversations_visible_to(actor)
    if for_update:
        rows = rows.select_for_update()
    conversation = rows.filter(client_id=key).first()
    if conversation is None:
        raise NotFound("No such conversation.", code="conversation_not_found")
    return conversation


# -- services ----------------------------------------------------------------------------------


def _detail(actor: Actor, conversation_id: Any) -> ConversationDetail:
    """The conversation with its turns (caller holds a tenant transaction)."""
    conversation = access_conversation(actor, conversation_id)
    rows = list(conversation.turns.order_by("position"))
    proposals = proposals_of(actor, (t.id for t in rows))
    turns = with_changes(actor, [TurnOut.of(t, proposals.get(t.id)) for t in rows])
    return ConversationDetail(**ConversationOut.of(conversation).model_dump(), turns=turns)


def conversation_get(*, actor: Actor, conversation_id: Any) -> ConversationDetail:
    with tenant(actor):
        return _detail(actor, conversation_id)


def turn_get(*, actor: Actor, conversation_id: Any, turn_id: Any) -> TurnOut:
    key = parse_uuid(turn_id, what="turn id")
    with tenant(actor):
        conversation = access_conversation(actor, conversation_id)
        turn = conversation.turns.filter(client_id=key).first()
        if turn is None:
            raise NotFound("No such turn.", code="turn_not_found")
        return with_changes(actor, [TurnOut.of(turn, proposals_of(actor, [turn.id])
                                               .get(turn.id))])[0]


def conversation_list(*, actor: Actor, after: Any = None
                      ) -> tuple[list[ConversationOut], uuid.UUID | None, int]:
    """Newest first, 30 per page; `after` is the last id of the previous page (it may
    have been deleted since). Returns (page, the id to pass as `after` or None, how
    many conversations there are in all)."""
    with tenant(actor):
        actor.require(READ)
        rows = conversations_visible_to(actor)
        total = rows.count()
        mark = None
        if after is not None:
            key = parse_uuid(after, what="after")
            mark = conversations_visible_to(actor, hidden=True).filter(client_id=key)\
                .values_list("created_at", "id").first()
            if mark is None:  # an unknown id, as anywhere else: not found
                raise NotFound("after names no conversation of yours.",
                               code="conversation_not_found")
        page = keyset_page(rows, order=("-created_at", "-id"), after=mark, limit=PAGE)
    last = page.rows[-1].client_id if page.next_key else None
    return [ConversationOut.of(c) for c in page.rows], last, total


def conversation_search(*, actor: Actor, query: Any = None, cursor: Any = None
                        ) -> tuple[list[ConversationFound], str | None, int]:
    """History search: conversations whose title or any question contains `query`
    (literal, case-insensitive; omitted = all), newest first, 30 per page. The cursor
    is signed, bound to the account, the caller and the query, and keeps the last
    row's exact timestamp. Returns (page, next cursor or None, matches in all)."""
    text = ""
    if query is not None:
        text = clean_text(query, what="query", max_chars=SEARCH_MAX_CHARS,
                          code="invalid_query",
                          too_long=f"A history search is at most {SEARCH_MAX_CHARS} "
                                   "characters.")
    fingerprint = hashlib.sha256(f"history\n{text}".encode()).hexdigest()
    opened = cursor_read(cursor, salt=HISTORY_SALT, binding=caller_binding(actor),
                         fingerprint=fingerprint)
    with tenant(actor):
        actor.require(READ)
        now = timezone.now()
        rows = conversations_visible_to(actor)
        if text:
            asked = Turn.objects.filter(query__icontains=text).values("conversation_id")
            rows = rows.filter(Q(title__icontains=text) | Q(id__in=asked))
        if opened.ceiling is not None:
            rows = rows.filter(created_at__lte=opened.ceiling)
        total = rows.count()
        page = keyset_page(rows, order=("-created_at", "-id"), after=opened.key, limit=PAGE)
        matched: dict[uuid.UUID, str] = {}
        if text and page.rows:
            for conversation_id, asked_text in Turn.objects.filter(
                    conversation_id__in=[c.id for c in page.rows],
                    query__icontains=text).order_by("-position")\
                    .values_list("conversation_id", "query"):
                matched[conversation_id] = asked_text[:SEARCH_MAX_CHARS]
    found = [ConversationFound(id=c.client_id, title=c.title, turn_count=c.version,
                               created_at=c.created_at, updated_at=c.updated_at,
                               matched_question=matched.get(c.id)) for c in page.rows]
    next_cursor = cursor_after(opened, page, ceiling=opened.ceiling or now, salt=HISTORY_SALT)
    return found, next_cursor, total


@dataclass(frozen=True)
class Retrieved:
    """Recall's evidence, and what ground truth says of the scope: `uncovered` when a
    `restrict` declaration's notes do not answer the question (nothing else may), and
    the claims known to be false there (the model is told them; its answer is checked)."""

    sources: list[Source]
    uncovered: bool
    known_false: list[NegativeClaim] = field(default_factory=list)


def known_false_in(*, actor: Actor, notebook_id: Any = EVERYWHERE,
                   include_personal: bool = True) -> list[NegativeClaim]:
    """The claims known to be false in a scope, for a turn that does not recall (a
    strict selection, a tidy): its answer is held to them all the same."""
    return known_false(actor, notebook_id,
                       include_personal=personal_in(notebook_id, include_personal))


def retrieve(*, actor: Actor, question: str, notebook_id: Any = EVERYWHERE,
             include_personal: bool = True, limit: int = EVIDENCE_LIMIT) -> Retrieved:
    """Recall's evidence for a question in a scope (`notebook_id`: everything granted,
    Personal (None) or a notebook; `include_personal` as Ask reads it, `personal_in`).
    Links are followed (issue 38): a note linked to or from a matching one may be
    evidence with its best passage, marked `via` that note — only within the scope,
    which recall reads through the caller's grant, so no hop leaves it."""
    personal = personal_in(notebook_id, include_personal)
    found = recall.recall(actor=actor, query=question, limit=limit,
                          max_chars=EVIDENCE_MAX_CHARS, place=notebook_id,
                          include_personal=personal, expand="links")
    return Retrieved(
        # A document's hit is its best passage: cited as that passage, and the note's
        # content here is that passage alone (an edit proposal may not rewrite a note
        # from part of it: `ask.selectors.proposals`).
        sources=[Source(cite_as=hit.passage.id if hit.passage else hit.note.versioned_id,
                        note=hit.note, score=hit.score,
                        authority=hit.authority, known_false=hit.known_false,
                        via=hit.via)
                 for hit in found.data],
        uncovered=found.meta.policy == "restrict" and found.meta.coverage == "not_covered",
        known_false=known_false(actor, notebook_id, include_personal=personal))


# -- the Ask pages -----------------------------------------------------------------------------


def _note_ids(values: Iterable[Any]) -> list[uuid.UUID]:
    """The first CONTEXT_NOTES_MAX values, as note ids; malformed ones dropped."""
    wanted = []
    for raw in list(values)[:CONTEXT_NOTES_MAX]:
        try:
            wanted.append(raw if isinstance(raw, uuid.UUID) else uuid.UUID(str(raw)))
        except ValueError:
            continue
    return wanted


def _picked(actor: Actor, wanted: list[uuid.UUID]) -> list[NoteOut]:
    """(caller holds a tenant transaction)"""
    found = {n.id: n for n in notes_visible_to(actor).filter(id__in=wanted)}
    return [NoteOut.of(found[i]) for i in wanted if i in found]


def notes_picked(*, actor: Actor, note_ids: Iterable[Any]) -> list[NoteOut]:
    """The notes a source selection names that the caller can reach, in the order given
    (the first CONTEXT_NOTES_MAX ids; malformed, unknown and unreachable ones dropped) —
    what the source picker shows as picked."""
    wanted = _note_ids(note_ids)
    if not wanted:
        return []
    with tenant(actor):
        actor.require(READ)
        return _picked(actor, wanted)


def source_choices(*, actor: Actor, note_ids: Iterable[Any], find: str,
                   limit: int) -> tuple[list[NoteOut], list[NoteOut]]:
    """The source picker's list: (the picked notes, as `notes_picked`; the best `limit`
    matches for `find` among the rest — none when `find` is empty)."""
    picked = notes_picked(actor=actor, note_ids=note_ids)
    if not find:
        return picked, []
    have = {n.id for n in picked}
    page = search.note_search(actor=actor, query=find, limit=limit)
    return picked, [hit.note for hit in page.data if hit.note.id not in have]


def conversation_page(*, actor: Actor, conversation_id: Any) -> ConversationPage:
    """What a conversation's page shows, read in one transaction: the conversation with
    its turns — each with the sources whose cited text changed since (to mark "changed
    since") — and the notes the last turn picked (the follow-up keeps them)."""
    with tenant(actor):
        detail = _detail(actor, conversation_id)
        last = detail.turns[-1] if detail.turns else None
        picked = _note_ids(last.context.notes) if last and last.context else []
        return ConversationPage(detail=detail,
                                picked=_picked(actor, picked) if picked else [])
