"""Grove's OAuth endpoints on django-oauth-toolkit's views: consent, token, registration
and resource metadata (the policy they share is in `grove.identity.oauth`)."""

from __future__ import annotations

import base64
import json
import re
from typing import Any
from urllib.parse import unquote_plus, urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.views import (
    AuthorizationView,
    DynamicClientRegistrationManagementView,
    DynamicClientRegistrationView,
    OAuthProtectedResourceMetadataView,
    TokenView,
)
from oauthlib.oauth2.rfc6749 import errors

from grove.identity.client_metadata import document_failure, registration_problem
from grove.identity.client_secrets import checked_cheaply
from grove.identity.oauth import _only_mcp
from grove.identity.redirects import (
    consent_policy,
    redirect_host,
    redirect_source,
    redirect_uri_problem,
    with_issuer,
)
from grove.kernel import throttle
from grove.kernel.validation import is_storable


class GroveAuthorizationView(AuthorizationView):
    """The consent step: the website login, then a page naming the client and where it
    will send the user back. Refuses non-S256 PKCE and foreign resources up front."""

    template_name = "grove/authorize.html"

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not clean_parameters(request):
            return self.render_to_response({"error": {
                "error": "invalid_request",
                "description": "A parameter holds a character no request may carry."}},
                status=400)
        return super().dispatch(request, *args, **kwargs)

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        problem = None
        if request.GET.get("code_challenge_method") != "S256":
            problem = ("invalid_request", "PKCE with code_challenge_method=S256 is required.")
        elif not _PKCE_CHALLENGE.fullmatch(request.GET.get("code_challenge", "")):
            problem = ("invalid_request", "code_challenge must be 43–128 characters of "
                                          "A–Z a–z 0–9 - . _ ~ (RFC 7636).")
        else:
            try:
                _only_mcp(None, request.GET.getlist("resource"))
            except errors.CustomOAuth2Error as exc:
                problem = ("invalid_target", exc.description)
        if problem is not None:
            return self.render_to_response({"error": {"error": problem[0],
                                                      "description": problem[1]}},
                                           status=400)
        # Consent is asked every time: a client may not skip it with approval_prompt=auto.
        if request.GET.get("approval_prompt"):
            query = request.GET.copy()
            query.pop("approval_prompt")
            request.GET = query  # type: ignore[assignment]
        return super().get(request, *args, **kwargs)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        redirect_uri = context.get("redirect_uri") or ""
        context["redirect_host"] = redirect_host(redirect_uri) if redirect_uri else ""
        context["redirect_scheme"] = urlsplit(redirect_uri).scheme
        return context

    def error_response(self, error: Any, application: Any, **kwargs: Any) -> HttpResponse:
        """An error is shown on Grove's own page, never sent to the client's return
        address, until the owner has answered the consent form (RFC 9700 §4.11.2):
        registration is open, so anyone can register an address of their own, and a
        link to `/o/authorize/` with a bad scope would otherwise make Grove redirect a
        signed-in owner there, carrying whatever the link put in `state`. An app that
        names itself by a client ID metadata document Grove could not use is told why
        (the toolkit itself says only that the client is unknown)."""
        oauth_error = error.oauthlib_error
        client_id = self.request.GET.get("client_id") or self.request.POST.get("client_id")
        reason = (document_failure(client_id or "")
                  if isinstance(oauth_error, errors.InvalidClientIdError) else None)
        if reason:
            return self.render_to_response({"error": {
                "error": "invalid_client",
                "description": f"Grove could not use this app's client ID metadata "
                               f"document ({client_id}): {reason.rstrip('.')}."}}, status=400)
        if self.request.method != "POST":  # no answer from the owner yet
            return self.render_to_response({"error": {
                "error": oauth_error.error,
                "description": oauth_error.description or "The app's request cannot be "
                                                          "used."}},
                status=oauth_error.status_code or 400)
        return super().error_response(error, application, **kwargs)

    def redirect(self, redirect_to: str, application: Any) -> HttpResponse:
        """Every answer sent back to the client names the issuer (RFC 9207), errors such
        as access_denied included — the toolkit adds it to successful answers only."""
        return super().redirect(with_issuer(redirect_to), application)

    def render_to_response(self, context: dict[str, Any], **kwargs: Any) -> HttpResponse:
        uri = context.get("redirect_uri")
        if uri and not context.get("error") and redirect_source(uri) is None:
            # Registered some other way (a client ID metadata document): rather than a
            # Continue button that cannot take the browser anywhere, say why.
            return super().render_to_response({"error": {
                "error": "invalid_redirect_uri",
                "description": redirect_uri_problem(uri) or "This app's return address "
                               "cannot be used."}}, status=400)
        response = super().render_to_response(context, **kwargs)
        # Only a page with the consent form (redirect_uri validated by the toolkit
        # against the client's registered URIs) may send the browser elsewhere.
        if uri and not context.get("error"):
            response._csp_config = consent_policy(uri)
        return response


