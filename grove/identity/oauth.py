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
* **Codes are stored as their SHA-256** (`code_key`), as the toolkit stores tokens: the
  grant table, readable by the runtime database role, holds nothing a client could
  present; every lookup of a code goes through `code_key`.
* **Client secrets are checked with the client-secret hasher** (`_check_secret`,
  `grove.identity.client_secrets`): one round of PBKDF2, not the password hasher's 1.5
  million, since the server draws every secret; a secret stored before is stored again
  with it on its first right use.
* **Open registration, bounded**: registrations are limited per client address
  (`GROVE_REGISTRATION_LIMIT`, 429 with Retry-After), only the grant types Grove offers
  may be registered, and a registered client that never obtained a token is deleted
  after `GROVE_UNUSED_CLIENT_SECONDS` by the periodic token clean-up.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from grove.identity.client_secrets import check_secret
from grove.identity.redirects import hosts_of


def _only_mcp(request: Any, resources: list[str]) -> None:
    for resource in resources:
        if resource.rstrip("/") not in settings.GROVE_MCP_RESOURCES:
            raise errors.CustomOAuth2Error(
                error="invalid_target", request=request,
                description=f"The only resource here is {settings.GROVE_MCP_RESOURCE}.")


class GroveOAuth2Validator(OAuth2Validator):
    """The toolkit's validator, with every token bound to exactly the /mcp resource.
    (Overrides hooks of django-oauth-toolkit 3.4; pyproject pins 3.4.x.)"""

    def _check_secret(self, provided_secret: str, stored_secret: str) -> bool:
        return check_secret(provided_secret, stored_secret)

    def _validate_resource_uris(self, request: Any, resources: list[str]) -> None:
        super()._validate_resource_uris(request, resources)
        _only_mcp(request, resources)

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
                         .filter(code=code_key(code), application=request.client).first())
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

    # Every hook that finds a code's row is handed the code's stored key (`code_key`).
    # The toolkit reads the row again after validate_code; a request that won a race may
    # have spent it in between. Such a read is a second use of the code.
    def confirm_redirect_uri(self, client_id: str, code: str, redirect_uri: str,
                             client: Any, *args: Any, **kwargs: Any) -> bool:
        with _spent_code(code, client):
            return super().confirm_redirect_uri(client_id, code_key(code), redirect_uri,
                                                client, *args, **kwargs)

    def get_code_challenge(self, code: str, request: Any) -> Any:
        with _spent_code(code, request.client):
            return super().get_code_challenge(code_key(code), request)

    def get_code_challenge_method(self, code: str, request: Any) -> Any:
        with _spent_code(code, request.client):
            return super().get_code_challenge_method(code_key(code), request)

    def get_authorization_code_scopes(self, client_id: str, code: str, redirect_uri: str,
                                      request: Any) -> Any:
        return super().get_authorization_code_scopes(client_id, code_key(code),
                                                     redirect_uri, request)

    def get_authorization_code_nonce(self, client_id: str, code: str, redirect_uri: str,
                                     request: Any) -> Any:
        return super().get_authorization_code_nonce(client_id, code_key(code),
                                                    redirect_uri, request)

    def invalidate_authorization_code(self, client_id: str, code: str, request: Any,
                                      *args: Any, **kwargs: Any) -> None:
        """The code was spent with its tokens (`save_bearer_token`); nothing is left."""
        from oauth2_provider.models import get_grant_model

        get_grant_model().objects.filter(code=code_key(code),
                                         application=request.client).delete()

    def validate_code(self, client_id: str, code: str, client: Any, request: Any,
                      *args: Any, **kwargs: Any) -> bool:
        if super().validate_code(client_id, code_key(code), client, request, *args,
                                 **kwargs):
            return True
        revoke_redeemed(code, client.client_id)
        return False

    def _check_and_set_request_resource(self, request: Any) -> None:
        # The toolkit reads the code's `resource` from its row by `request.code`.
        code = getattr(request, "code", None)
        if code:
            request.code = code_key(code)
        try:
            super()._check_and_set_request_resource(request)
        finally:
            if code:
                request.code = code
        if not request.resource:
            request.resource = [settings.GROVE_MCP_RESOURCE]

    def _create_authorization_code(self, request: Any, code: Any, expires: Any = None) -> Any:
        resources = getattr(request, "resource", None) or []
        if isinstance(resources, str):
            resources = resources.split()
        _only_mcp(request, resources)
        request.resource = resources or [settings.GROVE_MCP_RESOURCE]
        # Only the code's key is stored; `code` itself goes back to the client unchanged.
        return super()._create_authorization_code(
            request, {**code, "code": code_key(code["code"])}, expires)


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


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def code_key(code: str) -> str:
    """What the grant table holds of an authorization code: its SHA-256 (hex), as the
    toolkit keeps `token_checksum` of tokens. A code is 30 random characters (oauthlib),
    so its digest cannot be turned back, and presented as a code it is hashed again.
    Migration grove 0016 converted the codes stored before."""
    return _digest(code)


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


# -- the resource server side: /mcp with OAuth access tokens --------------------------------


def audience_is_mcp(request_uri: str, audiences: list[str]) -> bool:
    """RESOURCE_SERVER_TOKEN_RESOURCE_VALIDATOR: a token is for /mcp exactly when it is
    bound to one name of it (`GROVE_MCP_RESOURCES`, independent of the Host a proxy
    forwards)."""
    return len(audiences) == 1 and audiences[0] in settings.GROVE_MCP_RESOURCES


@dataclass(frozen=True)
class PendingClient:
    """An authenticated OAuth client the owner has not approved (yet)."""

    account_id: Any
    connection_id: Any
    client_id: str
    redirect_host: str








def token_caller(request: HttpRequest) -> tuple[Any, str | None]:
    """(Actor | PendingClient | None, error) for an OAuth bearer token on /mcp. A token
    must carry the `mcp` scope and be bound to exactly the /mcp resource (the
    registration token, any other audience, expired or revoked tokens: None)."""
    from oauth2_provider.oauth2_backends import get_oauthlib_core

    from grove.identity import services
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


def end_account_tokens(*, account_id: Any) -> int:
    """Account deletion (grove.identity.deletion): every OAuth grant — an unredeemed
    code, so a late callback has nothing to redeem —, refresh, access and ID token of
    the account, of every client. Returns how many rows ended."""
    from oauth2_provider.models import AccessToken, Grant, IDToken, RefreshToken

    ended = 0
    for model in (RefreshToken, AccessToken, IDToken, Grant):
        ended += model.objects.filter(user_id=account_id).delete()[1].get(
            model._meta.label, 0)
    return ended

