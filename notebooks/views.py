"""The minimal library page: the owner's notebooks and notes, with create forms.
(The full library UI is built on the same services and selectors.)"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from grove.errors import GroveError, NotFound
from grove.middleware import session_actor
from notebooks import selectors, services
from notebooks.forms import NotebookForm, NoteForm
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


@login_required
@require_GET
def note_detail(request: HttpRequest, note_id: str) -> HttpResponse:
    """One note with its metadata and history. Missing, deleted and foreign notes are the
    same 404 (as over REST)."""
    actor = session_actor(request)
    try:
        note = selectors.note_get(actor=actor, note_id=note_id)
        revisions = selectors.note_revisions(actor=actor, note_id=note_id)
    except NotFound:
        raise Http404("No such note.") from None
    place = "Personal"
    if note.notebook_id:
        place = selectors.notebook_out(actor=actor, notebook_id=note.notebook_id).name
    return render(request, "notebooks/note.html", {
        "note": NoteOut.of(note), "html": render_markdown(note.content), "place": place,
        "revisions": revisions})
