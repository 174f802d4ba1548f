"""What Grove accepts of an OAuth client's metadata — a registration body (RFC 7591) or a
client ID metadata document (CIMD) — and why a document could not be used.

The toolkit turns the metadata into an application (`token_endpoint_auth_method`
decides: `none` makes a public client, the secret methods — RFC 7591's default when
the method is left out — a confidential one). Before it does, Grove refuses what it
does not offer, with `invalid_client_metadata` and a description: grant types other
than the token endpoint's, an `application_type` other than OpenID Connect
Registration's `web` and `native`, text no database can hold, and at registration
redirect URIs no browser should be sent to.

A client ID metadata document is fetched by the toolkit's SSRF-safe fetcher (https,
public addresses only, no redirects, 16 KB, 5 s) during the authorization request; the
toolkit then treats any failure as an unknown client. `ClientDocumentFetcher` wraps that
fetcher, checks the document itself, and remembers why a document failed for as long as
the toolkit waits before fetching it again, so the consent page can say why
(`document_failure`): the address refused, the HTTP status, not JSON, too large, a
`client_id` other than its URL, …
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.core.cache import cache
from oauth2_provider.cimd import CIMDError, SafeMetadataFetcher
from oauth2_provider.settings import oauth2_settings

from grove.identity.redirects import redirect_uri_problem
from grove.kernel.validation import is_storable

# OpenID Connect Registration 1.0 §2 (the MCP SDK sends `native` by default).
APPLICATION_TYPES = ("web", "native")


def metadata_problem(data: dict[str, Any]) -> str | None:
    """Why Grove refuses this client metadata (a registration's or a document's), or
    None. The caller answers `invalid_client_metadata` with it."""
    if not is_storable(data):
        return "The metadata holds a character no text may carry."
    grants = data.get("grant_types")
    if isinstance(grants, list):
        unoffered = [g for g in grants if g not in settings.GROVE_OAUTH_GRANT_TYPES]
        if unoffered:
            return (f"Grove offers the grant types "
                    f"{', '.join(settings.GROVE_OAUTH_GRANT_TYPES)} only, not "
                    f"{', '.join(map(str, unoffered))}.")
    kind = data.get("application_type")
    if kind is not None and kind not in APPLICATION_TYPES:
        return (f"application_type is web or native (OpenID Connect Registration), "
                f"not {kind!r}.")
    return None


def registration_problem(data: dict[str, Any]) -> tuple[str, str] | None:
    """(error, description) for a registration (RFC 7591) Grove refuses, or None."""
    uris = data.get("redirect_uris")
    for uri in uris if isinstance(uris, list) else []:
        problem = redirect_uri_problem(uri)
        if problem:
            return ("invalid_redirect_uri", problem)
    problem = metadata_problem(data)
    return ("invalid_client_metadata", problem) if problem else None


def document_problem(client_id: str, data: dict[str, Any]) -> str | None:
    """Why a client ID metadata document cannot describe the client at `client_id`, or
    None: the rules of the CIMD draft the toolkit applies after fetching (said here so
    they can be told), and Grove's. (A redirect URI Grove cannot send a browser to is
    explained on the consent page when it is used: a document may list others that work.)"""
    named = data.get("client_id")
    if named != client_id:
        return (f"the document's client_id is {named!r}, not the address it was fetched "
                "from")
    method = data.get("token_endpoint_auth_method", "none")
    if method != "none":
        return (f"a client described by a document is public: its token_endpoint_auth_method"
                f" must be none, not {method!r}")
    if "client_secret" in data or "client_secret_expires_at" in data:
        return "a client described by a document has no client_secret"
    problem = metadata_problem(data)
    if problem:
        return problem
    uris = data.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        return "redirect_uris must be a non-empty list of addresses"
    grants = data.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or "authorization_code" not in grants:
        return "grant_types must include authorization_code"
    if not isinstance(data.get("client_name", ""), str):
        return "client_name must be text"
    return None


_FAILURE_PREFIX = "grove:client-document:failure:"


def _failure_key(client_id: str) -> str:
    return _FAILURE_PREFIX + hashlib.sha256(client_id.encode("utf-8")).hexdigest()


def document_failure(client_id: str) -> str | None:
    """Why the document at `client_id` could not be used, while the toolkit waits before
    fetching it again (`CIMD_FAILURE_BACKOFF_SECONDS`); None if nothing failed lately."""
    if not isinstance(client_id, str) or not client_id.lower().startswith("https://"):
        return None
    return cache.get(_failure_key(client_id))


class ClientDocumentFetcher:
    """`CIMD_METADATA_FETCHER`: the toolkit's SSRF-safe fetch (`transport`), then
    `document_problem`; a failure is remembered with its reason and raised as the
    toolkit expects (`CIMDError`)."""

    transport: type = SafeMetadataFetcher

    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        try:
            metadata, max_age = self.transport().fetch(client_id)
            problem = document_problem(client_id, metadata)
            if problem:
                raise CIMDError(problem)
        except CIMDError as exc:
            # A little longer than the toolkit's backoff, which it sets after this
            # returns: while it refuses to fetch again, the reason is still here.
            cache.set(_failure_key(client_id), str(exc),
                      oauth2_settings.CIMD_FAILURE_BACKOFF_SECONDS + 5)
            raise
        cache.delete(_failure_key(client_id))
        return metadata, max_age
