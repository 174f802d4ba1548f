"""Recently deleted (SPEC §3, §11): the notes and notebooks deleted in the last 30 days,
newest first, each with a Restore button; the restores themselves (also what Undo after
a delete posts to). The services decide what may come back; a refusal is shown on the
page with its reason, and changes nothing."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from grove.interfaces.middleware import session_actor
from grove.interfaces.rendering import title_and_excerpt
from grove.kernel.errors import GroveError, Invalid, NotFound
from notebooks import selectors, services
from notebooks.forms import FencedActionForm, TrashForm
from notebooks.views.undo import CHANGED


def _trash_page(request: HttpRequest, *, problem: str | None = None,
                status: int = 200) -> HttpResponse:
    form = TrashForm(request.GET)
    if not form.is_valid():
        raise Invalid("That page of Recently deleted does not exist.", code="invalid_cursor")
    cursor = form.cleaned_data["cursor"] or None
    page = selectors.trash_list(actor=session_actor(request), cursor=cursor)
    notes = []
    for item in page.notes:
        title, excerpt = title_and_excerpt(item.note.content, path=item.note.source_path)
        notes.append({"note": item.note, "until": item.until, "title": title,
                      "excerpt": excerpt, "operation_id": uuid.uuid4()})
    notebooks = [{"notebook": item.notebook, "brings_back": item.brings_back,
                  "until": item.until, "operation_id": uuid.uuid4()}
                 for item in page.notebooks]
    context: dict[str, Any] = {
        "section": "library", "place": "trash", "page": page, "notes": notes,
        "notebooks": notebooks,
        "problem": problem, "first_page": cursor is None,
        "next_url": f"{reverse('trash')}?cursor={page.next_cursor}"
        if page.next_cursor else None,
    }
    template = "notebooks/trash.html"
    if request.htmx and cursor and request.method == "GET":  # type: ignore[attr-defined]
        template += "#rows"
    return render(request, template, context, status=status)


@login_required
@require_GET
def trash(request: HttpRequest) -> HttpResponse:
    return _trash_page(request)


def _refused(request: HttpRequest, exc: GroveError) -> HttpResponse:
    """A restore the service refused: the page again, saying why (nothing changed)."""
    if isinstance(exc, NotFound):
        raise exc
    problem = CHANGED if exc.code == "version_conflict" else exc.message
    return _trash_page(request, problem=f"Nothing was restored: {problem}", status=exc.status)


@login_required
@require_POST
def trash_note_restore(request: HttpRequest, note_id: str) -> HttpResponse:
    """Bring a deleted note back (a new revision, active again), then open it."""
    form = FencedActionForm(request.POST)
    if not form.is_valid():
        raise Invalid("That restore request is not valid.", code="invalid_request")
    try:
        note = services.note_undelete(
            actor=session_actor(request),
            operation_id=form.cleaned_data["operation_id"] or uuid.uuid4(), note_id=note_id,
            expected_version=form.cleaned_data["expected_version"])
    except GroveError as exc:
        return _refused(request, exc)
    messages.success(request, "Restored.")
    return redirect("note", note_id=note.id)


@login_required
@require_POST
def trash_notebook_restore(request: HttpRequest, notebook_id: str) -> HttpResponse:
    """Bring a deleted notebook back with what was deleted with it, then open it."""
    form = FencedActionForm(request.POST)  # a notebook has no version: the id alone
    if not form.is_valid():
        raise Invalid("That restore request is not valid.", code="invalid_request")
    try:
        counts = services.notebook_undelete(
            actor=session_actor(request), notebook_id=notebook_id,
            operation_id=form.cleaned_data["operation_id"] or uuid.uuid4())
    except GroveError as exc:
        return _refused(request, exc)
    messages.success(request, f"Restored {counts.notebooks} notebook"
                     f"{'s' if counts.notebooks != 1 else ''} and {counts.notes} note"
                     f"{'s' if counts.notes != 1 else ''}.")
    return redirect(reverse("home") + f"?notebook={notebook_id}")
