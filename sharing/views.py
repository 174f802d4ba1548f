"""Share links over HTTP.

Public (no sign-in, SPEC §9): `/public/shares/<token>` (HTML), `….json`, a notebook
share's pages of notes (`?cursor=`, `/notes.json`) and its notes one by one
(`/notes/<id>`, `….json`). Every visitor request goes through `sharing.selectors` (the
database's narrow read path), has its own per-address rate limit, and an unknown,
forged or revoked token — or a note that is not (or no longer) in the share — gets the
same 404. Pages may sit in shared caches for at most a minute (browsers revalidate each
time), are `noindex` unless the owner allowed indexing, and send no referrer (the link
is the capability). The JSON is REST's envelope, errors included (`grove.interfaces.rest`):
one note is an object in `data`, a page of notes a list.

Owner (website session): the share box on note and notebook pages, and the Shares page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST, require_safe

from grove.interfaces.middleware import session_actor
from grove.interfaces.rendering import note_title, render_note, title_and_excerpt
from grove.interfaces.rest import envelope_response, error_response, ok
from grove.interfaces.wikilinks import Drawn, Resolver, Written, heading_anchor
from grove.kernel import throttle
from grove.kernel.errors import GroveError
from sharing import selectors as public
from sharing import services
from sharing.schemas import PublicNoteOut, PublicShare, ShareMeta, SharePageMeta, ShareVisit

CACHE_SECONDS = 60


def _headers(response: HttpResponse, share: PublicShare | None) -> HttpResponse:
    if share is None:
        response["Cache-Control"] = "no-store"
    else:
        # Browsers revalidate every time (a revoked link is gone on the next load);
        # a shared cache (a CDN) may keep a page for at most CACHE_SECONDS.
        response["Cache-Control"] = f"public, max-age=0, s-maxage={CACHE_SECONDS}"
    if share is None or not share.allow_indexing:
        response["X-Robots-Tag"] = "noindex, nofollow"
    response["Referrer-Policy"] = "no-referrer"
    return response


def _json(request: HttpRequest, share: PublicShare, data: Any, meta: ShareMeta
          ) -> HttpResponse:
    """A visitor's JSON: REST's envelope (`grove.interfaces.rest`), delivery meta."""
    return _headers(envelope_response(request, 200, ok(data, meta=meta)), share)


def _refused(request: HttpRequest, error: GroveError, as_json: bool) -> HttpResponse:
    """The visitor side's one mapping of domain errors (STYLE §6): every link that opens
    nothing is the same 404 (page or envelope, uncacheable); a page a visitor may not
    ask for is a 400 with its share's headers."""
    share = error.share if isinstance(error, public.PageRefused) else None
    if as_json:
        return _headers(error_response(request, error.status, error.code, error.message,
                                       error.wire_details()), share)
    if error.status == 404:
        return _headers(render(request, "sharing/not_found.html", status=404), None)
    return _headers(HttpResponse(error.message, status=error.status,
                                 content_type="text/plain"), share)


