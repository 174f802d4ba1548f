"""Grove as an OAuth 2.1 authorization server for MCP clients, on django-oauth-toolkit
(settings.OAUTH2_PROVIDER holds the policy: PKCE S256, no implicit/password grants,
rotating refresh tokens with reuse detection, hashed token storage, RFC 9207 `iss`).

What this module adds to the toolkit:

* **One audience** (RFC 8707): the only valid `resource` is `GROVE_MCP_RESOURCE`; any
  other is `invalid_target` — refused before the consent page and again at the token
  endpoint — and a token requested without `resource` is bound to `/mcp` anyway, so no
  token Grove issues is valid anywhere else.
* **PKCE S256 before consent**: the toolkit refuses `plain` only after the user
  approved; here a request without `code_challenge_method=S256` never reaches the page.
* **Token answers are JSON** (the toolkit returns validator errors as text/html) and
  never cached.
* **The consent page** is Grove's own template: it names the client and the host it will
  send the user back to, and its CSP lets exactly that redirect target through
  `form-action` (browsers apply `form-action` to the redirect that answers the form).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.csp import CSP
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.views import (
    AuthorizationView,
    DynamicClientRegistrationManagementView,
    DynamicClientRegistrationView,
    TokenView,
)
from oauthlib.oauth2.rfc6749 import errors


def _only_mcp(request: Any, resources: list[str]) -> None:
    for resource in resources:
        if resource.rstrip("/") != settings.GROVE_MCP_RESOURCE:
            raise errors.CustomOAuth2Error(
                error="invalid_target", request=request,
                description=f"The only resource here is {settings.GROVE_MCP_RESOURCE}.")


class GroveOAuth2Validator(OAuth2Validator):
    """The toolkit's validator, with every token bound to exactly the /mcp resource.
    (Overrides hooks of django-oauth-toolkit 3.4; pyproject pins 3.4.x.)"""

    def _validate_resource_uris(self, request: Any, resources: list[str]) -> None:
        super()._validate_resource_uris(request, resources)
        _only_mcp(request, resources)

    def _check_and_set_request_resource(self, request: Any) -> None:
        super()._check_and_set_request_resource(request)
        if not request.resource:
            request.resource = [settings.GROVE_MCP_RESOURCE]

    def save_bearer_token(self, token: dict, request: Any, *args: Any, **kwargs: Any) -> Any:
        """Store the tokens; for a code exchange, also remember the code and what it
        bought, so a second use of it can take those tokens back (RFC 6749 §4.1.2)."""
        saved = super().save_bearer_token(token, request, *args, **kwargs)
        code = getattr(request, "code", None)
        if request.grant_type == "authorization_code" and code:
            from oauth2_provider.models import RefreshToken

            from grove.models import RedeemedCode

            family = (RefreshToken.objects.filter(token_checksum=_digest(token.get(
                "refresh_token") or "")).values_list("token_family", flat=True).first())
            RedeemedCode.objects.create(
                code_digest=_digest(code), client_id=request.client.client_id,
                token_family=family, access_token_digest=_digest(token["access_token"]))
        return saved

    def validate_code(self, client_id: str, code: str, client: Any, request: Any,
                      *args: Any, **kwargs: Any) -> bool:
        if super().validate_code(client_id, code, client, request, *args, **kwargs):
            return True
        revoke_redeemed(code, client.client_id)
        return False

    def _create_authorization_code(self, request: Any, code: Any, expires: Any = None) -> Any:
        resources = getattr(request, "resource", None) or []
        if isinstance(resources, str):
            resources = resources.split()
        _only_mcp(request, resources)
        request.resource = resources or [settings.GROVE_MCP_RESOURCE]
        return super()._create_authorization_code(request, code, expires)


_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
_HOST = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\]")


def redirect_source(redirect_uri: str) -> str | None:
    """The CSP source expression that matches exactly where `redirect_uri` sends the
    browser: its origin for http(s) (`https://claude.ai`, `http://127.0.0.1:53682`), its
    scheme for an app's own scheme (`cursor:`). Built only from parts that pass strict
    patterns, so nothing in a registered URI can add to the policy; None if any fails."""
    try:
        parts = urlsplit(redirect_uri)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if not _SCHEME.fullmatch(scheme):
        return None
    if scheme not in ("http", "https"):
        return f"{scheme}:"
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"  # urlsplit drops an IPv6 literal's brackets
    if not _HOST.fullmatch(host):
        return None
    return f"{scheme}://{host}" + (f":{port}" if port is not None else "")


def consent_policy(redirect_uri: str) -> dict[str, Any]:
    """Grove's CSP for the consent page, with `form-action` widened to the validated
    redirect target and nothing else (the form posts to Grove, which answers 302 there)."""
    form_action: list[str] = [str(CSP.SELF)]
    source = redirect_source(redirect_uri)
    if source:
        form_action.append(source)
    policy: dict[str, Any] = dict(settings.SECURE_CSP)
    policy["form-action"] = form_action
    return policy


def with_issuer(uri: str) -> str:
    """`uri` with exactly one `iss`: Grove's issuer, in the query (code flow only)."""
    parts = urlsplit(uri)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "iss"]
    query.append(("iss", settings.GROVE_ISSUER))
    return urlunsplit(parts._replace(query=urlencode(query)))


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def revoke_redeemed(code: str, client_id: str) -> bool:
    """A code presented again after it was exchanged: revoke the refresh-token family
    and the access token it bought (the token request itself fails as invalid_grant).
    Returns whether anything was revoked."""
    from django.utils import timezone
    from oauth2_provider.models import AccessToken, RefreshToken

    from grove.models import RedeemedCode

    record = RedeemedCode.objects.filter(code_digest=_digest(code), client_id=client_id,
                                         revoked_at__isnull=True).first()
    if record is None:
        return False
    if record.token_family:
        RefreshToken.revoke_family(record.token_family)
    AccessToken.objects.filter(token_checksum=record.access_token_digest).delete()
    RedeemedCode.objects.filter(id=record.id).update(revoked_at=timezone.now())
    return True


