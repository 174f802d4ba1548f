"""The minimal library page: the owner's notebooks and notes, with create forms.
(The full library UI is built on the same services and selectors.)"""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from grove.errors import GroveError, NotFound
from grove.middleware import session_actor
from notebooks import selectors, services
from notebooks.forms import ConfirmForm, NotebookForm, NoteEditForm, NoteForm
from notebooks.models import Notebook
from notebooks.rendering import render_markdown
from notebooks.schemas import NoteOut


def _tree(notebooks: list[Notebook]) -> list[tuple[Notebook, int]]:
    """Notebooks depth-first with their depth; a notebook whose parent is not listed
    (archived or outside the grant) is shown at the top level."""
    listed = {nb.id for nb in notebooks}
    children: dict[object, list[Notebook]] = {}
    for nb in notebooks:
        parent = nb.parent_id if nb.parent_id in listed else None
        children.setdefault(parent, []).append(nb)
    ordered: list[tuple[Notebook, int]] = []

    def walk(parent: object, depth: int) -> None:
        for nb in children.get(parent, []):
            ordered.append((nb, depth))
            walk(nb.id, depth + 1)

    walk(None, 0)
    return ordered


def _page(request: HttpRequest, *, note_form: NoteForm | None = None,
          notebook_form: NotebookForm | None = None, status: int = 200) -> HttpResponse:
    actor = session_actor(request)
    notebooks = selectors.notebook_list(actor=actor)
    notes = selectors.note_list(actor=actor, limit=200)
    names = {nb.id: nb.name for nb in notebooks}
    return render(
        request,
        "notebooks/home.html",
        {
            "notebooks": _tree(notebooks),
            "notes": [
                (note, names.get(note.notebook_id, "") if note.notebook_id else "Personal")
                for note in notes
            ],
            "note_form": note_form or NoteForm(notebooks=notebooks),
            "notebook_form": notebook_form or NotebookForm(notebooks=notebooks),
        },
        status=status,
    )


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return _page(request)


@login_required
@require_POST
def note_create(request: HttpRequest) -> HttpResponse:
    actor = session_actor(request)
    notebooks = selectors.notebook_list(actor=actor)
    form = NoteForm(request.POST, notebooks=notebooks)
    if form.is_valid():
        data = form.cleaned_data
        try:
            services.note_remember(
                actor=actor, operation_id=data["operation_id"], content=data["content"],
                kind=data["kind"], notebook_id=data["notebook"] or None,
                task_id=data["task_id"] or None, source_agent="website",
            )
        except GroveError as exc:
            form.add_error(None, exc.message)
        else:
            return redirect("home")
    return _page(request, note_form=form, status=400)


@login_required
@require_POST
def notebook_create(request: HttpRequest) -> HttpResponse:
    actor = session_actor(request)
    notebooks = selectors.notebook_list(actor=actor)
    form = NotebookForm(request.POST, notebooks=notebooks)
    if form.is_valid():
        data = form.cleaned_data
        try:
            services.notebook_create(
                actor=actor, operation_id=data["operation_id"], name=data["name"],
                parent_id=data["parent"] or None,
            )
        except GroveError as exc:
            form.add_error(None, exc.message)
        else:
            return redirect("home")
    return _page(request, notebook_form=form, status=400)


def _note_page(request: HttpRequest, note_id: str, *, edit_form: NoteEditForm | None = None,
               conflict: str | None = None, status: int = 200) -> HttpResponse:
    """One note with its metadata, history and actions. Missing, deleted and foreign
    notes are the same 404 (as over REST)."""
    actor = session_actor(request)
    try:
        note = selectors.note_get(actor=actor, note_id=note_id)
        revisions = selectors.note_revisions(actor=actor, note_id=note_id)
    except NotFound:
        raise Http404("No such note.") from None
    place = "Personal"
    if note.notebook_id:
        place = selectors.notebook_out(actor=actor, notebook_id=note.notebook_id).name
    out = NoteOut.of(note)
    return render(request, "notebooks/note.html", {
        "note": out, "html": render_markdown(note.content), "place": place,
        "revisions": revisions, "conflict": conflict,
        "edit_form": edit_form or NoteEditForm(initial={
            "content": note.content, "kind": note.kind, "expected_version": note.version}),
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
    except NotFound:
        raise Http404("No such note.") from None
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
        form.add_error(None, exc.message)
        return _note_page(request, note_id, edit_form=form, status=exc.status)
    return redirect("note", note_id=note_id)


NOTE_ACTIONS = {"archive": services.note_archive, "restore": services.note_restore,
                "delete": services.note_forget}


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
    operation_id = request.POST.get("operation_id") or uuid.uuid4()
    try:
        result = NOTE_ACTIONS[action](actor=actor, operation_id=operation_id, items=[note_id])
    except GroveError as exc:
        return _note_page(request, note_id, status=exc.status, conflict=exc.message)
    if result.items[0].status == "not_found":
        raise Http404("No such note.")
    if action == "delete":
        return redirect("home")
    return redirect("note", note_id=note_id)


@login_required
@require_POST
def note_restore_revision(request: HttpRequest, note_id: str, version: int) -> HttpResponse:
    try:
        services.note_restore_revision(
            actor=session_actor(request), operation_id=request.POST.get("operation_id")
            or uuid.uuid4(), note_id=note_id, revision=version)
    except NotFound:
        raise Http404("No such note.") from None
    except GroveError as exc:
        return _note_page(request, note_id, status=exc.status, conflict=exc.message)
    return redirect("note", note_id=note_id)