@method_decorator(never_cache, name="dispatch")
class GroveTokenView(TokenView):
    """The token endpoint, always answering JSON (errors included). Refused before the
    toolkit sees them: parameters with a NUL (PostgreSQL cannot compare them), grant
    types Grove does not offer (the toolkit's device-code path fails on a missing
    field), and a client whose authentication failed too often from this address this
    window (`grove.kernel.throttle.client_auth_blocked_for`: 429 with Retry-After) — the
    right secret is still answered when its check is cheap (`checked_cheaply`), a wrong
    one gets the 429. Every failed client authentication (the toolkit's 401
    `invalid_client`) counts."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not clean_parameters(request):
            return _token_error("invalid_request",
                                "A parameter holds a character no request may carry.")
        if request.POST.get("grant_type") not in settings.GROVE_OAUTH_GRANT_TYPES:
            return _token_error("unsupported_grant_type",
                                "Grove issues tokens for authorization_code and "
                                "refresh_token only.")
        client_id = named_client(request)
        wait = throttle.client_auth_blocked_for(request, client_id)
        # Past the limit the right secret is still answered (as the right /metrics token
        # is): its check is cheap — unless the secret is still stored with the password
        # hasher, whose third of a second a flood of guesses must not buy.
        if wait is not None and not checked_cheaply(client_id):
            return _client_auth_refused(wait)
        from oauth2_provider.models import AccessToken

        try:
            response = super().post(request, *args, **kwargs)
        except AccessToken.DoesNotExist:
            # The toolkit looks its new token up again to announce it; a racing second
            # use of the code revoked it meanwhile (RFC 6749 §4.1.2).
            return _token_error("invalid_grant", "The code was used more than once; the "
                                                 "tokens issued for it are revoked.")
        if response.status_code == 401:  # invalid_client: the only 401 of this endpoint
            throttle.client_auth_failed(request, client_id)
            if wait is not None:  # a wrong secret past the limit: slowed, not answered
                return _client_auth_refused(wait)
        if not response.get("Content-Type", "").startswith("application/json"):
            answer = JsonResponse({}, status=response.status_code)
            answer.content = response.content
            for header, value in response.items():  # e.g. WWW-Authenticate
                if header.lower() != "content-type":
                    answer[header] = value
            response = answer
        response["Cache-Control"] = "no-store"
        response["Pragma"] = "no-cache"
        return response


def _client_auth_refused(wait: int) -> JsonResponse:
    response = _token_error(
        "temporarily_unavailable", "Too many failed authentications of this client from "
        "this address; retry after the number of seconds in Retry-After.", status=429)
    response["Retry-After"] = str(wait)
    return response


def _token_error(error: str, description: str, status: int = 400) -> JsonResponse:
    response = JsonResponse({"error": error, "error_description": description},
                            status=status)
    response["Cache-Control"] = "no-store"
    return response


def named_client(request: HttpRequest) -> str:
    """The client a token request names ("" if none): in its HTTP Basic credentials
    (RFC 6749 §2.3.1: each part form-encoded, as the toolkit reads them), else the
    body's `client_id` — the toolkit tries them in that order."""
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    if scheme == "Basic":
        try:
            return unquote_plus(base64.b64decode(credentials).decode().split(":", 1)[0])
        except ValueError:  # not base64, not text: the toolkit falls back to the body
            pass
    return request.POST.get("client_id", "")


_PKCE_CHALLENGE = re.compile(r"[A-Za-z0-9._~-]{43,128}")


def clean_parameters(request: HttpRequest) -> bool:
    """Every query and form parameter is storable text (a NUL makes PostgreSQL fail)."""
    return all(is_storable(key) and is_storable(values)
               for params in (request.GET, request.POST) for key, values in params.lists())


def _metadata_problem(body: bytes) -> tuple[str, str] | None:
    """(error, description) for a registration Grove refuses, before the toolkit sees it."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return None  # the toolkit answers malformed bodies itself
    if not isinstance(data, dict):
        return None if is_storable(data) else (
            "invalid_client_metadata", "The metadata holds a character no text may carry.")
    return registration_problem(data)


class _CheckedMetadata:
    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method in ("POST", "PUT"):
            problem = _metadata_problem(request.body)
            if problem:
                return JsonResponse({"error": problem[0], "error_description": problem[1]},
                                    status=400)
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]


# An API for clients, not a form: no cookies, so no CSRF (as the toolkit's own views).
@method_decorator(csrf_exempt, name="dispatch")
class GroveRegistrationView(_CheckedMetadata, DynamicClientRegistrationView):
    """Open dynamic client registration (RFC 7591): registering grants nothing, and every
    attempt counts against its address's limit (the refused ones too)."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method == "POST":
            wait = throttle.registration_blocked_for(request)
            if wait is not None:
                response = JsonResponse({
                    "error": "temporarily_unavailable",
                    "error_description": "Too many client registrations from this address; "
                                         "retry after the number of seconds in Retry-After."},
                    status=429)
                response["Retry-After"] = str(wait)
                response["Cache-Control"] = "no-store"
                return response
        return super().dispatch(request, *args, **kwargs)


@method_decorator(csrf_exempt, name="dispatch")
class GroveRegistrationManagementView(_CheckedMetadata,
                                      DynamicClientRegistrationManagementView):
    pass


def public_origin(request: HttpRequest) -> str:
    """The origin to name to this caller: the one it reached when that is another name
    of the base URL (a loopback base URL is also localhost and [::1] — clients insist
    that metadata name the URL they were given), else the base URL's."""
    try:
        reached = f"{request.scheme}://{request.get_host()}"
    except Exception:  # noqa: BLE001 - a disallowed Host: the base URL
        return settings.GROVE_ISSUER
    return reached if reached in settings.GROVE_ORIGINS else settings.GROVE_ISSUER


class GroveResourceMetadataView(OAuthProtectedResourceMetadataView):
    """RFC 9728 metadata for /mcp, naming the origin the client reached (see
    `public_origin`); the authorization server is always the one issuer."""

    def get_resource(self, request: HttpRequest) -> str:
        return public_origin(request) + "/mcp"
