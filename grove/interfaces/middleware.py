"""The website's middleware: the owner's time zone, HTMX's Vary, request ids, the API's
405 and the one error mapping of pages. The caller's `Actor` is resolved by identity's
`grove.identity.caller.ActorMiddleware`; `session_actor` is named here too, for the
pages of every app."""

import re
import uuid
import zoneinfo
from collections.abc import Callable

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.cache import patch_vary_headers

from grove.identity.caller import session_actor
from grove.kernel.validation import zone_names

__all__ = ["ApiMethodNotAllowedMiddleware", "HtmxVaryMiddleware", "RequestIdMiddleware",
           "TimeZoneMiddleware", "WebErrorMiddleware", "session_actor"]


# Answers that are the same whoever asks: the API (instants in ISO 8601 with their zone)
# and public share pages (a visitor and the signed-in owner see one page).
ZONELESS_PATHS = ("/v1/", "/mcp", "/public/")


class TimeZoneMiddleware:
    """Every absolute time a signed-in owner's page shows is in the account's time zone
    (Settings): Django's templates convert to the active zone. Stored instants stay UTC.
    `request.user` is the account row Django's authentication middleware reads for every
    signed-in request anyway (`ActorMiddleware` needs it), so this costs no query. A
    zone the zone database no longer knows (after an upgrade) shows UTC."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        name = None
        if not request.path.startswith(ZONELESS_PATHS):
            user = getattr(request, "user", None)
            if user is not None and user.is_authenticated:
                name = getattr(user, "time_zone", None)
        if name and name != "UTC" and name in zone_names():
            timezone.activate(zoneinfo.ZoneInfo(name))
        else:
            timezone.deactivate()
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


class HtmxVaryMiddleware:
    """A page and its HTMX fragment share a URL (the library's search as you type pushes
    it): every HTML response says it varies with `HX-Request`, so a browser going Back
    never shows a cached fragment as the whole page."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html"):
            patch_vary_headers(response, ("HX-Request",))
        return response


_CLIENT_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{8,64}")


class RequestIdMiddleware:
    """Every response carries `X-Request-Id` (the caller's, if it sent a sane one), and
    error envelopes repeat it, so a report can be matched to the server's log."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get("X-Request-Id", "")
        request.request_id = (  # type: ignore[attr-defined]
            incoming if _CLIENT_REQUEST_ID.fullmatch(incoming) else uuid.uuid4().hex)
        response = self.get_response(request)
        response["X-Request-Id"] = request.request_id  # type: ignore[attr-defined]
        return response


class ApiMethodNotAllowedMiddleware:
    """django-ninja answers a wrong method with a bare text 405; under /v1 every answer
    is the JSON envelope (the `Allow` header is kept)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code == 405 and request.path.startswith("/v1/") \
                and not response.get("Content-Type", "").startswith("application/json"):
            from grove.interfaces.rest import error_response

            allow = response.get("Allow")
            response = error_response(request, 405, "method_not_allowed",
                                      f"{request.method} is not allowed here.")
            if allow:
                response["Allow"] = allow
        return response


class WebErrorMiddleware:
    """The website's one error mapping (STYLE §6): a domain error a view did not handle
    in place becomes a friendly page with its 4xx status — or, for an HTMX request, a
    message swapped into the page's status area. The REST API maps errors itself."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        from django.http import Http404
        from django.shortcuts import render

        from grove.kernel.errors import GroveError, NotFound, RateLimited

        if request.path.startswith("/v1/"):
            return None
        if isinstance(exception, NotFound | Http404):
            status, code, message = 404, "not_found", "There is nothing here — it may have "\
                "been deleted, or it belongs to someone else."
        elif isinstance(exception, PermissionDenied):
            status, code, message = 403, "forbidden", str(exception) or "Not allowed."
        elif isinstance(exception, GroveError):
            status, code, message = exception.status, exception.code, exception.message
        else:
            return None
        htmx = getattr(request, "htmx", None)
        template = "error.html#message" if htmx else "error.html"
        response = render(request, template, {"status": status, "code": code,
                                              "message": message}, status=status)
        if isinstance(exception, RateLimited):
            response["Retry-After"] = str(exception.retry_after)
        if htmx:
            response["HX-Retarget"] = "#flash"
            response["HX-Reswap"] = "innerHTML"
        return response
