"""The editor (SPEC §11), on the new-note page and in the note page's Edit panel: a
title line and the text below it (`notebooks.forms.split_title` / `join_title`: the
title is the note's first line, exactly as written, so a note round-trips unchanged),
a live preview, and the task-list boxes ticked on the note page.

* **Preview** (`note_preview`): a POST (CSRF) of the two fields and the kind, answered
  with the fragment `render_note` makes of their text — the very function the note
  page renders with, so the preview never shows what the page would not (the text is
  untrusted: it is sanitised, and nothing in it loads or runs). Text over its kind's
  limit is drawn under the refusal the save would give (`rules.check_content_fits`,
  word for word); the body is limited (`PREVIEW_MAX_BYTES`, 413) and previews are
  counted per session (`PREVIEW_RATE_LIMIT` a minute, 429); htmx sends one 300 ms
  after typing stops.
* **Saving** goes through the ordinary services; keyboard save, the unsaved-changes
  warning and drafts kept in the browser are grove.js's.
* **A task-list box** on the note page is a one-button form (`note_task_tick`): the
  tick is an ordinary update fenced by the version the page showed.
"""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from grove.identity.hygiene import redaction_notice
from grove.interfaces.middleware import session_actor
from grove.interfaces.rendering import render_note
from grove.kernel import throttle
from grove.kernel.errors import GroveError, Invalid, NotFound
from grove.kernel.validation import is_storable
from notebooks import selectors, services
from notebooks.context import notebooks_for
from notebooks.forms import NoteEditForm, NoteForm, PreviewForm, TaskTickForm
from notebooks.rules import CONTENT_OUTER_MAX_CHARS, check_content_fits, content_too_long
from notebooks.views import undo
from notebooks.views.note_page import note_page_response, preview_of

# A note's text, percent-encoded (up to 12 bytes a character), with room for the rest.
PREVIEW_MAX_BYTES = 12 * CONTENT_OUTER_MAX_CHARS + 4096
PREVIEW_RATE_LIMIT = 180  # previews a minute per session: typing pauses, not a flood
PREVIEW_TEMPLATE = "notebooks/_editor.html#preview"


TITLE_FROM_LINK_MAX = 200


@login_required
@require_http_methods(["GET", "POST"])
def note_create(request: HttpRequest) -> HttpResponse:
    """The new-note page; saving goes to the note. The operation id in the form makes a
    double submit save once."""
    actor = session_actor(request)
    if request.method == "GET":
        # `?title=`: a missing note's link offers to create it (issue 38).
        title = " ".join(request.GET.get("title", "").split())[:TITLE_FROM_LINK_MAX]
        form = NoteForm(paths=notebooks_for(request).paths(),
                        initial={"notebook": request.GET.get("notebook", ""), "title": title})
        return render(request, "notebooks/new_note.html", {"form": form, "section": "library"})
    form = NoteForm(request.POST)  # the service checks the notebook
    if form.is_valid():
        data = form.cleaned_data
        try:
            saved = services.note_remember(
                actor=actor, operation_id=data["operation_id"], content=data["text"],
                kind=data["kind"], notebook_id=data["notebook"] or None,
                task_id=data["task_id"] or None, tags=data["tags"], source_agent="website",
            )
        except GroveError as exc:
            form.add_error(None, exc.message)
        else:
            assert saved.note is not None  # the owner's own saves are never held
            if saved.redacted:
                messages.warning(request, redaction_notice(saved.redacted))
            return redirect("note", note_id=saved.note.id)
    return render(request, "notebooks/new_note.html", {
        "form": form.shown(notebooks_for(request).paths()), "section": "library",
        "edited": True, "preview_html": preview_of(form)}, status=400)


@login_required
@require_POST
def note_edit(request: HttpRequest, note_id: str) -> HttpResponse:
    form = NoteEditForm(request.POST)
    if not form.is_valid():
        return note_page_response(request, note_id, edit_form=form, status=400)
    data = form.cleaned_data
    try:
        updated = services.note_update(
            actor=session_actor(request), operation_id=data["operation_id"], note_id=note_id,
            expected_version=data["expected_version"], content=data["text"],
            kind=data["kind"], tags=data["tags"], relink=data["relink"])
    except GroveError as exc:
        if exc.code == "version_conflict":
            # Keep the draft; the page shows the newer text beside it. Resubmitting
            # overwrites it knowingly (the form now carries the newer version).
            draft = NoteEditForm(initial={**data, "operation_id": uuid.uuid4(),
                                          "expected_version": exc.details["current_version"]})
            return note_page_response(
                request, note_id, edit_form=draft, status=409,
                conflict="Someone changed this note while you were editing. Your draft is "
                         "kept in the editor and the newer text is shown under it — save "
                         "again to replace it.")
        if isinstance(exc, NotFound):
            raise
        form.add_error(None, exc.message)
        return note_page_response(request, note_id, edit_form=form, status=exc.status)
    if updated.redacted:
        messages.warning(request, redaction_notice(updated.redacted))
    elif updated.relinked:
        undo.offer(request, f"Saved, and the links to it updated in {updated.relinked} "
                   f"note{'s' if updated.relinked != 1 else ''}.",
                   undo.Undo("notes-relink", data["operation_id"]))
    else:
        messages.success(request, "Saved.")
    return redirect("note", note_id=note_id)


