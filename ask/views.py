"""The website's Ask mode (SPEC §8, §11): conversations with history search, cited
answers whose numbered chips link to the exact note revision, a source picker with
"only these sources", coverage, and — when a cited note has changed since — a marker
"note changed since (v3 → v5)" with a one-click re-ask.

Each view parses its input, calls one service in `ask.conversations` and renders; a
pending turn polls its own partial until the answer is stored.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape, linebreaks
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_POST

from ask import providers
from ask.forms import AskForm, HistoryForm
from ask.rules import CONTEXT_NOTES_MAX, TURN_LIMIT
from ask.schemas import TurnOut
from ask.selectors import conversation_get, conversation_search
from ask.services import (
    EVERYWHERE,
    conversation_delete,
    conversation_start,
    turn_reask,
    turn_retry,
    turn_submit,
)
from grove.interfaces.middleware import session_actor
from grove.interfaces.rendering import first_line, render_markdown
from grove.kernel.errors import GroveError, NotFound
from grove.kernel.tenancy import tenant
from notebooks.context import notebooks_for
from notebooks.selectors import search
from notebooks.selectors.access import notes_visible_to

PICKER_RESULTS = 10


@dataclass
class Chip:
    number: int
    cite_as: str
    note_id: uuid.UUID
    version: int
    label: str
    current: int | None  # the note's version now; None: deleted or out of reach

    @property
    def changed(self) -> bool:
        return self.current is None or self.current != self.version

    @property
    def href(self) -> str:
        return f"{reverse('note', args=[self.note_id])}?v={self.version}"


@dataclass
class Block:
    html: SafeString
    chips: list[Chip]
    supported: bool


@dataclass
class TurnView:
    turn: TurnOut
    blocks: list[Block]
    chips: list[Chip]  # every source, numbered as in the answer
    reask_id: uuid.UUID  # the id a re-ask from this render submits (a double click asks once)

    @property
    def changed(self) -> list[Chip]:
        return [c for c in self.chips if c.changed]


def _render_text(text: str, format: str) -> SafeString:
    if format == "markdown":
        return render_markdown(text)
    return mark_safe(linebreaks(escape(text)))  # noqa: S308 - escaped just before


def _current_versions(request: HttpRequest, turns: list[TurnOut]) -> dict[uuid.UUID, int]:
    ids = {s.note_id for t in turns if t.result for s in t.result.sources}
    if not ids:
        return {}
    actor = session_actor(request)
    with tenant(actor):
        return dict(notes_visible_to(actor).filter(id__in=ids).values_list("id", "version"))


def _views(request: HttpRequest, turns: list[TurnOut]) -> list[TurnView]:
    current = _current_versions(request, turns)
    views = []
    for turn in turns:
        if turn.result is None:
            views.append(TurnView(turn=turn, blocks=[], chips=[], reask_id=uuid.uuid4()))
            continue
        # Numbered in the order the answer cites them, then the uncited sources.
        cited = list(dict.fromkeys(c for b in turn.result.blocks for c in b.citations))
        rank = {cite: i for i, cite in enumerate(cited)}
        ordered = sorted(turn.result.sources, key=lambda s: rank.get(s.cite_as, len(rank)))
        chips = [Chip(number=i + 1, cite_as=s.cite_as, note_id=s.note_id, version=s.version,
                      label=s.label, current=current.get(s.note_id))
                 for i, s in enumerate(ordered)]
        by_cite = {c.cite_as: c for c in chips}
        blocks = [Block(html=_render_text(b.text, turn.format),
                        chips=[by_cite[c] for c in b.citations if c in by_cite],
                        supported=b.supported) for b in turn.result.blocks]
        views.append(TurnView(turn=turn, blocks=blocks, chips=chips, reask_id=uuid.uuid4()))
    return views


def _picked_notes(request: HttpRequest, ids: list[str]) -> list[tuple[Any, str]]:
    """(note, label) for the note ids a form carries, in order; unknown ids dropped."""
    wanted = []
    for raw in ids[:CONTEXT_NOTES_MAX]:
        try:
            wanted.append(uuid.UUID(raw))
        except ValueError:
            continue
    if not wanted:
        return []
    actor = session_actor(request)
    with tenant(actor):
        found = {n.id: n for n in notes_visible_to(actor).filter(id__in=wanted)}
    return [(found[i], first_line(found[i].content, 70)) for i in wanted if i in found]


def _ask_form(request: HttpRequest, *, data: Any = None, initial: dict[str, Any] | None = None,
              note_ids: list[str] | None = None) -> AskForm:
    notebooks = notebooks_for(request)
    return AskForm(data, initial=initial, paths=notebooks.paths(),
                   notes=_picked_notes(request, note_ids or []))


def _page(request: HttpRequest, template: str, context: dict[str, Any],
          status: int = 200) -> HttpResponse:
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
    return _page(request, "ask/home.html", {
        "form": _ask_form(request, initial=initial, note_ids=note_ids)})


@login_required
@require_GET
def source_picker(request: HttpRequest) -> HttpResponse:
    """The note picker's list: the notes already picked (kept checked), then the best
    matches for what was typed."""
    picked = _picked_notes(request, request.GET.getlist("notes"))
    text = request.GET.get("find", "").strip()[:200]
    matches: list[tuple[Any, str]] = []
    if text:
        actor = session_actor(request)
        page = search.note_search(actor=actor, query=text, limit=PICKER_RESULTS)
        have = {n.id for n, _ in picked}
        matches = [(n, first_line(n.content, 70)) for n in (hit.note for hit in page.data)
                   if n.id not in have]
    return render(request, "ask/home.html#picker", {"picked": picked, "matches": matches,
                                                    "find": text})


def _submit(request: HttpRequest, conversation_id: uuid.UUID, form: AskForm) -> None:
    data = form.cleaned_data
    turn_submit(
        actor=session_actor(request), conversation_id=conversation_id,
        turn_id=data["turn_id"], query=data["query"], format=data["format"],
        expected_version=data["expected_version"], context=form.context())


def _refused(request: HttpRequest, form: AskForm, error: GroveError,
             conversation_id: uuid.UUID | None = None) -> HttpResponse:
    """The form again with the reason, the question kept, and fresh ids (the refused
    ones are spent) — for a follow-up, against the conversation as it is now."""
    data = request.POST.copy()
    data["conversation_id"], data["turn_id"] = str(uuid.uuid4()), str(uuid.uuid4())
    if conversation_id is not None:
        with contextlib.suppress(NotFound):
            data["expected_version"] = str(conversation_get(
                actor=session_actor(request), conversation_id=conversation_id).version)
    form = _ask_form(request, data=data, note_ids=data.getlist("notes"))
    form.is_valid()
    form.add_error(None, error.message)
    if conversation_id is None:
        return _page(request, "ask/home.html", {"form": form}, status=error.status)
    return _conversation_page(request, conversation_id, form=form, status=error.status)


@login_required
@require_POST
def ask_start(request: HttpRequest) -> HttpResponse:
    """A new conversation with its first question."""
    form = _ask_form(request, data=request.POST, note_ids=request.POST.getlist("notes"))
    if not form.is_valid():
        return _page(request, "ask/home.html", {"form": form}, status=400)
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


def _conversation_page(request: HttpRequest, conversation_id: uuid.UUID, *,
                       form: AskForm | None = None, status: int = 200) -> HttpResponse:
    actor = session_actor(request)
    try:
        detail = conversation_get(actor=actor, conversation_id=conversation_id)
    except NotFound:
        raise Http404("No such conversation.") from None
    last = detail.turns[-1] if detail.turns else None
    if form is None:
        initial: dict[str, Any] = {"expected_version": detail.version}
        note_ids: list[str] = []
        if last is not None:
            initial["format"] = last.format
            if last.context:  # keep the last selection for the follow-up
                note_ids = [str(n) for n in last.context.notes]
                initial.update(notebooks=[str(n) for n in last.context.notebooks],
                               only=last.context.only)
        form = _ask_form(request, initial=initial, note_ids=note_ids)
    notebooks = notebooks_for(request)
    scope = ("All notebooks" + (" and Personal" if detail.include_personal else "")
             if detail.scope == "everywhere" else "Personal" if detail.scope == "personal"
             else notebooks.names.get(detail.notebook_id, "a notebook"))
    return _page(request, "ask/conversation.html", {
        "conversation": detail, "turns": _views(request, detail.turns), "form": form,
        "scope_name": scope, "full": detail.turn_count >= TURN_LIMIT,
        "notebook_names": notebooks.names}, status=status)


@login_required
@require_GET
def ask_conversation(request: HttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    return _conversation_page(request, conversation_id)


@login_required
@require_POST
def ask_turn_submit(request: HttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    form = _ask_form(request, data=request.POST, note_ids=request.POST.getlist("notes"))
    if not form.is_valid():
        return _conversation_page(request, conversation_id, form=form, status=400)
    try:
        _submit(request, conversation_id, form)
    except GroveError as error:
        if isinstance(error, NotFound):
            raise Http404("No such conversation.") from None
        return _refused(request, form, error, conversation_id)
    return redirect("ask-conversation", conversation_id=conversation_id)


@login_required
@require_GET
def ask_turn(request: HttpRequest, conversation_id: uuid.UUID,
             turn_id: uuid.UUID) -> HttpResponse:
    """One turn's partial (a pending turn polls this until it is answered)."""
    actor = session_actor(request)
    detail = conversation_get(actor=actor, conversation_id=conversation_id)
    turn = next((t for t in detail.turns if t.id == turn_id), None)
    if turn is None:
        raise Http404("No such turn.")
    return render(request, "ask/conversation.html#turn", {
        "t": _views(request, [turn])[0], "conversation_id": conversation_id,
        "conversation": detail})


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
    made = turn_reask(actor=session_actor(request), conversation_id=conversation_id,
                      turn_id=turn_id, new_turn_id=request.POST.get("turn_id", ""),
                      expected_version=int(version) if version.isdigit() else None)
    return redirect(f"{reverse('ask-conversation', args=[conversation_id])}#turn-{made.id}")


@login_required
@require_POST
def ask_delete(request: HttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    conversation_delete(actor=session_actor(request),
                                      conversation_id=conversation_id)
    return redirect("ask")