def _limited(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """GROVE_PUBLIC_RATE_LIMIT requests per minute per visitor address (own counters,
    apart from API keys'); over it → 429 with Retry-After."""

    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        limit = settings.GROVE_PUBLIC_RATE_LIMIT
        wait = limit and throttle.fixed_window(f"public:{throttle.address_key(request)}",
                                               limit=limit, window=throttle.WINDOW)
        if wait:
            response = _headers(error_response(
                request, 429, "rate_limited",
                "Too many requests for shared pages; try again soon."), None)
            response["Retry-After"] = str(wait)
            return response
        return view(request, *args, **kwargs)

    return wrapped


def _meta(share: PublicShare) -> ShareMeta:
    """Delivery metadata: what this is and how long it may be kept."""
    return ShareMeta(share=share.kind, title=share.title or None,
                     generated_at=timezone.now(), max_age_seconds=CACHE_SECONDS)


def _notes_json(request: HttpRequest, visit: ShareVisit) -> HttpResponse:
    """A page of notes: a list, like every list's `data`."""
    meta = SharePageMeta.of(returned=len(visit.notes), available=visit.available,
                            limit=visit.limit, next_cursor=visit.next_cursor,
                            **_meta(visit.share).model_dump())
    return _json(request, visit.share, [PublicNoteOut.of(n) for n in visit.notes], meta)


@require_safe
@_limited
def public_share(request: HttpRequest, token: str, as_json: bool = False) -> HttpResponse:
    try:
        visit = services.share_visit(token=token, cursor=request.GET.get("cursor"),
                                     limit=request.GET.get("limit"))
    except GroveError as error:
        return _refused(request, error, as_json)
    if visit.note is not None:
        return _show_note(request, visit, as_json)
    if as_json:
        return _notes_json(request, visit)
    rows = [(n, *title_and_excerpt(n.content)) for n in visit.notes]
    return _headers(render(request, "sharing/notebook.html", {
        "share": visit.share, "rows": rows, "next_cursor": visit.next_cursor}), visit.share)


@require_safe
@_limited
def public_share_notes(request: HttpRequest, token: str) -> HttpResponse:
    """A notebook share's notes as JSON, paginated (`cursor`, `limit` ≤ 50). A read
    only: paging through the JSON counts no views."""
    try:
        visit = public.share_notes_page(token=token, cursor=request.GET.get("cursor"),
                                        limit=request.GET.get("limit"))
    except GroveError as error:
        return _refused(request, error, True)
    return _notes_json(request, visit)


@require_safe
@_limited
def public_share_note(request: HttpRequest, token: str, note_id: str,
                      as_json: bool = False) -> HttpResponse:
    """One note of a shared notebook (or the shared note itself)."""
    try:
        visit = services.share_visit(token=token, note_id=note_id)
    except GroveError as error:
        return _refused(request, error, as_json)
    return _show_note(request, visit, as_json,
                      back=reverse("public-share", args=[visit.share.token]))


def _show_note(request: HttpRequest, visit: ShareVisit, as_json: bool,
               back: str | None = None) -> HttpResponse:
    share, note = visit.share, visit.note
    assert note is not None
    if as_json:
        return _json(request, share, PublicNoteOut.of(note), _meta(share))
    html = render_note(note.content, _share_resolver(visit), anchors=True)
    return _headers(render(request, "sharing/note.html", {
        "share": share, "note": note, "html": html,
        "title": note_title(note.content), "back": back}), share)


def _share_resolver(visit: ShareVisit) -> Resolver:
    """A share page's links: to a note of the same share, its page under this link (at
    the heading named); any other link — unresolved, or to a note outside the share —
    is its label as plain text, so the page names nothing outside the share."""
    inside = {(form, target): target_id for form, target, target_id in visit.links
              if target_id is not None}
    token = visit.share.token

    def resolve(written: Written) -> Drawn | None:
        target_id = inside.get((written.form, written.target))
        if target_id is None:
            return None
        page = (reverse("public-share", args=[token]) if visit.share.kind == "note"
                else reverse("public-share-note", args=[token, target_id]))
        return Drawn(page + (f"#{heading_anchor(written.heading)}" if written.heading else ""))

    return resolve


# -- the owner's side -------------------------------------------------------------------------


def _back(request: HttpRequest, fallback: str) -> HttpResponse:
    target = request.POST.get("next", "")
    if not target.startswith("/") or not url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        target = fallback
    return redirect(target)


@login_required
@require_POST
def share_create(request: HttpRequest) -> HttpResponse:
    actor = session_actor(request)
    try:
        share, created = services.share_create(
            actor=actor, note_id=request.POST.get("note") or None,
            notebook_id=request.POST.get("notebook") or None,
            include_subnotebooks=request.POST.get("include_subnotebooks") == "on",
            allow_indexing=request.POST.get("allow_indexing") == "on")
    except GroveError as error:
        messages.error(request, error.message)
        return _back(request, reverse("shares"))
    if created:
        messages.success(request, "Public link created: anyone with it can read this.")
    return _back(request, reverse("shares"))


@login_required
@require_POST
def share_revoke(request: HttpRequest, share_id: str) -> HttpResponse:
    services.share_revoke(actor=session_actor(request), share_id=share_id)
    messages.success(request, "The link was revoked: it opens nothing any more.")
    return _back(request, reverse("shares"))


@login_required
@require_GET
def share_list(request: HttpRequest) -> HttpResponse:
    return render(request, "sharing/shares.html", {
        "section": "shares", "shares": public.share_list(actor=session_actor(request))})