REDEEMED_CODES_KEPT = 24 * 3600  # well past any code's 60-second life


def clear_redeemed_codes() -> int:
    """Forget exchanged codes older than a day (periodic, with expired tokens)."""
    from datetime import timedelta

    from django.utils import timezone

    from grove.models import RedeemedCode

    cutoff = timezone.now() - timedelta(seconds=REDEEMED_CODES_KEPT)
    return RedeemedCode.objects.filter(redeemed_at__lt=cutoff).delete()[0]


class GroveAuthorizationView(AuthorizationView):
    """The consent step: the website login, then a page naming the client and where it
    will send the user back. Refuses non-S256 PKCE and foreign resources up front."""

    template_name = "grove/authorize.html"

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        problem = None
        if request.GET.get("code_challenge_method") != "S256":
            problem = ("invalid_request", "PKCE with code_challenge_method=S256 is required.")
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

    def redirect(self, redirect_to: str, application: Any) -> HttpResponse:
        """Every answer sent back to the client names the issuer (RFC 9207), errors such
        as access_denied included — the toolkit adds it to successful answers only."""
        return super().redirect(with_issuer(redirect_to), application)

    def render_to_response(self, context: dict[str, Any], **kwargs: Any) -> HttpResponse:
        response = super().render_to_response(context, **kwargs)
        # Only a page with the consent form (redirect_uri validated by the toolkit
        # against the client's registered URIs) may send the browser elsewhere.
        if context.get("redirect_uri") and not context.get("error"):
            response._csp_config = consent_policy(context["redirect_uri"])
        return response


@method_decorator(never_cache, name="dispatch")
class GroveTokenView(TokenView):
    """The token endpoint, always answering JSON (errors included)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().post(request, *args, **kwargs)
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


LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}


def _plain_http_problem(body: bytes) -> str | None:
    """Plain-http redirect URIs are for native apps' loopback listeners only (RFC 8252);
    anything else must be https or the app's own scheme."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return None  # the toolkit answers malformed bodies itself
    uris = data.get("redirect_uris") if isinstance(data, dict) else None
    for uri in uris if isinstance(uris, list) else []:
        if isinstance(uri, str):
            parts = urlsplit(uri)
            if parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
                return f"{uri}: plain http is allowed only for a loopback address."
    return None


