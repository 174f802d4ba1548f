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
* **Open registration, bounded**: registrations are limited per client address
  (`GROVE_REGISTRATION_LIMIT`, 429 with Retry-After), only the grant types Grove offers
  may be registered, and a registered client that never obtained a token is deleted
  after `GROVE_UNUSED_CLIENT_SECONDS` by the periodic token clean-up.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.db import transaction
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
    OAuthProtectedResourceMetadataView,
    TokenView,
)
from oauthlib.oauth2.rfc6749 import errors

from grove.kernel import throttle
from grove.kernel.validation import is_storable
from grove.runtime.config import LOOPBACK_NAMES


def _only_mcp(request: Any, resources: list[str]) -> None:
    for resource in resources:
        if resource.rstrip("/") not in settings.GROVE_MCP_RESOURCES:
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
        """Store the tokens. A code exchange first takes the code's row under a lock and
        spends it in the same transaction, remembering what it bought: of requests racing
        with one code exactly one gets tokens, and every other use — concurrent or later —
        gets invalid_grant and takes those tokens back (RFC 6749 §4.1.2)."""
        code = getattr(request, "code", None)
        if request.grant_type != "authorization_code" or not code:
            return super().save_bearer_token(token, request, *args, **kwargs)
        from oauth2_provider.models import RefreshToken, get_grant_model

        from grove.models import RedeemedCode

        try:
            with transaction.atomic():
                grant = (get_grant_model().objects.select_for_update()
                         .filter(code=code, application=request.client).first())
                if grant is None:  # spent by a request that won the race
                    raise _Spent()
                saved = super().save_bearer_token(token, request, *args, **kwargs)
                family = (RefreshToken.objects.filter(token_checksum=_digest(
                    token.get("refresh_token") or "")).values_list("token_family",
                                                                  flat=True).first())
                RedeemedCode.objects.create(
                    code_digest=_digest(code), client_id=request.client.client_id,
                    token_family=family, access_token_digest=_digest(token["access_token"]))
                grant.delete()
        except _Spent:
            revoke_redeemed(code, request.client.client_id)
            raise errors.InvalidGrantError(request=request) from None
        return saved

    # The toolkit reads the code's row again after validate_code; a request that won a
    # race may have spent it in between. Such a read is a second use of the code.
    def confirm_redirect_uri(self, client_id: str, code: str, redirect_uri: str,
                             client: Any, *args: Any, **kwargs: Any) -> bool:
        with _spent_code(code, client):
            return super().confirm_redirect_uri(client_id, code, redirect_uri, client,
                                                *args, **kwargs)

    def get_code_challenge(self, code: str, request: Any) -> Any:
        with _spent_code(code, request.client):
            return super().get_code_challenge(code, request)

    def get_code_challenge_method(self, code: str, request: Any) -> Any:
        with _spent_code(code, request.client):
            return super().get_code_challenge_method(code, request)

    def invalidate_authorization_code(self, client_id: str, code: str, request: Any,
                                      *args: Any, **kwargs: Any) -> None:
        """The code was spent with its tokens (`save_bearer_token`); nothing is left."""
        from oauth2_provider.models import get_grant_model

        get_grant_model().objects.filter(code=code, application=request.client).delete()

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


class _Spent(Exception):
    pass


@contextmanager
def _spent_code(code: str, client: Any) -> Iterator[None]:
    """A read of a code's row that finds it gone: the code was spent meanwhile, so this
    is its second use — revoke what it bought, answer invalid_grant."""
    from oauth2_provider.models import get_grant_model

    try:
        yield
    except get_grant_model().DoesNotExist:
        revoke_redeemed(code, client.client_id)
        raise errors.InvalidGrantError() from None


_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
# Host names as CSP source expressions can spell them (RFC 3986 reg-name letters, no IPv6
# literal: the CSP grammar has none, so a browser would drop the source and the consent
# redirect would go nowhere).
_HOST = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?")


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
    if not _HOST.fullmatch(host) or ".." in host or "@" in parts.netloc:
        return None
    return f"{scheme}://{host}" + (f":{port}" if port is not None else "")


