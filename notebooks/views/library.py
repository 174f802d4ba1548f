"""The browser library (SPEC §11): the notes list with search, filters and infinite
scroll; the note page; notebook management (with its vision card); import. Each view
parses its input, calls one service or selector, and renders — a page, or with HTMX the
page's partial.

Domain errors not handled in place (a conflict that keeps a draft, a form error) reach
`grove.interfaces.middleware.WebErrorMiddleware`, which renders the one error page/partial.
"""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from grove.interfaces.middleware import session_actor
from grove.interfaces.rendering import render_markdown, revision_diff, title_and_excerpt
from grove.kernel.errors import GroveError, Invalid, NotFound
from notebooks import rules, selectors, services
from notebooks.context import notebooks_for
from notebooks.forms import (
    ConfirmForm,
    DiffForm,
    FencedActionForm,
    ImportForm,
    LibraryForm,
    NotebookConfirmForm,
    NotebookEditForm,
    NotebookForm,
    NoteEditForm,
    NoteForm,
    NoteMoveForm,
)
from notebooks.models import Notebook
from notebooks.schemas.notes import NoteOut
from notebooks.selectors import search, vision_pages
from notebooks.services import portability
from notebooks.views import undo

PAGE_SIZE = 25
LIBRARY_FORM_ID = "library"


# -- library -----------------------------------------------------------------------------------


@dataclass
class Row:
    """One note in the library list."""

    note: NoteOut
    place: str
    title: str
    excerpt: SafeString
    declared: bool = False  # named by a ground-truth declaration


def _highlighted(snippet: str) -> SafeString:
    """A search headline with «matched» terms as <mark> (escaped first: it is note text)."""
    marked = str(escape(snippet)).replace("«", "<mark>").replace("»", "</mark>")
    return mark_safe(marked)  # noqa: S308 - escaped just above; only <mark> added


def _place_of(request: HttpRequest, raw: str) -> tuple[str, Notebook | None, Any]:
    """("everything" | "personal" | "notebook", the notebook, the search argument)."""
    if not raw:
        return "everything", None, rules.EVERYWHERE
    if raw == "personal":
        return "personal", None, None
    notebooks = notebooks_for(request)
    for nb in notebooks.all:
        if str(nb.id) == raw:
            return "notebook", nb, nb.id
    raise Http404("No such notebook.")