def _preview(request: HttpRequest, *, error: str | None = None, html: str | None = None,
             status: int = 200) -> HttpResponse:
    response = render(request, PREVIEW_TEMPLATE, {"preview_html": html,
                                                  "preview_error": error}, status=status)
    response["Cache-Control"] = "no-store"
    return response


@require_POST
def note_preview(request: HttpRequest) -> HttpResponse:
    """The editor's preview: the fragment the note page would render for this text.
    Signed out (a session that ended while typing) it says so in the preview, rather
    than a redirect that would draw the sign-in page inside it."""
    if not request.user.is_authenticated:
        return _preview(request, status=403, error="Your session has ended: sign in again "
                        "in another tab, then save (this browser keeps your draft).")
    length = request.META.get("CONTENT_LENGTH") or ""
    if (int(length) if length.isdigit() else len(request.body)) > PREVIEW_MAX_BYTES:
        return _preview(request, status=413, error="Too long to preview: far longer than "
                        "any note holds.")
    wait = throttle.fixed_window(
        f"preview:{throttle.hashed(request.session.session_key or '')}",
        limit=PREVIEW_RATE_LIMIT, window=throttle.WINDOW)
    if wait is not None:
        response = _preview(request, status=429, error="The preview is paused for a "
                            f"moment (more than {PREVIEW_RATE_LIMIT} a minute); it resumes "
                            f"in {wait} seconds. Saving works as usual.")
        response["Retry-After"] = str(wait)
        return response
    form = PreviewForm(request.POST)
    if not form.is_valid():
        return _preview(request, status=400, error=" ".join(
            str(message) for errors in form.errors.values() for message in errors))
    text = form.cleaned_data["text"].strip()
    if len(text) > CONTENT_OUTER_MAX_CHARS:
        return _preview(request, status=413, error=content_too_long(len(text), None).message)
    if not is_storable(text):
        return _preview(request, status=400, error="The text contains characters that "
                        "cannot be stored (such as NUL).")
    try:  # over its kind's limit: drawn still, under what the save would say
        check_content_fits(text, form.cleaned_data["kind"] or None)
    except Invalid as exc:
        return _preview(request, html=render_note(text), error=exc.message)
    return _preview(request, html=render_note(text) if text else None)


@login_required
@require_POST
def note_task_tick(request: HttpRequest, note_id: str, index: int) -> HttpResponse:
    """Tick or clear one task-list box of the note page: a new revision, fenced by the
    version the page showed — a page out of date gets the usual conflict, and the note
    as it is now to tick again."""
    form = TaskTickForm(request.POST)
    if not form.is_valid():
        return note_page_response(request, note_id, status=400, conflict="That box cannot "
                                  "be ticked from here: reload the page and try again.")
    data = form.cleaned_data
    try:
        services.note_task_set(
            actor=session_actor(request), operation_id=data["operation_id"],
            note_id=note_id, index=index, done=data["done"],
            expected_version=data["expected_version"])
    except GroveError as exc:
        if exc.code != "version_conflict":
            raise
        return note_page_response(
            request, note_id, status=409, conflict="This note changed since the page was "
            "opened, so nothing was ticked. Here it is as it is now: tick the box again.")
    return redirect(reverse("note", args=[note_id]) + f"#task-{index}")


TITLES_RATE_LIMIT = 600  # suggestion lookups a minute per session: one per keystroke
TITLES_QUERY_MAX_CHARS = 200


@login_required
@require_GET
def note_titles(request: HttpRequest) -> HttpResponse:
    """The editor's `[[` suggestions (issue 38): the live notes whose title, alias or
    file name starts with `q`, as JSON — `{"data": [{"id", "title", "matched"}]}`,
    `matched` the alias or file name when that is what starts with `q`."""
    query = request.GET.get("q", "")
    if len(query) > TITLES_QUERY_MAX_CHARS or not is_storable(query):
        return JsonResponse({"error": {"code": "invalid_query",
                                       "message": "q is a note's name, up to "
                                       f"{TITLES_QUERY_MAX_CHARS} characters."}}, status=400)
    wait = throttle.fixed_window(
        f"titles:{throttle.hashed(request.session.session_key or '')}",
        limit=TITLES_RATE_LIMIT, window=throttle.WINDOW)
    if wait is not None:
        response = JsonResponse({"error": {"code": "rate_limited", "message":
                                           "Too many lookups; try again shortly."}},
                                status=429)
        response["Retry-After"] = str(wait)
        return response
    found = selectors.title_suggestions(session_actor(request), query)
    response = JsonResponse({"data": [{"id": str(note_id), "title": title, "matched": matched}
                                      for note_id, title, matched in found]})
    response["Cache-Control"] = "no-store"
    return response
