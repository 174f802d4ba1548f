"""The Ground truth card's forms (SPEC §10): declare a notebook's authoritative notes and
its policy, set whether it inherits the account's and whether agents' writes are checked
against it, keep its negative claims, and accept or reject the agents' writes held for
the owner. Each form calls one service and
redirects back to the card (post/redirect/get); a refusal is said in the flash area."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from grove.interfaces.middleware import session_actor
from grove.kernel.errors import GroveError, Invalid, NotFound
from notebooks import services


def _back(notebook_id: uuid.UUID) -> HttpResponse:
    return redirect(reverse("notebook", args=[notebook_id]) + "#truth")


def _run(request: HttpRequest, notebook_id: uuid.UUID, action: Callable[[], str]
         ) -> HttpResponse:
    """Run one service; say what it did, or why it refused, and go back to the card.
    An unknown or foreign notebook is the 404 page."""
    try:
        messages.success(request, action())
    except NotFound:
        raise
    except GroveError as refused:
        messages.error(request, refused.message)
    return _back(notebook_id)


def _ids(values: list[str]) -> list[str]:
    """Note ids from the picker's checkboxes and the free field (ids of notes elsewhere,
    separated by spaces, commas or new lines; `note:<id>@<v>` as recall cites them)."""
    found = []
    for value in values:
        for word in value.replace(",", " ").split():
            word = word.removeprefix("note:").split("@", 1)[0]
            try:
                found.append(str(uuid.UUID(word)))
            except ValueError:
                raise Invalid(f"“{word[:60]}” is not a note id.", code="invalid_id") from None
    return found


@login_required
@require_POST
def notebook_truth_declare(request: HttpRequest, notebook_id: uuid.UUID) -> HttpResponse:
    def declare() -> str:
        ids = _ids(request.POST.getlist("note") + [request.POST.get("more", "")])
        truth = services.truth_declare(actor=session_actor(request), notebook_id=notebook_id,
                                       note_ids=ids, policy=request.POST.get("policy", ""))
        if truth.state == "none" or truth.state == "inherited":
            return "Declaration cleared."
        return f"Declared {len(truth.notes)} note{'s' if len(truth.notes) != 1 else ''} " \
               f"({truth.policy})."
    return _run(request, notebook_id, declare)


def _toggle(request: HttpRequest, notebook_id: uuid.UUID, box: str,
            service: Callable[..., object], said: tuple[str, str]) -> HttpResponse:
    """A card's checkbox form: the service gets `box` on or off; `said` is (on, off)."""
    def toggle() -> str:
        on = request.POST.get(box) == "on"
        service(actor=session_actor(request), notebook_id=notebook_id, **{box: on})
        return said[0] if on else said[1]
    return _run(request, notebook_id, toggle)


@login_required
@require_POST
def notebook_truth_inherit(request: HttpRequest, notebook_id: uuid.UUID) -> HttpResponse:
    return _toggle(request, notebook_id, "inherit", services.truth_set_inheritance, (
        "This notebook now inherits the account's ground truth when it declares none.",
        "This notebook no longer inherits the account's ground truth."))


@login_required
@require_POST
def notebook_truth_verify(request: HttpRequest, notebook_id: uuid.UUID) -> HttpResponse:
    return _toggle(request, notebook_id, "verify", services.truth_set_verification, (
        "Agents' facts, decisions and solutions in this notebook are now checked against "
        "its ground truth before they land.",
        "Agents' writes in this notebook are no longer checked."))


@login_required
@require_POST
def notebook_negative_add(request: HttpRequest, notebook_id: uuid.UUID) -> HttpResponse:
    def add() -> str:
        services.negative_add(actor=session_actor(request), notebook_id=notebook_id,
                              claim=request.POST.get("claim", ""))
        return "Negative claim saved."
    return _run(request, notebook_id, add)


@login_required
@require_POST
def notebook_negative_remove(request: HttpRequest, notebook_id: uuid.UUID,
                             claim_id: uuid.UUID) -> HttpResponse:
    def remove() -> str:
        services.negative_remove(actor=session_actor(request), claim_id=claim_id)
        return "Negative claim removed."
    return _run(request, notebook_id, remove)


@login_required
@require_POST
def notebook_pending_decide(request: HttpRequest, notebook_id: uuid.UUID,
                            pending_id: uuid.UUID, decision: str) -> HttpResponse:
    def decide() -> str:
        actor = session_actor(request)
        if decision == "accept":
            note = services.pending_accept(actor=actor, pending_id=pending_id)
            if note.version == 1:
                return "Note accepted: it is saved in this notebook."
            return f"Change accepted: the note is now v{note.version}."
        services.pending_reject(actor=actor, pending_id=pending_id)
        return "Change rejected: readers keep the accepted version."
    return _run(request, notebook_id, decide)
