"""The note page (SPEC §11): the note first — its rendered text under a toolbar of
actions (Edit, Move, History, Share, Archive or Restore, Delete) whose panels open on
demand (`:target` without JavaScript; grove.js toggles them) — and the actions the
panels post to. The editor's own views (saving, the preview, ticking a task-list box)
are in `notebooks.views.editor`.

Domain errors not handled in place (a conflict that keeps a draft, a form error) reach
`grove.interfaces.middleware.WebErrorMiddleware`, which renders the one error page/partial.
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_POST

from grove.interfaces.diffs import revision_diff
from grove.interfaces.middleware import session_actor
from grove.interfaces.rendering import note_title, render_note, without_anchors
from grove.interfaces.tasklists import CHECKBOX, task_items
from grove.kernel.errors import GroveError, Invalid, NotFound
from notebooks import selectors, services
from notebooks.context import notebooks_for
from notebooks.forms import (
    ConfirmForm,
    DiffForm,
    FencedActionForm,
    NoteEditForm,
    NoteMoveForm,
    PinForm,
    join_title,
    split_title,
)
from notebooks.models import Note
from notebooks.rules import CONTENT_OUTER_MAX_CHARS
from notebooks.schemas.notes import NoteOut
from notebooks.views import undo
from notebooks.views.graph import layout
from notebooks.views.link_targets import page_resolver
from passages.rules import pieces

PANELS = ("edit", "move", "history", "share", "delete")


def note_page_response(request: HttpRequest, note_id: str | uuid.UUID, *,
                       edit_form: NoteEditForm | None = None, conflict: str | None = None,
                       status: int = 200, diff: dict[str, Any] | None = None,
                       page: selectors.NotePage | None = None,
                       panel: str | None = None) -> HttpResponse:
    """One note with its metadata, history and actions (`page`: read already). Missing,
    deleted and foreign notes are the same 404 (as over REST).

    `edit_form`: the editor as posted (a refused save or a conflict's kept draft) — the
    Edit panel opens with it; `panel` opens another one (a refused move or delete)."""
    if page is None:
        page = selectors.note_page(actor=session_actor(request), note_id=note_id)
    note, revisions = page.note, page.revisions
    notebooks = notebooks_for(request)
    place = notebooks.names.get(note.notebook_id, "") if note.notebook_id else "Personal"
    out = NoteOut.of(note)
    live = out.status == "active"
    newest = revisions[0].version if revisions else note.version
    # `?v=3`: that revision's text (where an Ask citation links), with the way back.
    viewing, missing_version = None, None
    if request.GET.get("v"):
        wanted = request.GET["v"]
        viewing = next((r for r in revisions if str(r.version) == wanted), None)
        missing_version = None if viewing else wanted[:12]
    shown = viewing.content if viewing else note.content
    links = page_resolver(page.links, note.notebook_id)
    # `&passage=7`: the passage an Ask citation names (`note:<id>@<v>#7`), highlighted
    # above the note it belongs to.
    cited = None
    if request.GET.get("passage", "").isdigit():
        position = int(request.GET["passage"])
        cut = pieces(viewing.kind if viewing else note.kind, shown)
        if 1 <= position <= len(cut):
            piece = cut[position - 1]
            cited = {"position": position, "of": len(cut), "headings": piece.headings,
                     "html": render_note(piece.text, links)}
    html = render_note(shown, links, anchors=True)
    # The preview's start: the note now, without the ids the page's text has.
    current = without_anchors(html) if viewing is None else render_note(note.content, links)
    if live and (viewing is None or viewing.version == note.version):
        html = _with_ticks(request, html, note)
    title = note_title(shown, path=note.source_path) or "(empty)"
    # An older version: the facts under the text are that version's, not the note's now.
    older = viewing if viewing is not None and viewing.version != note.version else None
    if older is not None:
        title = f"{title} (v{older.version} of {note.version})"
    if edit_form is None:
        head, body = split_title(note.content)
        edit_form = NoteEditForm(initial={"title": head, "content": body, "kind": note.kind,
                                          "tags": note.tags, "expected_version": note.version})
        preview: SafeString | None = current  # as the page draws it, no boxes to tick
        edited = False
    else:
        panel, edited, preview = "edit", True, preview_of(edit_form)
    if diff is not None:
        panel = panel or "history"
    return render(request, "notebooks/note.html", {
        **page.extras,  # what other apps read with the page (sharing: the share box's link)
        "section": "library", "note": out, "live": live, "page_title": title,
        "html": html, "viewing": viewing, "cited": cited,
        "missing_version": missing_version, "older": older,
        "older_place": (notebooks.names.get(older.notebook_id, "a notebook")
                        if older.notebook_id else "Personal") if older else None,
        "place": place, "current_notebook": next(
            (nb for nb in notebooks.all if nb.id == note.notebook_id), None),
        "revisions": revisions, "conflict": conflict, "panel": panel,
        "edit_form": edit_form, "edited": edited, "preview_html": preview,
        "move_form": NoteMoveForm(paths=notebooks.paths(), initial={
            "destination": str(note.notebook_id or ""), "origin": note.notebook_id}),
        "diff_form": DiffForm(initial={"a": max(1, newest - 1), "b": newest}),
        "diff": diff,
        "delete_form": ConfirmForm(),
        "backlinks": page.backlinks,
        "graph": layout(title, page.graph),
        "replaced_by": page.replaced_by and {
            "id": page.replaced_by.id,
            "title": note_title(page.replaced_by.content, 80,
                                path=page.replaced_by.source_path) or "(empty)"},
    }, status=status)


def preview_of(form: forms.Form) -> SafeString | None:
    """The preview of an editor form shown again (posted, or a conflict's kept draft)."""
    values = form.data if form.is_bound else form.initial
    title, body = values.get("title") or "", values.get("content") or ""
    if not isinstance(title, str) or not isinstance(body, str) \
            or len(title) + len(body) > CONTENT_OUTER_MAX_CHARS:
        return None
    return render_note(join_title(title, body).strip())


def _with_ticks(request: HttpRequest, html: SafeString, note: Note) -> SafeString:
    """The rendered note with each task-list checkbox made a one-button form that ticks
    or clears it (a POST: it works without JavaScript), at the version shown.

    The checkboxes in sanitised output can only be the task-list plugin's (the note's
    own HTML is escaped before nh3 sees it), and `task_items` finds the same boxes in the
    same order; should the counts ever differ, the boxes stay as drawn, disabled."""
    items = task_items(note.content)
    pieces = str(html).split(CHECKBOX)
    if not items or len(pieces) != len(items) + 1:
        return html
    token = get_token(request)
    out = [pieces[0]]
    for index, (item, piece) in enumerate(zip(items, pieces[1:], strict=True)):
        _, _, rest = piece.partition(">")  # the remainder of the <input …> tag
        label = f"{'Clear' if item.done else 'Tick'}: {item.text}"[:200]
        out.append(format_html(
            '<form method="post" action="{}" class="task-tick" id="task-{}">'
            '<input type="hidden" name="csrfmiddlewaretoken" value="{}">'
            '<input type="hidden" name="operation_id" value="{}">'
            '<input type="hidden" name="expected_version" value="{}">'
            '<input type="hidden" name="done" value="{}">'
            '<button type="submit" class="task-box" role="checkbox" aria-checked="{}" '
            'aria-label="{}" title="{}"></button></form>',
            reverse("note-task", args=[note.id, index]), index, token, uuid.uuid4(),
            note.version, "0" if item.done else "1", "true" if item.done else "false",
            item.text[:200] or f"Task {index + 1}", label))
        out.append(rest)
    return mark_safe("".join(out))  # noqa: S308 - escaped pieces of sanitised HTML


@login_required
@require_GET
def note_detail(request: HttpRequest, note_id: str) -> HttpResponse:
    return note_page_response(request, note_id)


NOTE_ACTIONS = {"archive": services.note_archive, "restore": services.note_restore,
                "delete": services.note_forget}
DONE = {"archive": "Archived.", "restore": "Restored.", "delete": "Deleted."}
UNDO: dict[str, undo.Kind] = {"archive": "note-archive", "delete": "note-delete"}


@login_required
@require_POST
def note_action(request: HttpRequest, note_id: str, action: str) -> HttpResponse:
    """Archive, restore or delete (with confirmation) one note."""
    actor = session_actor(request)
    if action not in NOTE_ACTIONS:
        raise Http404("No such action.")
    if action == "delete" and not ConfirmForm(request.POST).is_valid():
        return note_page_response(request, note_id, status=400, panel="delete",
                                  conflict="Tick the confirmation to delete this note.")
    form = FencedActionForm(request.POST)  # the fence comes with Undo
    if not form.is_valid():
        raise Invalid("That request is not valid.", code="invalid_request")
    result = NOTE_ACTIONS[action](
        actor=actor, operation_id=form.cleaned_data["operation_id"] or uuid.uuid4(),
        items=[{"id": note_id, "expectedVersion": form.cleaned_data["expected_version"]}])
    outcome = result.items[0]
    if outcome.status == "not_found":
        raise Http404("No such note.")
    if outcome.status in ("not_restorable", "version_conflict"):
        return note_page_response(
            request, note_id, status=409, conflict=undo.CHANGED
            if outcome.status == "version_conflict" else "This note cannot be restored: "
            "its notebook is archived or it expired too long ago. Restore the notebook "
            "first.")
    undone = UNDO.get(action)
    undo.offer(request, DONE[action],
               undo.Undo(undone, note_id, outcome.version or 0) if undone else None)
    return redirect("home") if action == "delete" else redirect("note", note_id=note_id)


@login_required
@require_POST
def note_restore_revision(request: HttpRequest, note_id: str, version: int) -> HttpResponse:
    try:
        services.note_restore_revision(
            actor=session_actor(request), operation_id=request.POST.get("operation_id")
            or uuid.uuid4(), note_id=note_id, revision=version)
    except GroveError as exc:
        if isinstance(exc, NotFound):
            raise
        return note_page_response(request, note_id, status=exc.status, conflict=exc.message,
                                  panel="history")
    messages.success(request, f"Restored the text of version {version}.")
    return redirect("note", note_id=note_id)


@login_required
@require_POST
def note_move(request: HttpRequest, note_id: str) -> HttpResponse:
    form = NoteMoveForm(request.POST)  # the service checks the destination
    if not form.is_valid():
        return note_page_response(request, note_id, status=400, panel="move",
                                  conflict="Pick a notebook to move the note to.")
    data, fence = form.cleaned_data, form.cleaned_data["expected_version"]
    try:
        moved = services.note_move(
            actor=session_actor(request), operation_id=data["operation_id"],
            note_ids=[note_id], notebook_id=data["destination"] or None,
            expected_versions={note_id: fence} if fence else None,
            relink=data["relink"])[0]
    except GroveError as exc:  # a missing note is still a 404: the page's read raises it
        return note_page_response(request, note_id, status=exc.status, panel="move",
                                  conflict=undo.CHANGED if exc.code == "version_conflict"
                                  else exc.message)
    # The note page's form says where the note was (`origin`); a move back (Undo) does not.
    came_from = data["origin"] if "origin" in form.data else moved.notebook_id
    said = "Moved." if not moved.relinked else (
        f"Moved, and the links to it updated in {moved.relinked} "
        f"note{'s' if moved.relinked != 1 else ''}.")
    undo.offer(request, said, undo.Undo("note-move", moved.id, moved.version, came_from)
               if came_from != moved.notebook_id else None)
    return redirect("note", note_id=note_id)


@login_required
@require_POST
def note_pin(request: HttpRequest, note_id: str) -> HttpResponse:
    """Pin or unpin the note: an ordinary update, fenced by the version the page showed.
    Pinned notes come first in what agents read (the brief) and have the sidebar's
    Pinned list."""
    form = PinForm(request.POST)
    if not form.is_valid():
        raise Invalid("That request is not valid.", code="invalid_request")
    data = form.cleaned_data
    try:
        services.note_update(
            actor=session_actor(request), operation_id=data["operation_id"] or uuid.uuid4(),
            note_id=note_id, expected_version=data["expected_version"],
            pinned=data["pinned"])
    except GroveError as exc:
        if isinstance(exc, NotFound):
            raise
        return note_page_response(
            request, note_id, status=exc.status, conflict="This note changed after the page "
            "was shown, so it was left as it is: here it is now." if exc.code ==
            "version_conflict" else exc.message)
    messages.success(request, "Pinned." if data["pinned"] else "Unpinned.")
    return redirect("note", note_id=note_id)


@login_required
@require_POST
def note_retry_indexing(request: HttpRequest, note_id: str) -> HttpResponse:
    note = services.note_retry_indexing(actor=session_actor(request), note_id=note_id)
    messages.success(request, "Indexing queued again." if note.indexing == "pending"
                     else f"Indexing is {note.indexing}; nothing to retry.")
    return redirect("note", note_id=note_id)


@login_required
@require_GET
def note_diff(request: HttpRequest, note_id: str) -> HttpResponse:
    """The difference between any two revisions (`?a=2&b=5`); HTMX swaps in `#diff`."""
    form = DiffForm(request.GET)
    if not form.is_valid():
        raise Invalid("Pick two versions to compare.", code="invalid_versions")
    page = selectors.note_page(actor=session_actor(request), note_id=note_id)
    revisions = {r.version: r for r in page.revisions}
    a, b = form.cleaned_data["a"], form.cleaned_data["b"]
    if a not in revisions or b not in revisions:
        raise Invalid(f"This note has versions 1 to {max(revisions)}.",
                      code="invalid_versions")
    diff = {"a": revisions[a], "b": revisions[b],
            "rows": revision_diff(revisions[a].content, revisions[b].content),
            "kind_changed": revisions[a].kind != revisions[b].kind}
    if request.htmx:  # type: ignore[attr-defined]
        return render(request, "notebooks/note.html#diff", {"diff": diff})
    return note_page_response(request, note_id, diff=diff, page=page)
