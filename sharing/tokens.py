"""Share link tokens: the share's random id (122 bits) and a 128-bit MAC of it under the
server's secret (Django's `salted_hmac` over SECRET_KEY), base64url — 43 characters.
Nothing secret is stored: a database copy alone opens no link, and the owner can be shown
the link again. A token is checked in constant time before any database read; rotating
SECRET_KEY invalidates every link."""

from __future__ import annotations

import base64
import binascii
import uuid

from django.utils.crypto import constant_time_compare, salted_hmac

SALT = "grove.sharing.token"
MAC_BYTES = 16


def _mac(share_id: uuid.UUID) -> bytes:
    return salted_hmac(SALT, share_id.bytes, algorithm="sha256").digest()[:MAC_BYTES]


def token_for(share_id: uuid.UUID) -> str:
    raw = share_id.bytes + _mac(share_id)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def share_id_of(token: str) -> uuid.UUID | None:
    """The share id a genuine token names; None for anything else."""
    if not isinstance(token, str) or len(token) != 43:
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=")
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 16 + MAC_BYTES:
        return None
    share_id = uuid.UUID(bytes=raw[:16])
    # The whole canonical token, so that no second spelling of a link opens it.
    if not constant_time_compare(token, token_for(share_id)):
        return None
    return share_id