def redirect_uri_problem(uri: Any) -> str | None:
    """Why a redirect URI cannot be registered, or None. One rule with the consent page:
    Grove must be able to let the browser go there (`redirect_source`), plain http only
    to a loopback listener (RFC 8252), nothing that could read as two URIs or hide a
    host (spaces, control characters, user info)."""
    if not isinstance(uri, str) or not uri:
        return "a redirect URI is a non-empty string."
    if any(ch.isspace() or not ch.isprintable() for ch in uri):
        return f"{uri!r}: no spaces or control characters."
    if "@" in urlsplit(uri).netloc:
        return f"{uri}: no user name or password in a redirect URI."
    if redirect_source(uri) is None:
        return (f"{uri}: Grove cannot send a browser there; use https://host/…, "
                "http://127.0.0.1:PORT/… (a loopback listener) or your-app-scheme:…")
    parts = urlsplit(uri)
    if parts.scheme.lower() == "http" and parts.hostname not in LOOPBACK_NAMES:
        return f"{uri}: plain http is allowed only for a loopback address."
    return None


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
    """`uri` naming Grove's issuer (RFC 9207): appended to the query as it stands, which
    keeps the client's registered query exactly as registered (RFC 6749 §3.1.2)."""
    parts = urlsplit(uri)
    if any(k == "iss" for k, _ in parse_qsl(parts.query, keep_blank_values=True)):
        return uri  # the toolkit named it already (successful answers)
    joined = "&".join(q for q in (parts.query, urlencode({"iss": settings.GROVE_ISSUER})) if q)
    return urlunsplit(parts._replace(query=joined))


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


def clear_unused_clients(*, now: Any = None) -> int:
    """Delete registered clients (RFC 7591) older than `GROVE_UNUSED_CLIENT_SECONDS` that
    never obtained a token: no code, access or refresh token other than the registration
    token, and no connection in any account (an approved or pending client, or one whose
    tokens merely expired, stays). Their registration tokens go with them."""
    from datetime import timedelta

    from django.db.models import Exists, OuterRef
    from django.utils import timezone
    from oauth2_provider.models import (
        get_access_token_model,
        get_application_model,
        get_grant_model,
        get_refresh_token_model,
    )
    from oauth2_provider.settings import oauth2_settings

    from grove.kernel.tenancy import tenant
    from grove.models import Account, Connection

    application = get_application_model()
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.GROVE_UNUSED_CLIENT_SECONDS)
    mine = OuterRef("pk")
    unused = (application.objects
              .filter(registration_source=application.RegistrationSource.DCR,
                      created__lt=cutoff)
              .exclude(Exists(get_access_token_model().objects.filter(application=mine)
                              .exclude(scope=oauth2_settings.DCR_REGISTRATION_SCOPE)))
              .exclude(Exists(get_refresh_token_model().objects.filter(application=mine)))
              .exclude(Exists(get_grant_model().objects.filter(application=mine))))
    candidates = dict(unused.values_list("client_id", "pk"))
    if not candidates:
        return 0
    # Connections are tenant rows: each account is asked for its own.
    for account_id in Account.objects.values_list("id", flat=True):
        with tenant(account_id):
            for client_id in Connection.objects.filter(
                    kind=Connection.Kind.OAUTH,
                    oauth_client_id__in=list(candidates)).values_list("oauth_client_id",
                                                                       flat=True):
                candidates.pop(client_id, None)
    return application.objects.filter(pk__in=candidates.values()).delete()[1].get(
        application._meta.label, 0)


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
    toolkit sees them: parameters with a NUL (PostgreSQL cannot compare them) and grant
    types Grove does not offer (the toolkit's device-code path fails on a missing
    field)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not clean_parameters(request):
            return _token_error("invalid_request",
                                "A parameter holds a character no request may carry.")
        if request.POST.get("grant_type") not in settings.GROVE_OAUTH_GRANT_TYPES:
            return _token_error("unsupported_grant_type",
                                "Grove issues tokens for authorization_code and "
                                "refresh_token only.")
        from oauth2_provider.models import AccessToken

        try:
            response = super().post(request, *args, **kwargs)
        except AccessToken.DoesNotExist:
            # The toolkit looks its new token up again to announce it; a racing second
            # use of the code revoked it meanwhile (RFC 6749 §4.1.2).
            return _token_error("invalid_grant", "The code was used more than once; the "
                                                 "tokens issued for it are revoked.")
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


