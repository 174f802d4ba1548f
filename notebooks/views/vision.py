"""Saving a vision from the website (SPEC §10): a notebook's, from its card on the
notebook page, and the account's, from its card on Settings. Both go straight to
`services.vision_update` and redirect back (post/redirect/get); a refused save shows
that page again with the draft kept — a stale one (`version_conflict`) with the newer
text above it, as the note page's edit does.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from grove.identity.views import settings_page
from grove.interfaces.middleware import session_actor
from grove.kernel.errors import GroveError, NotFound
from notebooks import services
from notebooks.forms import VisionForm
from notebooks.models import VISION_MAX_CHARS
from notebooks.views.library import notebook_page_response

CONFLICT = ("Someone changed this vision while you were editing. The newer text is shown "
            "above; your draft is kept below — save again to replace it.")


@dataclass(frozen=True)
class VisionDraft:
    """A refused edit, shown again in the card (`templates/notebooks/_vision.html`)."""

    content: str
    expected_version: int | None  # None: the card's current version
    operation_id: uuid.UUID
    problem: str
    conflict: bool = False


def _save(request: HttpRequest, notebook_id: uuid.UUID | None
          ) -> tuple[dict[str, Any] | None, int]:
    """Save the posted vision: (None, 200) when saved, else what the card shows again
    and the status. An unknown or foreign notebook raises NotFound (the 404 page)."""
    form = VisionForm(request.POST)
    if not form.is_valid():
        posted = request.POST.get("expected_version", "")
        problems = [f"{form.fields[name].label or name}: {' '.join(map(str, errors))}"
                    if name != "__all__" else " ".join(map(str, errors))
                    for name, errors in form.errors.items()]
        return {"vision_draft": VisionDraft(
            content=request.POST.get("content", "")[:VISION_MAX_CHARS + 1000],
            # Only what the form itself would take as a number ("²" is a digit too).
            expected_version=(int(posted) if posted.isascii() and posted.isdigit()
                              and len(posted) <= 9 else None),
            operation_id=uuid.uuid4(), problem="; ".join(problems))}, 400
    data = form.cleaned_data
    try:
        saved = services.vision_update(
            actor=session_actor(request), operation_id=data["operation_id"],
            notebook_id=notebook_id, content=data["content"],
            expected_version=data["expected_version"])
    except GroveError as exc:
        if isinstance(exc, NotFound):
            raise
        if exc.code == "version_conflict":
            # Keep the draft; resubmitting replaces the newer text knowingly (the form now
            # carries its version, and a new operation id: these are new arguments).
            return {"vision_draft": VisionDraft(
                content=data["content"], expected_version=exc.details["current_version"],
                operation_id=uuid.uuid4(), problem=CONFLICT, conflict=True)}, 409
        return {"vision_draft": VisionDraft(
            content=data["content"], expected_version=data["expected_version"],
            operation_id=data["operation_id"], problem=exc.message)}, exc.status
    messages.success(request, "Vision saved." if saved.content else "Vision cleared.")
    return None, 200


@login_required
@require_POST
def notebook_vision_edit(request: HttpRequest, notebook_id: uuid.UUID) -> HttpResponse:
    shown, status = _save(request, notebook_id)
    if shown is None:
        return redirect(reverse("notebook", args=[notebook_id]) + "#vision")
    return notebook_page_response(request, notebook_id, vision_shown=shown, status=status)


@login_required
@require_POST
def account_vision_edit(request: HttpRequest) -> HttpResponse:
    shown, status = _save(request, None)
    if shown is None:
        return redirect(reverse("settings") + "#vision")
    return settings_page(request, shown=shown, status=status)
