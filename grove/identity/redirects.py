"""Where an OAuth client may send the browser back to, and the consent page's CSP for it."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.utils.csp import CSP

from grove.kernel.addresses import LOOPBACK_NAMES

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