def _token_error(error: str, description: str) -> JsonResponse:
    response = JsonResponse({"error": error, "error_description": description}, status=400)
    response["Cache-Control"] = "no-store"
    return response


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
    if not is_storable(data):
        return ("invalid_client_metadata", "The metadata holds a character no text may carry.")
    if not isinstance(data, dict):
        return None  # the toolkit answers this itself
    uris = data.get("redirect_uris")
    for uri in uris if isinstance(uris, list) else []:
        problem = redirect_uri_problem(uri)
        if problem:
            return ("invalid_redirect_uri", problem)
    grants = data.get("grant_types")
    if isinstance(grants, list):
        unoffered = [g for g in grants if g not in settings.GROVE_OAUTH_GRANT_TYPES]
        if unoffered:
            return ("invalid_client_metadata",
                    f"Grove offers the grant types {', '.join(settings.GROVE_OAUTH_GRANT_TYPES)}"
                    f" only, not {', '.join(map(str, unoffered))}.")
    return None


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


# -- the resource server side: /mcp with OAuth access tokens --------------------------------


def audience_is_mcp(request_uri: str, audiences: list[str]) -> bool:
    """RESOURCE_SERVER_TOKEN_RESOURCE_VALIDATOR: a token is for /mcp exactly when it is
    bound to one name of it (`GROVE_MCP_RESOURCES`, independent of the Host a proxy
    forwards)."""
    return len(audiences) == 1 and audiences[0] in settings.GROVE_MCP_RESOURCES


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


def hosts_of(redirect_uris: str) -> str:
    """Every place a client may send the owner back to, in registration order: "anyone
    can register as Claude", and one of several registered URIs may be anyone's."""
    hosts = dict.fromkeys(redirect_host(uri) for uri in redirect_uris.split())
    return ", ".join(hosts)


def redirect_hosts(client_ids: set[str]) -> dict[str, str]:
    """Each client's redirect hosts (an application row is no account's: registration is
    open, so the toolkit's table is not tenant-scoped)."""
    from oauth2_provider.models import get_application_model

    if not client_ids:
        return {}
    rows = get_application_model().objects.filter(client_id__in=client_ids)
    return {app.client_id: hosts_of(app.redirect_uris)
            for app in rows.only("client_id", "redirect_uris")}


def token_caller(request: HttpRequest) -> tuple[Any, str | None]:
    """(Actor | PendingClient | None, error) for an OAuth bearer token on /mcp. A token
    must carry the `mcp` scope and be bound to exactly the /mcp resource (the
    registration token, any other audience, expired or revoked tokens: None)."""
    from oauth2_provider.oauth2_backends import get_oauthlib_core

    from grove import services
    from grove.kernel.actor import Actor
    from grove.models import Connection

    valid, core_request = get_oauthlib_core().verify_request(request, scopes=["mcp"])
    token = getattr(core_request, "access_token", None) if valid else None
    if token is None or not audience_is_mcp(request.path, list(token.resource)) \
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
    return PendingClient(account_id=token.user_id, connection_id=connection.id,
                         client_id=application.client_id,
                         redirect_host=hosts_of(application.redirect_uris)), None


def revoke_client_tokens(*, account_id: Any, client_id: str) -> None:
    """Revoking an OAuth connection also ends the client's tokens for this account, so it
    must sign in again (and be approved again) to come back."""
    from oauth2_provider.models import AccessToken, RefreshToken

    for refresh in RefreshToken.objects.filter(user_id=account_id, revoked__isnull=True,
                                               application__client_id=client_id):
        refresh.revoke()
    AccessToken.objects.filter(user_id=account_id, application__client_id=client_id).delete()

