"""What agents read first, as the owner sees it (SPEC §10, §11):

* **What your agents read** (`/agents/brief/`): pick a connection (or yourself), a
  place, a focus, a time zone and a budget; the page shows that connection's brief
  exactly as it reads it — the markdown as text, never as HTML (note content is
  hostile) — with its counts. A GET form, so every view of it is a bookmark.
* **Activity** (`/activity/`): what changed and who changed it — filtered by connection
  and time, paged by the activity selector's signed cursor (infinite scroll with HTMX,
  a "Load more" link without).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from grove.interfaces.middleware import session_actor
from grove.kernel.errors import Invalid
from notebooks import rules
from notebooks.context import notebooks_for
from notebooks.forms import ActivityForm, BriefForm
from notebooks.schemas.briefs import ActivityItem
from notebooks.selectors import vision_pages
from notebooks.selectors.activity import WEBSITE


def _connection(raw: str, *, what: str) -> uuid.UUID | str | None:
    """A picker's value: "" (None), "website", or a connection id (Invalid otherwise)."""
    raw = raw.strip()
    if not raw:
        return None
    if raw == WEBSITE:
        return WEBSITE
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise Invalid(f"{what} is a connection id or “website”.",
                      code="invalid_connection") from None


def _place(raw: str) -> Any:
    """The brief's `notebook_id`: everything (""), Personal ("personal") or a notebook."""
    raw = raw.strip()
    if not raw:
        return rules.EVERYWHERE
    if raw == "personal":
        return None
    return rules.parse_uuid(raw, what="notebook")


def _refused(form: BriefForm | ActivityForm) -> str:
    return "; ".join(f"{form.fields[k].label or k}: {' '.join(map(str, v))}"
                     for k, v in form.errors.items())


# -- what your agents read ---------------------------------------------------------------------


@login_required
@require_GET
def agent_brief(request: HttpRequest) -> HttpResponse:
    """A connection's brief as it reads it (`vision_pages.agent_brief_page`). With HTMX,
    only `#brief`. A refused connection (pending, revoked, or a place outside its
    grant) is said in place of the brief."""
    form = BriefForm(request.GET)
    valid = form.is_valid()
    data = form.cleaned_data
    who = _connection(request.GET.get("connection", ""), what="connection")
    arguments = None
    if valid:
        arguments = {"notebook_id": _place(data["notebook"]), "focus": data["focus"] or None,
                     "time_zone": data["tz"], "budget_tokens": data["budget"]}
    page = vision_pages.agent_brief_page(actor=session_actor(request), connection_id=who,
                                         arguments=arguments)
    chosen = str(page.chosen.id) if page.chosen is not None else WEBSITE
    context = {
        "section": "agents", "form": form, "page": page, "chosen": chosen,
        "choices": [c for c in page.connections
                    if c.status == "active" or str(c.id) == chosen],
        "place": (request.GET.get("notebook") or "").strip(),
        "paths": notebooks_for(request).paths(),
        "time_zone": data.get("tz") or (request.GET.get("tz") or "UTC"),
        "zone_given": bool((request.GET.get("tz") or "").strip()),
        "problem": None if valid else _refused(form),
    }
    template = "notebooks/agent_brief.html"
    if request.htmx and not request.htmx.history_restore_request:  # type: ignore[attr-defined]
        template += "#brief"
    return render(request, template, context, status=200 if valid else 400)


# -- activity ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActivityRow:
    item: ActivityItem
    note_id: str
    version: str


def _row(item: ActivityItem) -> ActivityRow:
    note_id, _, version = item.id.removeprefix("note:").partition("@")
    return ActivityRow(item=item, note_id=note_id, version=version)


@login_required
@require_GET
def activity(request: HttpRequest) -> HttpResponse:
    """What changed since a day, newest first, by whom (`vision_pages.activity_page`).
    HTMX asks for `#results` (a new filter) or `#rows` (the next page). The first day
    is fixed by the first page (`anchor`), so the next page's cursor still matches its
    filters after midnight."""
    form = ActivityForm(request.GET)
    if not form.is_valid():
        raise Invalid("Those filters are not valid: " + _refused(form), code="invalid_filters")
    data = form.cleaned_data
    who = _connection(data["connection"], what="connection")
    period = data["since"] or "7d"
    # Days are the owner's (the zone Settings chose, active for this request): "today"
    # starts at their midnight.
    zone = timezone.get_current_timezone()
    today = timezone.localdate()
    anchor = _anchor(request.GET.get("anchor", ""))
    day = data["day"] or anchor or today - timedelta(days=ActivityForm.PERIODS[period])
    limit = data["limit"] or rules.ACTIVITY_DEFAULT_LIMIT
    page = vision_pages.activity_page(
        actor=session_actor(request), since=datetime.combine(day, time.min, tzinfo=zone),
        connection_id=who,
        cursor=data["cursor"] or None, limit=limit)
    changes = page.activity
    rows = [_row(item) for item in changes.data]
    shown = (data["shown"] or 0) + len(rows) if data["cursor"] else len(rows)
    next_url = None
    if changes.meta.next_cursor:
        params = {"connection": data["connection"], "since": data["since"],
                  "day": data["day"].isoformat() if data["day"] else "",
                  "anchor": "" if data["day"] else day.isoformat(),
                  "limit": data["limit"] or "", "cursor": changes.meta.next_cursor,
                  "shown": shown}
        next_url = "?" + urlencode({k: v for k, v in params.items() if v not in (None, "")})
    context = {
        "section": "activity", "form": form, "rows": rows, "shown": shown,
        "available": changes.meta.available, "next_url": next_url, "day": day,
        "period": period, "who": data["connection"].strip(),
        "connections": page.connections,
        "filtered": bool(data["connection"].strip()),
        "time_zone": timezone.get_current_timezone_name(),
    }
    template = "notebooks/activity.html"
    if request.htmx and not request.htmx.history_restore_request:  # type: ignore[attr-defined]
        template += "#rows" if data["cursor"] else "#results"
    return render(request, template, context)


def _anchor(raw: str) -> date | None:
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise Invalid("anchor must be a date (YYYY-MM-DD).", code="invalid_filters") from None