def _library_query(data: dict[str, Any], **changes: Any) -> str:
    """The query string of this library view (for links, paging and filters)."""
    keys = ("q", "notebook", "sub", "kind", "agent", "lifetime", "status", "sort")
    params = {k: data.get(k) for k in keys if data.get(k)}
    params.update({k: v for k, v in changes.items() if v not in (None, "")})
    if params.get("status") == "active":
        params.pop("status")
    return urlencode(params)


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The library: notes of everything granted, Personal, or one notebook; search as
    you type, filters, sorts, and infinite scroll by the search selector's signed cursor.
    HTMX asks for `#results` (a new search) or `#rows` (the next page)."""
    actor = session_actor(request)
    form = LibraryForm(request.GET)
    if not form.is_valid():
        if "q" in form.errors:
            raise Invalid(f"Search for at most {rules.SEARCH_QUERY_MAX_CHARS} characters: "
                          "shorten it to the words that matter.", code="invalid_query")
        raise Invalid("Those filters are not valid: "
                      + "; ".join(f"{k}: {' '.join(map(str, v))}" for k, v in form.errors.items()),
                      code="invalid_filters")
    data = form.cleaned_data
    place, notebook, where = _place_of(request, data["notebook"])
    query = data["q"] if data["q"].strip() else None  # as typed: see search_terms
    if data["sort"] == "relevance" and query is None:
        data["sort"] = ""  # nothing to rank by: the default order, not an error page
    page = search.note_search(
        actor=actor, query=query, notebook_id=where, include_subnotebooks=data["sub"] == "1",
        kinds=[data["kind"]] if data["kind"] else None,
        source_agent=data["agent"].strip() or None, lifetime=data["lifetime"] or None,
        status=data["status"] or "active", sort=data["sort"] or None,
        cursor=data["cursor"] or None, limit=PAGE_SIZE, matches=query is not None,
        exact_count=False)
    names = notebooks_for(request).names
    rows = []
    for item in page.data:
        title, excerpt = title_and_excerpt(item.note.content)
        rows.append(Row(
            note=item.note, declared=item.declared,
            place=names.get(item.note.notebook_id, "") if item.note.notebook_id else "Personal",
            title=title,
            excerpt=_highlighted(item.matches.snippet) if item.matches else escape(excerpt)))
    shown = (data["shown"] or 0) + len(rows) if data["cursor"] else len(rows)
    next_url = None
    if page.meta.next_cursor:
        next_url = "?" + _library_query(data, cursor=page.meta.next_cursor, shown=shown)
    context = {
        "section": "library", "place": place, "current_notebook": notebook,
        "form": form, "library_form_id": LIBRARY_FORM_ID, "search_query": data["q"].strip(),
        "rows": rows, "shown": shown, "available": page.meta.available, "next_url": next_url,
        # A lower bound shown as "1,000+": more than that cannot be told apart cheaply.
        "at_least": page.lower_bound, "counted": min(page.meta.available, rules.SEARCH_RANK_MAX)
        if page.lower_bound else page.meta.available,
        "unranked": query is not None and page.sort != (data["sort"] or "relevance"),
        "filtered": any(data.get(k) for k in ("kind", "agent", "lifetime", "sort"))
        or data["status"] not in ("", "active"),
        "status": data["status"] or "active",
    }
    template = "notebooks/home.html"
    if request.htmx and not request.htmx.history_restore_request:  # type: ignore[attr-defined]
        template += "#rows" if data["cursor"] else "#results"
    return render(request, template, context)


# -- creating notes and notebooks --------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def note_create(request: HttpRequest) -> HttpResponse:
    """The new-note page; saving goes to the note. The operation id in the form makes a
    double submit save once."""
    actor = session_actor(request)
    if request.method == "GET":
        form = NoteForm(paths=notebooks_for(request).paths(),
                        initial={"notebook": request.GET.get("notebook", "")})
        return render(request, "notebooks/new_note.html", {"form": form, "section": "library"})
    form = NoteForm(request.POST)  # the service checks the notebook
    if form.is_valid():
        data = form.cleaned_data
        try:
            saved = services.note_remember(
                actor=actor, operation_id=data["operation_id"], content=data["content"],
                kind=data["kind"], notebook_id=data["notebook"] or None,
                task_id=data["task_id"] or None, source_agent="website",
            )
        except GroveError as exc:
            form.add_error(None, exc.message)
        else:
            assert saved.note is not None  # the owner's own saves are never held
            return redirect("note", note_id=saved.note.id)
    return render(request, "notebooks/new_note.html", {
        "form": form.shown(notebooks_for(request).paths()), "section": "library"}, status=400)


@login_required
@require_http_methods(["GET", "POST"])
def notebook_create(request: HttpRequest) -> HttpResponse:
    actor = session_actor(request)
    if request.method == "GET":
        form = NotebookForm(paths=notebooks_for(request).paths(),
                            initial={"parent": request.GET.get("parent", "")})
        return render(request, "notebooks/new_notebook.html", {"form": form})
    form = NotebookForm(request.POST)  # the service checks the parent
    if form.is_valid():
        data = form.cleaned_data
        try:
            created = services.notebook_create(
                actor=actor, operation_id=data["operation_id"], name=data["name"],
                parent_id=data["parent"] or None,
            )
        except GroveError as exc:
            form.add_error(None, exc.message)
        else:
            return redirect(reverse("home") + f"?notebook={created.id}")
    return render(request, "notebooks/new_notebook.html",
                  {"form": form.shown(notebooks_for(request).paths())}, status=400)


# -- the note page -----------------------------------------------------------------------------


def _note_page(request: HttpRequest, note_id: str, *, edit_form: NoteEditForm | None = None,
               conflict: str | None = None, status: int = 200,
               diff: dict[str, Any] | None = None,
               page: selectors.NotePage | None = None) -> HttpResponse:
    """One note with its metadata, history and actions (`page`: read already). Missing,
    deleted and foreign notes are the same 404 (as over REST)."""
    if page is None:
        page = selectors.note_page(actor=session_actor(request), note_id=note_id)
    note, revisions = page.note, page.revisions
    notebooks = notebooks_for(request)
    place = notebooks.names.get(note.notebook_id, "") if note.notebook_id else "Personal"
    out = NoteOut.of(note)
    newest = revisions[0].version if revisions else note.version
    # `?v=3`: that revision's text (where an Ask citation links), with the way back.
    viewing, missing_version = None, None
    if request.GET.get("v"):
        wanted = request.GET["v"]
        viewing = next((r for r in revisions if str(r.version) == wanted), None)
        missing_version = None if viewing else wanted[:12]
    return render(request, "notebooks/note.html", {
        **page.extras,  # what other apps read with the page (sharing: the share box's link)
        "section": "library", "note": out,
        "html": render_markdown(viewing.content if viewing else note.content),
        "viewing": viewing, "missing_version": missing_version,
        "place": place, "current_notebook": next(
            (nb for nb in notebooks.all if nb.id == note.notebook_id), None),
        "revisions": revisions, "conflict": conflict,
        "edit_form": edit_form or NoteEditForm(initial={
            "content": note.content, "kind": note.kind, "expected_version": note.version}),
        "move_form": NoteMoveForm(paths=notebooks.paths(), initial={
            "destination": str(note.notebook_id or ""), "origin": note.notebook_id}),
        "diff_form": DiffForm(initial={"a": max(1, newest - 1), "b": newest}),
        "diff": diff,
        "delete_form": ConfirmForm(),
    }, status=status)


@login_required
@require_GET
def note_detail(request: HttpRequest, note_id: str) -> HttpResponse:
    return _note_page(request, note_id)


@login_required
@require_POST
def note_edit(request: HttpRequest, note_id: str) -> HttpResponse:
    form = NoteEditForm(request.POST)
    if not form.is_valid():
        return _note_page(request, note_id, edit_form=form, status=400)
    data = form.cleaned_data
    try:
        services.note_update(
            actor=session_actor(request), operation_id=data["operation_id"], note_id=note_id,
            expected_version=data["expected_version"], content=data["content"],
            kind=data["kind"])
    except GroveError as exc:
        if exc.code == "version_conflict":
            # Keep the draft; the page shows the newer text above it. Resubmitting
            # overwrites it knowingly (the form now carries the newer version).
            draft = NoteEditForm(initial={**data, "operation_id": uuid.uuid4(),
                                          "expected_version": exc.details["current_version"]})
            return _note_page(request, note_id, edit_form=draft, status=409,
                              conflict="Someone changed this note while you were editing. "
                                       "The newer text is shown above; your draft is kept "
                                       "below — save again to replace it.")
        if isinstance(exc, NotFound):
            raise
        form.add_error(None, exc.message)
        return _note_page(request, note_id, edit_form=form, status=exc.status)
    messages.success(request, "Saved.")
    return redirect("note", note_id=note_id)


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
        return _note_page(request, note_id, status=400,
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
        return _note_page(request, note_id, status=409, conflict=undo.CHANGED
                          if outcome.status == "version_conflict" else "This note cannot be "
                          "restored: its notebook is archived or it has expired. Restore "
                          "the notebook first.")
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
        return _note_page(request, note_id, status=exc.status, conflict=exc.message)
    messages.success(request, f"Restored the text of version {version}.")
    return redirect("note", note_id=note_id)


@login_required
@require_POST
def note_move(request: HttpRequest, note_id: str) -> HttpResponse:
    form = NoteMoveForm(request.POST)  # the service checks the destination
    if not form.is_valid():
        return _note_page(request, note_id, status=400,
                          conflict="Pick a notebook to move the note to.")
    data, fence = form.cleaned_data, form.cleaned_data["expected_version"]
    try:
        moved = services.note_move(
            actor=session_actor(request), operation_id=data["operation_id"],
            note_ids=[note_id], notebook_id=data["destination"] or None,
            expected_versions={note_id: fence} if fence else None)[0]
    except GroveError as exc:  # a missing note is still a 404: the page's read raises it
        return _note_page(request, note_id, status=exc.status, conflict=undo.CHANGED
                          if exc.code == "version_conflict" else exc.message)
    # The note page's form says where the note was (`origin`); a move back (Undo) does not.
    came_from = data["origin"] if "origin" in form.data else moved.notebook_id
    undo.offer(request, "Moved.", undo.Undo("note-move", moved.id, moved.version, came_from)
               if came_from != moved.notebook_id else None)
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
    return _note_page(request, note_id, diff=diff, page=page)


# -- notebooks ---------------------------------------------------------------------------------


def notebook_page_response(request: HttpRequest, notebook_id: str | uuid.UUID, *,
                           form: NotebookEditForm | None = None, problem: str | None = None,
                           vision_shown: dict[str, Any] | None = None,
                           status: int = 200) -> HttpResponse:
    """The notebook page (`vision_shown`: a refused vision edit, shown again in its
    card — notebooks.views.vision)."""
    read = vision_pages.notebook_vision_page(actor=session_actor(request),
                                             notebook_id=notebook_id)
    page = read.page
    notebook, counts = page.notebook, page.counts
    notebooks = notebooks_for(request)
    # The parent picker offers every live notebook outside this one's subtree.
    inside = {notebook.id}
    for nb, _depth in notebooks.tree:
        if nb.parent_id in inside:
            inside.add(nb.id)
    paths = [(nb, path) for nb, path in notebooks.paths() if nb.id not in inside]
    return render(request, "notebooks/notebook.html", {
        **page.extras,  # what other apps read with the page (sharing: the share box's link)
        "section": "library", "notebook": notebook, "counts": counts, "problem": problem,
        "current_notebook": notebook,
        "form": form.shown(paths) if form is not None else NotebookEditForm(
            paths=paths, initial={"name": notebook.name,
                                  "parent": str(notebook.parent_id or "")}),
        "confirm": {action: NotebookConfirmForm(auto_id=f"{action}-%s")
                    for action in NOTEBOOK_ACTIONS},
        "vision_card": read.vision,
        "truth_card": read.truth,
        **(vision_shown or {}),
    }, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def notebook_manage(request: HttpRequest, notebook_id: str) -> HttpResponse:
    """Rename and move (a parent picker, no dragging); the subtree counts that archive,
    restore and delete would act on."""
    if request.method == "GET":
        return notebook_page_response(request, notebook_id)
    form = NotebookEditForm(request.POST)  # the service checks the parent
    if not form.is_valid():
        return notebook_page_response(request, notebook_id, form=form, status=400)
    data = form.cleaned_data
    try:
        services.notebook_update(
            actor=session_actor(request), operation_id=data["operation_id"],
            notebook_id=notebook_id, name=data["name"], parent_id=data["parent"] or None)
    except GroveError as exc:  # a missing notebook is still a 404: the page's read raises it
        form.add_error(None, exc.message)
        return notebook_page_response(request, notebook_id, form=form, status=exc.status)
    messages.success(request, "Notebook saved.")
    return redirect("notebook", notebook_id=notebook_id)


NOTEBOOK_ACTIONS = {"archive": services.notebook_archive,
                    "restore": services.notebook_restore,
                    "delete": services.notebook_delete}
NOTEBOOK_UNDO: dict[str, undo.Kind] = {"archive": "notebook-archive",
                                       "delete": "notebook-delete"}


@login_required
@require_POST
def notebook_action(request: HttpRequest, notebook_id: str, action: str) -> HttpResponse:
    """Archive, restore or delete a notebook with everything inside it, after the owner
    confirmed the counts shown on the notebook page."""
    if action not in NOTEBOOK_ACTIONS:
        raise Http404("No such action.")
    form = NotebookConfirmForm(request.POST)
    if not form.is_valid():
        return notebook_page_response(request, notebook_id, status=400,
                              problem="Tick the confirmation first.")
    counts = NOTEBOOK_ACTIONS[action](
        actor=session_actor(request), notebook_id=notebook_id,
        operation_id=form.cleaned_data["operation_id"] or uuid.uuid4())
    verb = {"archive": "Archived", "restore": "Restored", "delete": "Deleted"}[action]
    undone = NOTEBOOK_UNDO.get(action)
    undo.offer(request, f"{verb} {counts.notebooks} notebook"
               f"{'s' if counts.notebooks != 1 else ''} and {counts.notes} note"
               f"{'s' if counts.notes != 1 else ''}.",
               undo.Undo(undone, notebook_id) if undone else None)
    if action == "delete":
        return redirect("home")
    return redirect("notebook", notebook_id=notebook_id)


# -- import ------------------------------------------------------------------------------------


@login_required
@require_POST
def account_import_upload(request: HttpRequest) -> HttpResponse:
    """Import an export file (NDJSON) into this account: all or nothing."""
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        raise Invalid("Choose an export file to import.", code="invalid_file")
    lines = io.TextIOWrapper(form.cleaned_data["file"].file, encoding="utf-8")
    try:
        result = portability.account_import(actor=session_actor(request),
                                             records=portability.ndjson_records(lines))
    except UnicodeDecodeError:
        raise Invalid("The file is not UTF-8 text.", code="invalid_import") from None
    messages.success(request, f"Imported {result.notebooks} notebooks, {result.notes} notes, "
                     f"{result.revisions} revisions and {result.visions} visions.")
    return redirect("settings")
