"""The library's bulk bar: archive, restore, delete, move or tag the ticked notes in one
batch (a drop of rows onto a notebook of the sidebar posts here too), and the Undo of
such a batch. Plain form posts: without JavaScript the boxes, the bar and its buttons
work the same; after the batch the browser goes back to the same library page
(post/redirect/get) with what was done — and what was left as it was — in the flash.

Each ticked box sends `<note id>@<version shown>`, so a note changed since the page was
read is left as it is and named in the message, never overwritten.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from grove.interfaces.middleware import session_actor
from grove.kernel.errors import Invalid
from notebooks import services
from notebooks.context import notebooks_for
from notebooks.forms import BulkForm, BulkUndoForm
from notebooks.rules import TAGS_MAX
from notebooks.schemas.bulk import BulkOut
from notebooks.schemas.notes import BatchOut
from notebooks.views import undo

BATCHES = {"archive": services.note_archive, "restore": services.note_restore,
           "delete": services.note_forget}
UNDO: dict[str, undo.Kind] = {"archive": "notes-archive", "delete": "notes-delete",
                              "move": "notes-move", "tag": "notes-tag", "untag": "notes-tag"}


def notes(count: int) -> str:
    return f"{count:,} note{'' if count == 1 else 's'}"


def _back(request: HttpRequest, raw: str) -> str:
    """The library page the bar was on (its filters and search kept): only a path of
    the library on this site, else the library itself."""
    home = reverse("home")
    parts = urlsplit(raw or "")
    if parts.scheme or parts.netloc or parts.path != home or "\\" in raw:
        return home
    return home + (f"?{parts.query}" if parts.query else "")


@login_required
@require_POST
def notes_bulk(request: HttpRequest) -> HttpResponse:
    """One batch over the ticked notes (at most `BATCH_MAX`; more → 400
    `batch_too_large`, before anything changes)."""
    form = BulkForm(request.POST)
    if not form.is_valid():
        raise form.problem()
    data = form.cleaned_data
    actor, action, batch = session_actor(request), data["action"], data["operation_id"]
    result: BatchOut | BulkOut
    place = ""
    if action == "move":
        destination = None if data["destination"] == "personal" else data["destination"]
        result = services.note_move_many(actor=actor, operation_id=batch,
                                         items=data["note"], notebook_id=destination)
        place = notebooks_for(request).names.get(destination, "the notebook") \
            if destination else "Personal"
    elif action in ("tag", "untag"):
        tag = {"add" if action == "tag" else "remove": data["tag"]}
        result = services.note_tag(actor=actor, operation_id=batch, items=data["note"], **tag)
    else:
        result = BATCHES[action](actor=actor, operation_id=batch, items=data["note"])
    done, said = _said(action, result, place=place, tag=data["tag"].strip())
    if said:
        kind = UNDO.get(action)
        undo.offer(request, said, undo.Undo(kind, batch) if kind and done else None)
    problems = _problems(result, action=action)
    if problems:
        held = sum(1 for item in result.items if item.status == "not_moved")
        if held:  # a move is all or nothing (SPEC §3)
            problems.insert(0, f"Nothing was moved: a batch moves all its notes or none, "
                            f"and {notes(held)} could have.")
        messages.warning(request, " ".join(problems))
    return redirect(_back(request, data["next"]))


@login_required
@require_POST
def notes_bulk_undo(request: HttpRequest) -> HttpResponse:
    """The Undo of a batch (`note_batch_undo`): each note back as it was, unless it
    changed since."""
    form = BulkUndoForm(request.POST)
    if not form.is_valid():
        raise Invalid("That Undo is not valid.", code="invalid_request")
    data = form.cleaned_data
    result = services.note_batch_undo(actor=session_actor(request),
                                      operation_id=data["operation_id"], batch_id=data["batch"])
    undone = result.count("undone")
    if undone:
        messages.success(request, f"Undone: {notes(undone)} "
                         f"{'is' if undone == 1 else 'are'} back as "
                         f"{'it was' if undone == 1 else 'they were'}.")
    problems = _problems(result, action="undo")
    if problems:
        messages.warning(request, ("Nothing was undone. " if not undone else "")
                         + " ".join(problems))
    elif not undone:
        messages.info(request, "There was nothing left to undo.")
    return redirect(_back(request, data["next"]))


DONE = {"archive": ("archived", "Archived {n}."), "restore": ("restored", "Restored {n}."),
        "delete": ("deleted", "Deleted {n}."), "move": ("moved", "Moved {n} to {place}."),
        "tag": ("tagged", "Tagged {n} “{tag}”."),
        "untag": ("tagged", "Removed the tag “{tag}” from {n}.")}
UNCHANGED = {"move": "{n} {were} in {place} already.", "tag": "{n} had it already.",
             "untag": "{n} did not have it."}


def _said(action: str, result: BatchOut | BulkOut, *, place: str,
          tag: str) -> tuple[int, str]:
    """How many notes the batch changed, and the sentence that says so."""
    status, text = DONE[action]
    done = sum(1 for item in result.items if item.status == status)
    unchanged = sum(1 for item in result.items if item.status == "unchanged")
    said = [text.format(n=notes(done), place=place, tag=tag)] if done else []
    if unchanged and action in UNCHANGED:
        said.append(UNCHANGED[action].format(n=notes(unchanged), place=place,
                                             were="was" if unchanged == 1 else "were"))
    return done, " ".join(said)


REFUSED = {
    "handoff_exists": "{n} {were} left as {they_were}: a live handoff of the same task is "
                      "there already.",
    "note_not_active": "{n} {were} left as {they_were}: archived and expired notes are not "
                       "tagged (restore them first).",
    "invalid_tags": f"{{n}} {{were}} left as {{they_were}}: a note has at most {TAGS_MAX} "
                    "tags.",
    "notebook_deleted": "{n} {were} left as {they_were}: {their} notebook is deleted "
                        "(restore it first).",
    "notebook_not_found": "{n} {were} left as {they_were}: the notebook {they} came from "
                          "is gone.",
    "notebook_archived": "{n} {were} left as {they_were}: {their} notebook is archived "
                         "(restore it first).",
    "not_restorable": "{n} can no longer be restored.",
}


def _problems(result: BatchOut | BulkOut, *, action: str) -> list[str]:
    """The notes left as they were, by reason, one sentence each."""
    said = []
    counts: dict[str, int] = {}
    for item in result.items:
        key = item.status if item.status != "refused" else \
            f"refused:{getattr(item, 'code', None) or 'other'}"
        counts[key] = counts.get(key, 0) + 1
    for key, count in counts.items():
        words = _words(count)
        if key == "version_conflict":
            said.append("{n} changed meanwhile and {were} left as {they_were}."
                        .format(**words))
        elif key == "not_found":
            said.append("{n} {were} not found (deleted meanwhile?) and left out.".format(**words))
        elif key == "not_restorable":
            said.append(REFUSED["not_restorable"].format(**words))
        elif key.startswith("refused:"):
            code = key.removeprefix("refused:")
            said.append(REFUSED.get(code, "{n} {were} left as {they_were} (" + code + ").")
                        .format(**words))
    return said


def _words(count: int) -> dict[str, Any]:
    one = count == 1
    return {"n": notes(count), "were": "was" if one else "were",
            "they_were": "it was" if one else "they were", "they": "it" if one else "they",
            "their": "its" if one else "their"}
