"""Who is calling `/mcp` and whether they may: the checks both protocol eras share
(Origin, body size, bearer authentication) and the answer for an OAuth client the owner
has not approved yet (`connection_required`, with where to approve it).

The same bearer token works in both eras and is checked before the era's own rules, so
neither era can be used to get around the other's limits.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from grove.identity import services
from grove.interfaces.mcp_protocol import AUTHENTICATION_REQUIRED, error_result


def resource_metadata_url(request: HttpRequest) -> str:
    from grove.identity.oauth_views import public_origin

    return public_origin(request) + "/.well-known/oauth-protected-resource/mcp"


def unauthorized(request: HttpRequest, token_sent: bool) -> HttpResponse:
    challenge = f'Bearer resource_metadata="{resource_metadata_url(request)}", scope="mcp"'
    if token_sent:
        challenge += ', error="invalid_token", error_description="The token is not valid."'
    response = JsonResponse({"jsonrpc": "2.0", "id": None, "error": {
        "code": AUTHENTICATION_REQUIRED,
        "message": "Authentication required: send a Grove API key or an OAuth access token "
                   "as a Bearer token."}}, status=401)
    response["WWW-Authenticate"] = challenge
    return response


def authenticate(request: HttpRequest) -> tuple[Any, bool]:
    """(caller, token sent): an Actor (API key or approved OAuth client), a
    PendingClient (OAuth client awaiting the owner's approval) or None."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None, False
    if token.startswith(services.KEY_PREFIX):
        return services.connection_authenticate(token), True
    from grove.identity.oauth import token_caller

    caller, _error = token_caller(request)
    return caller, True


def origin_allowed(request: HttpRequest) -> bool:
    """Browsers send Origin; a page on another site must not drive a local server
    (DNS rebinding). Clients that are not browsers send none. Allowed: the base URL's
    origin, and the origin the request itself was made to (its Host has passed
    ALLOWED_HOSTS, so a rebound name never gets here)."""
    origin = request.headers.get("Origin")
    if not origin:
        return True
    seen = urlsplit(origin)
    allowed = urlsplit(settings.GROVE_BASE_URL)
    own = (request.scheme, request.get_host())
    return (seen.scheme, seen.netloc) in {(allowed.scheme, allowed.netloc), own}


def too_big(request: HttpRequest) -> bool:
    try:
        return int(request.headers.get("Content-Length") or 0) > settings.GROVE_API_MAX_BODY
    except ValueError:
        return False


def approval_needed(pending: Any, then: str) -> tuple[str, dict[str, Any]]:
    """(message, details) for a client the owner has not approved: where to approve it,
    and `then` — what to do afterwards. Reuses the outstanding request while it is fresh
    (`connection_request_approval`), so every refused call shows the same link."""
    request = services.connection_request_approval(
        account_id=pending.account_id, connection_id=pending.connection_id,
        redirect_host=pending.redirect_host)
    url = (f"{settings.GROVE_BASE_URL.rstrip('/')}/connections/{pending.connection_id}"
           f"/approve?request={request['id']}")
    message = (f"The owner of this Grove has not approved this app yet. Ask them to open "
               f"{url} (signed in to Grove), choose what this app may read or change, and "
               f"approve; then {then}. The link works for 10 minutes. "
               f"Client id: {pending.client_id}.")
    return message, {"code": "connection_required", "approvalUrl": url,
                     "clientId": pending.client_id, "expiresAt": request["expiresAt"]}


def connection_required(pending: Any) -> dict[str, Any]:
    """The tool result for a client the owner has not approved: where to approve it."""
    message, details = approval_needed(pending, "call the tool again")
    return error_result(details.pop("code"), message, details)
