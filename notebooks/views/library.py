"""The browser library (SPEC §11): the notes list with search, filters and infinite
scroll; notebook management (with its vision card); import. The note page is
`notebooks.views.note_page`, the editor `notebooks.views.editor`. Each view
parses its input, calls one service or selector, and renders — a page, or with HTMX the
page's partial.

Domain errors not handled in place (a conflict that keeps a draft, a form error) reach
`grove.interfaces.middleware.WebErrorMiddleware`, which renders the one error page/partial.
"""

from __future__ import annotations

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
from grove.interfaces.rendering import title_and_excerpt
from grove.kernel.errors import GroveError, Invalid
from notebooks import rules, services
from notebooks.context import notebooks_for
from notebooks.forms import (
    LibraryForm,
    NotebookConfirmForm,
    NotebookEditForm,
    NotebookForm,
)
from notebooks.models import Notebook
from notebooks.schemas.notes import NoteOut
from notebooks.selectors import search, vision_pages
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
    keys = ("q", "notebook", "sub", "kind", "agent", "tag", "pinned", "lifetime", "status",
            "sort")
    params = {k: data.get(k) for k in keys if data.get(k)}
    for key, value in changes.items():  # None or "": that one taken off
        if value in (None, ""):
            params.pop(key, None)
        else:
            params[key] = value
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
    full_page = not request.htmx or request.htmx.history_restore_request  # type: ignore[attr-defined]
    # A whole page: its filter form offers the agents that saved notes, read with the
    # sidebar's notebooks in one transaction (before `_place_of` reads the notebooks).
    shelf = notebooks_for(request, agents=bool(full_page))
    place, notebook, where = _place_of(request, data["notebook"])
    query = data["q"] if data["q"].strip() else None  # as typed: see search_terms
    if data["sort"] == "relevance" and query is None:
        data["sort"] = ""  # nothing to rank by: the default order, not an error page
    page = search.note_search(
        actor=actor, query=query, notebook_id=where, include_subnotebooks=data["sub"] == "1",
        kinds=[data["kind"]] if data["kind"] else None,
        source_agent=data["agent"].strip() or None, tag=data["tag"] or None,
        pinned=True if data["pinned"] else None, lifetime=data["lifetime"] or None,
        status=data["status"] or "active", sort=data["sort"] or None,
        cursor=data["cursor"] or None, limit=PAGE_SIZE, matches=query is not None,
        exact_count=False)
    names = shelf.names
    rows = []
    for item in page.data:
        # A search shows its own excerpt (the matches' snippet): only the title is rendered.
        title, excerpt = title_and_excerpt(item.note.content, excerpt=item.matches is None,
                                           path=item.note.source_path)
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
        "filtered": any(data.get(k) for k in ("kind", "agent", "tag", "pinned", "lifetime",
                                               "sort"))
        or data["status"] not in ("", "active"),
        "status": data["status"] or "active",
        # The sidebar's Pinned and tag filters on (shown as chips that take them off).
        "tag": data["tag"], "pinned": bool(data["pinned"]),
        "without_tag": "?" + _library_query(data, tag=None) if data["tag"] else None,
        "without_pinned": "?" + _library_query(data, pinned=None) if data["pinned"] else None,
        # The bulk bar (notebooks.views.bulk): where to move to, and its batch's id.
        "bulk": {"places": notebooks_for(request).paths(), "operation_id": uuid.uuid4(),
                 "max": rules.BATCH_MAX},
    }
    template = "notebooks/home.html"
    if not full_page:
        template += "#rows" if data["cursor"] else "#results"
    else:
        context["agents"] = _agent_choices(shelf.agents or [], chosen=data["agent"].strip())
    return render(request, template, context)


def _agent_choices(agents: list[str], *, chosen: str) -> list[tuple[str, str]]:
    """"Saved by": (value, label) of every agent that saved a note of the account, and
    the chosen one even when no note has it (any more), so the form shows the filter
    that is on."""
    if chosen and chosen not in agents:
        agents = sorted([*agents, chosen], key=lambda name: (name.casefold(), name))
    return [(agent, "you (website)" if agent == "website" else agent) for agent in agents]


# -- creating notebooks -----------------------------------------------------------------------


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