class _LoopbackOnlyHttp:
    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method in ("POST", "PUT"):
            problem = _plain_http_problem(request.body)
            if problem:
                return JsonResponse({"error": "invalid_redirect_uri",
                                     "error_description": problem}, status=400)
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]


# An API for clients, not a form: no cookies, so no CSRF (as the toolkit's own views).
@method_decorator(csrf_exempt, name="dispatch")
class GroveRegistrationView(_LoopbackOnlyHttp, DynamicClientRegistrationView):
    """Open dynamic client registration (RFC 7591): registering grants nothing."""


@method_decorator(csrf_exempt, name="dispatch")
class GroveRegistrationManagementView(_LoopbackOnlyHttp,
                                      DynamicClientRegistrationManagementView):
    pass


# -- the resource server side: /mcp with OAuth access tokens --------------------------------


def audience_is_mcp(request_uri: str, audiences: list[str]) -> bool:
    """RESOURCE_SERVER_TOKEN_RESOURCE_VALIDATOR: a token is for /mcp exactly when it is
    bound to GROVE_MCP_RESOURCE (independent of the Host a proxy forwards)."""
    return list(audiences) == [settings.GROVE_MCP_RESOURCE]


@dataclass(frozen=True)
class PendingClient:
    """An authenticated OAuth client the owner has not approved (yet)."""

    account_id: Any
    connection_id: Any
    client_id: str
    redirect_host: str


def redirect_host(uri: str) -> str:
    """What the owner is shown of a redirect URI: its host, or for an app's own scheme
    (cursor://…) the scheme and its "host", which is the app's name."""
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https"):
        return parts.netloc
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else f"{parts.scheme}:"


def redirect_hosts(client_ids: set[str]) -> dict[str, str]:
    """Each client's first registered redirect host (an application row is no account's:
    registration is open, so the toolkit's table is not tenant-scoped)."""
    from oauth2_provider.models import get_application_model

    if not client_ids:
        return {}
    rows = get_application_model().objects.filter(client_id__in=client_ids)
    return {app.client_id: redirect_host(app.redirect_uris.split()[0])
            for app in rows.only("client_id", "redirect_uris") if app.redirect_uris.split()}


def token_caller(request: HttpRequest) -> tuple[Any, str | None]:
    """(Actor | PendingClient | None, error) for an OAuth bearer token on /mcp. A token
    must carry the `mcp` scope and be bound to exactly the /mcp resource (the
    registration token, any other audience, expired or revoked tokens: None)."""
    from oauth2_provider.oauth2_backends import get_oauthlib_core

    from grove import services
    from grove.actor import Actor
    from grove.models import Connection

    valid, core_request = get_oauthlib_core().verify_request(request, scopes=["mcp"])
    token = getattr(core_request, "access_token", None) if valid else None
    if token is None or list(token.resource) != [settings.GROVE_MCP_RESOURCE] \
            or token.user_id is None or not token.user.is_active:
        return None, "invalid_token"
    application = token.application
    connection = services.connection_for_oauth_token(
        account_id=token.user_id, client_id=application.client_id,
        client_name=application.name, token_issued_at=token.created)
    if connection is None:
        return None, "invalid_token"
    if connection.status == Connection.Status.ACTIVE:
        return Actor.for_connection(connection), None
    uris = application.redirect_uris.split()
    return PendingClient(account_id=token.user_id, connection_id=connection.id,
                         client_id=application.client_id,
                         redirect_host=redirect_host(uris[0]) if uris else ""), None


def revoke_client_tokens(*, account_id: Any, client_id: str) -> None:
    """Revoking an OAuth connection also ends the client's tokens for this account, so it
    must sign in again (and be approved again) to come back."""
    from oauth2_provider.models import AccessToken, RefreshToken

    for refresh in RefreshToken.objects.filter(user_id=account_id, revoked__isnull=True,
                                               application__client_id=client_id):
        refresh.revoke()
    AccessToken.objects.filter(user_id=account_id, application__client_id=client_id).delete()

