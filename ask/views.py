"""The website's Ask mode (SPEC §8, §11): conversations with history search, cited
answers whose numbered chips link to the exact note revision, a source picker with
"only these sources", coverage, and — when a cited note has changed since — a marker
"note changed since (v3 → v5)" with a one-click re-ask.

Each view parses its input, calls one service (`ask.services`) or selector
(`ask.selectors`) and renders; the Ask shell around every page — the history panel
(`_page`) and the notebook tree (`notebooks_for`, shared with the sidebar) — is read
once per page beside it. A pending turn polls its own partial until the answer is
stored.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape, linebreaks
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_POST

from ask import providers
from ask.forms import AskForm, HistoryForm, TidyForm
from ask.rules import TURN_LIMIT
from ask.schemas import ConversationDetail, ConversationPage, TurnOut
from ask.selectors import conversation_page, conversation_search, notes_picked, source_choices
from ask.services import (
    EVERYWHERE,
    conversation_delete,
    conversation_start,
    proposal_apply,
    proposal_undo,
    turn_reask,
    turn_retry,
    turn_submit,
)
from grove.interfaces.links import host_of, leave_target
from grove.interfaces.middleware import session_actor
from grove.interfaces.rendering import (
    note_title,
    render_model_markdown,
)
from grove.kernel.errors import GroveError, Invalid, NotFound, RateLimited
from notebooks.context import notebooks_for
from notebooks.schemas.notes import NoteOut

PICKER_RESULTS = 10


@dataclass
class Chip:
    number: int
    cite_as: str
    note_id: uuid.UUID
    version: int
    label: str
    changed: bool  # the note no longer reads as cited (`ask.selectors.citations`)
    current: int | None  # when changed: its version now; None: deleted or out of reach
    via: str | None = None  # reached through a link from this note (its label; "" unknown)

    @property
    def href(self) -> str:
        """The note at the cited version — at the cited passage, highlighted, when the
        citation names one (`note:<id>@<v>#<n>`)."""
        _, _, passage = self.cite_as.partition("#")
        where = f"&passage={passage}#passage-{passage}" if passage.isdigit() else ""
        return f"{reverse('note', args=[self.note_id])}?v={self.version}{where}"


@dataclass
class Block:
    html: SafeString
    chips: list[Chip]
    supported: bool
    known_false: list[str]  # the known-false claims the block states


@dataclass
class TurnView:
    turn: TurnOut
    blocks: list[Block]
    chips: list[Chip]  # every source, numbered as in the answer
    reask_id: uuid.UUID  # the id a re-ask from this render submits (a double click asks once)

    @property
    def changed(self) -> list[Chip]:
        return [c for c in self.chips if c.changed]

    @property
    def stale(self) -> bool:
        """A proposal of this answer can no longer be applied: the notes changed."""
        return any(p.state == "stale" for p in self.turn.proposals)


def _render_text(text: str, format: str) -> SafeString:
    """A model's answer text: markdown in the model-text mode (no link leaves the site
    unseen), or plain text, escaped (no link at all)."""
    if format == "markdown":
        return render_model_markdown(text)
    return mark_safe(linebreaks(escape(text)))  # noqa: S308 - escaped just before


def _views(turns: list[TurnOut]) -> list[TurnView]:
    """The turns as shown: chips numbered (marked where the note's text changed since),
    blocks rendered."""
    views = []
    for turn in turns:
        if turn.result is None:
            views.append(TurnView(turn=turn, blocks=[], chips=[], reask_id=uuid.uuid4()))
            continue
        # Numbered in the order the answer cites them, then the uncited sources.
        cited = list(dict.fromkeys(c for b in turn.result.blocks for c in b.citations))
        rank = {cite: i for i, cite in enumerate(cited)}
        ordered = sorted(turn.result.sources, key=lambda s: rank.get(s.cite_as, len(rank)))
        changes = {(c.note_id, c.cited_version): c.version for c in turn.sources_changed}
        chips = [Chip(number=i + 1, cite_as=s.cite_as, note_id=s.note_id, version=s.version,
                      label=s.label, changed=(s.note_id, s.version) in changes,
                      current=changes.get((s.note_id, s.version)),
                      via=None if s.via is None else s.via_label or "")
                 for i, s in enumerate(ordered)]
        by_cite = {c.cite_as: c for c in chips}
        blocks = [Block(html=_render_text(b.text, turn.format),
                        chips=[by_cite[c] for c in b.citations if c in by_cite],
                        supported=b.supported, known_false=b.contradicts_known_false)
                  for b in turn.result.blocks]
        views.append(TurnView(turn=turn, blocks=blocks, chips=chips, reask_id=uuid.uuid4()))
    return views


def _labelled(notes: list[NoteOut]) -> list[tuple[NoteOut, str]]:
    return [(n, note_title(n.content, 70, path=n.source_path)) for n in notes]


def _ask_form(request: HttpRequest, *, data: Any = None, initial: dict[str, Any] | None = None,
              picked: list[NoteOut] | None = None) -> AskForm:
    """The question form; `picked`: the notes its source picker shows as picked."""
    notebooks = notebooks_for(request)
    return AskForm(data, initial=initial, paths=notebooks.paths(),
                   notes=_labelled(picked or []))


def _posted_form(request: HttpRequest, data: Any) -> AskForm:
    """The form as posted, its picked notes labelled."""
    return _ask_form(request, data=data, picked=notes_picked(
        actor=session_actor(request), note_ids=data.getlist("notes")))


def _page(request: HttpRequest, template: str, context: dict[str, Any],
          status: int = 200) -> HttpResponse:
    """`template` in the Ask shell: the history panel (searchable, paged)."""
    history = HistoryForm(request.GET or None)
    query = history.cleaned_data["q"] if history.is_valid() else ""
    cursor = history.cleaned_data["cursor"] if history.is_valid() else ""
    actor = session_actor(request)
    found, next_cursor, total = conversation_search(
        actor=actor, query=query or None, cursor=cursor or None)
    return render(request, template, {
        "section": "ask", "history_form": history, "history": found,
        "history_total": total, "history_query": query, "history_next": next_cursor,
        "generation_on": providers.configured(), **context}, status=status)


@login_required
@require_GET
def ask_home(request: HttpRequest) -> HttpResponse:
    """The Ask page: a new question, and the history (searchable)."""
    if request.htmx and request.GET.get("history"):  # type: ignore[attr-defined]
        return _page(request, "ask/home.html#history", {})
    note_ids = request.GET.getlist("note")
    initial: dict[str, Any] = {"only": bool(note_ids)} if note_ids else {}
    if request.GET.get("notebook"):
        initial.update(notebooks=[request.GET["notebook"]], only=True)
    picked = notes_picked(actor=session_actor(request), note_ids=note_ids)
    return _page(request, "ask/home.html", {
        "form": _ask_form(request, initial=initial, picked=picked)})


@login_required
@require_GET
def source_picker(request: HttpRequest) -> HttpResponse:
    """The note picker's list: the notes already picked (kept checked), then the best
    matches for what was typed."""
    text = request.GET.get("find", "").strip()[:200]
    picked, matches = source_choices(actor=session_actor(request),
                                     note_ids=request.GET.getlist("notes"), find=text,
                                     limit=PICKER_RESULTS)
    return render(request, "ask/home.html#picker", {
        "picked": _labelled(picked), "matches": _labelled(matches), "find": text})


def _refused(request: HttpRequest, form: AskForm, error: GroveError,
             conversation_id: uuid.UUID | None = None) -> HttpResponse:
    """The form again with the reason, the question kept, and fresh ids (the refused
    ones are spent) — for a follow-up, against the conversation as it is now."""
    data = request.POST.copy()
    data["conversation_id"], data["turn_id"] = str(uuid.uuid4()), str(uuid.uuid4())
    if conversation_id is None:
        page = None
    else:
        page = conversation_page(actor=session_actor(request), conversation_id=conversation_id)
        data["expected_version"] = str(page.detail.version)
    form = _posted_form(request, data)
    form.is_valid()
    form.add_error(None, error.message)
    if page is None:
        response = _page(request, "ask/home.html", {"form": form}, status=error.status)
    else:
        response = _conversation(request, page, form=form, status=error.status)
    if isinstance(error, RateLimited):  # over the model-call budget: when to ask again
        response["Retry-After"] = str(error.retry_after)
    return response


@login_required
@require_POST
def ask_start(request: HttpRequest) -> HttpResponse:
    """A new conversation with its first question."""
    form = _ask_form(request, data=request.POST)  # picked notes are labelled only if shown
    if not form.is_valid():
        return _page(request, "ask/home.html", {"form": _posted_form(request, request.POST)},
                     status=400)
    data = form.cleaned_data
    scope = data["scope"]
    notebook: Any = EVERYWHERE if not scope else (None if scope == "personal" else scope)
    try:
        # A refused first question stores nothing: no empty conversation is left behind.
        conversation_start(
            actor=session_actor(request), conversation_id=data["conversation_id"],
            turn_id=data["turn_id"], notebook_id=notebook, query=data["query"],
            format=data["format"], expected_version=data["expected_version"],
            context=form.context())
    except GroveError as error:
        return _refused(request, form, error)
    return redirect("ask-conversation", conversation_id=data["conversation_id"])


def _conversation(request: HttpRequest, page: ConversationPage, *,
                  form: AskForm | None = None, status: int = 200) -> HttpResponse:
    """A conversation's page; without `form`, the follow-up form starts from the last
    turn's format and source selection."""
    detail = page.detail
    last = detail.turns[-1] if detail.turns else None
    if form is None:
        initial: dict[str, Any] = {"expected_version": detail.version}
        if last is not None:
            initial["format"] = last.format
            if last.context:  # keep the last selection for the follow-up
                initial.update(notebooks=[str(n) for n in last.context.notebooks],
                               only=last.context.only)
        form = _ask_form(request, initial=initial, picked=page.picked)
    notebooks = notebooks_for(request)
    scope = _searching(detail, last, page.picked, notebooks.names)
    return _page(request, "ask/conversation.html", {
        "conversation": detail, "turns": _views(detail.turns), "form": form,
        "scope_name": scope, "full": detail.turn_count >= TURN_LIMIT,
        "notebook_names": notebooks.names}, status=status)


def _searching(detail: ConversationDetail, last: TurnOut | None, picked: list[NoteOut],
               names: dict[Any, str]) -> str:
    """What the conversation searches now, for its heading: with the last question's
    selection kept for the next one, a strict selection (`only`) is all it searches —
    those notes and notebooks, by name — and a preferred one comes first."""
    scope = ("All notebooks" + (" and Personal" if detail.include_personal else "")
             if detail.scope == "everywhere" else "Personal" if detail.scope == "personal"
             else names.get(detail.notebook_id, "a notebook"))
    context = last.context if last is not None else None
    if context is None:
        return scope
    labels = {n.id: note_title(n.content, 40, path=n.source_path) or "(empty note)"
              for n in picked}
    named = ([f"“{labels[i]}”" for i in context.notes if i in labels]
             + [names.get(i, "a notebook") for i in context.notebooks])
    gone = len(context.notes) - sum(1 for i in context.notes if i in labels)
    if gone:
        named.append(f"{gone} note{'s' if gone != 1 else ''} no longer there")
    if context.only:
        return "only the picked sources: " + ", ".join(named)
    return f"{scope}, the picked sources first ({', '.join(named)})"


@login_required
@require_GET
def ask_conversation(request: HttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    page = conversation_page(actor=session_actor(request), conversation_id=conversation_id)
    return _conversation(request, page)


@login_required
@require_POST
def ask_turn_submit(request: HttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    form = _ask_form(request, data=request.POST)  # picked notes are labelled only if shown
    if not form.is_valid():
        page = conversation_page(actor=session_actor(request),
                                 conversation_id=conversation_id)
        return _conversation(request, page, form=_posted_form(request, request.POST),
                             status=400)
    data = form.cleaned_data
    try:
        turn_submit(
            actor=session_actor(request), conversation_id=conversation_id,
            turn_id=data["turn_id"], query=data["query"], format=data["format"],
            expected_version=data["expected_version"], context=form.context())
    except NotFound:
        raise  # no such conversation: the 404 page, not the form
    except GroveError as error:
        return _refused(request, form, error, conversation_id)
    return redirect("ask-conversation", conversation_id=conversation_id)


@login_required
@require_GET
def ask_turn(request: HttpRequest, conversation_id: uuid.UUID,
             turn_id: uuid.UUID) -> HttpResponse:
    """One turn's partial (a pending turn polls this until it is answered)."""
    page = conversation_page(actor=session_actor(request), conversation_id=conversation_id)
    turn = next((t for t in page.detail.turns if t.id == turn_id), None)
    if turn is None:
        raise Http404("No such turn.")
    return render(request, "ask/conversation.html#turn", {
        "t": _views([turn])[0], "conversation_id": conversation_id,
        "conversation": page.detail,
        # After Apply or Undo (HTMX follows the redirect here): the flash with it.
        "oob_flash": request.GET.get("acted") == "1"})


@login_required
@require_POST
def ask_turn_retry(request: HttpRequest, conversation_id: uuid.UUID,
                   turn_id: uuid.UUID) -> HttpResponse:
    turn_retry(actor=session_actor(request), conversation_id=conversation_id,
                             turn_id=turn_id)
    return redirect(f"{reverse('ask-conversation', args=[conversation_id])}#turn-{turn_id}")


@login_required
@require_POST
def ask_reask(request: HttpRequest, conversation_id: uuid.UUID,
              turn_id: uuid.UUID) -> HttpResponse:
    """Ask a turn's question again, with its source selection, as the next turn (the
    notes it cited have changed)."""
    version = request.POST.get("expected_version", "")
    # The page's version (a stale one is a 409 as usual); without one, as it is now.
    # (str.isdigit alone lets "²" through to int(), and int() refuses 4,301 digits.)
    given = version.isascii() and version.isdigit() and len(version) <= 9
    made = turn_reask(actor=session_actor(request), conversation_id=conversation_id,
                      turn_id=turn_id, new_turn_id=request.POST.get("turn_id", ""),
                      expected_version=int(version) if given else None)
    return redirect(f"{reverse('ask-conversation', args=[conversation_id])}#turn-{made.id}")


TIDY_QUESTION = ("Tidy this notebook: which notes say the same thing or contradict each "
                 "other? Propose merges and edits.")


@login_required
@require_POST
def ask_tidy(request: HttpRequest, notebook_id: uuid.UUID) -> HttpResponse:
    """Start a conversation whose first turn tidies the notebook up."""
    form = TidyForm(request.POST)
    if not form.is_valid():
        raise Invalid("The tidy-up form is not valid; reload the page.", code="invalid_id")
    data = form.cleaned_data
    conversation_start(
        actor=session_actor(request), conversation_id=data["conversation_id"],
        turn_id=data["turn_id"], notebook_id=notebook_id, query=TIDY_QUESTION,
        format="markdown", tidy={"notebookId": notebook_id})
    return redirect("ask-conversation", conversation_id=data["conversation_id"])


def _nothing_changed(message: str) -> str:
    """A refused apply or undo changed nothing (one transaction): said once — most of
    the services' refusals say so themselves."""
    if "nothing was changed" in message.lower():
        return message
    return f"Nothing was changed: {message}"


PROPOSAL_NOT_FOUND = {"conversation_not_found", "turn_not_found", "proposal_not_found"}
PROPOSAL_ACTS = {"apply": (proposal_apply, "Applied."),
                 "undo": (proposal_undo, "Undone: the earlier versions are back, as new "
                                         "revisions.")}


@login_required
@require_POST
def ask_proposal(request: HttpRequest, conversation_id: uuid.UUID, turn_id: uuid.UUID,
                 proposal_id: uuid.UUID, act: str) -> HttpResponse:
    """Apply or undo a proposal, then show its turn again: the page (without JavaScript)
    or, for HTMX, the turn's partial — with what happened, or why nothing did."""
    run, done = PROPOSAL_ACTS[act]
    try:
        run(actor=session_actor(request), conversation_id=conversation_id, turn_id=turn_id,
            proposal_id=proposal_id)
    except NotFound as missing:
        if missing.code in PROPOSAL_NOT_FOUND:  # no such page: the 404 page
            raise
        messages.error(request, _nothing_changed(missing.message))
    except GroveError as error:
        messages.error(request, _nothing_changed(error.message))
    else:
        messages.success(request, done)
    if request.htmx:  # type: ignore[attr-defined]
        return redirect(f"{reverse('ask-turn', args=[conversation_id, turn_id])}?acted=1")
    return redirect(f"{reverse('ask-conversation', args=[conversation_id])}"
                    f"#proposal-{proposal_id}")


@login_required
@require_GET
def leave(request: HttpRequest) -> HttpResponse:
    """The confirmation page an off-site link of a model-written answer opens
    (`grove.interfaces.links`): the full destination, and the one real link to it. Only
    a destination Grove signed is shown (400 otherwise), so nobody can use the page to
    send people elsewhere."""
    destination = leave_target(request.GET.get("to", ""), request.GET.get("sig", ""))
    if destination is None:
        return render(request, "ask/leave.html", {"section": "ask"}, status=400)
    parts = urlsplit(destination)
    return render(request, "ask/leave.html", {
        "section": "ask", "destination": destination, "host": host_of(destination),
        "carries_data": bool(parts.query or parts.fragment or parts.username)})


@login_required
@require_POST
def ask_delete(request: HttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    conversation_delete(actor=session_actor(request),
                                      conversation_id=conversation_id)
    return redirect("ask")
