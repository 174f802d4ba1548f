"""Signed, opaque paging cursors (SPEC §4): bound to the account, the connection, a
fingerprint of what is paged and a creation-time ceiling fixed by the first page, so
paging is stable under inserts. Tampered, foreign or mismatched cursors are `Invalid`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core import signing
from django.utils.dateparse import parse_datetime

from grove.kernel.actor import Actor
from grove.kernel.errors import Invalid

CURSOR_SALT = "grove.notes.search"


def write_cursor(actor: Actor, fingerprint: str, ceiling: datetime, key: list[Any], *,
                 salt: str = CURSOR_SALT) -> str:
    """An opaque, signed cursor bound to the caller, a fingerprint of what is being
    paged (filters, sort) and the creation-time ceiling fixed by the first page."""
    payload = {"a": str(actor.account_id), "c": str(actor.connection_id or ""),
               "f": fingerprint, "t": ceiling.isoformat(), "k": key}
    return signing.dumps(payload, salt=salt, compress=True)


def read_cursor(actor: Actor, cursor: str | None, fingerprint: str, *,
                salt: str = CURSOR_SALT) -> tuple[datetime | None, list[Any] | None]:
    """(ceiling, last key) from a cursor of `write_cursor`; tampered, foreign (another
    account or connection) or mismatched cursors → Invalid."""
    if cursor is None:
        return None, None
    if not isinstance(cursor, str) or len(cursor) > 2000:
        raise Invalid("The cursor is not valid.", code="invalid_cursor")
    try:
        payload = signing.loads(cursor, salt=salt)
    except signing.BadSignature:
        raise Invalid("The cursor is not valid.", code="invalid_cursor") from None
    if payload.get("a") != str(actor.account_id) or \
            payload.get("c") != str(actor.connection_id or ""):
        raise Invalid("The cursor is not valid.", code="invalid_cursor")
    if payload.get("f") != fingerprint:
        raise Invalid("The cursor belongs to a search with other filters.",
                      code="cursor_mismatch")
    ceiling = parse_datetime(payload["t"])
    return ceiling, list(payload["k"])
