"""Paging (SPEC §4): one keyset step and one signed cursor format for every list.

* `keyset_page` is the step every paged read takes: the rows after the previous page's
  last key in a total order (`("-created_at", "-id")`, `("-rank", "-id")`, ascending or
  descending, composite keys), `limit` of them, and that page's last key when more
  follow. It runs on a queryset, or on a fetch function when the seek is made elsewhere
  (a security-definer SQL function, for visitors who have no account).
* `Cursor` is what a list hands out to continue it: bound to whoever may use it (the
  account and the connection for callers, a share for visitors), a fingerprint of what
  is paged (query, filters, sort), the creation-time ceiling fixed by the first page (so
  rows inserted since never shift a page) and the last key. `cursor_write` signs it
  (Django's signing, keyed by the secret key) into an opaque string; `cursor_read` opens
  one and refuses it — `Invalid` — when it is tampered with, foreign (another binding)
  or made for other filters. Each list has its own salt, so a cursor of one list never
  opens another.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import reduce
from operator import or_
from typing import Annotated, Any, overload

from django.core import signing
from django.db.models import Model, Q, QuerySet
from django.utils.dateparse import parse_datetime
from pydantic import AfterValidator, WithJsonSchema

from grove.kernel.actor import Actor
from grove.kernel.errors import Invalid

# A cursor longer than this was not made by `cursor_write` (real ones are a few hundred
# characters); refusing it first keeps a visitor's junk away from the signature check.
CURSOR_MAX_CHARS = 2000
# What every signed cursor looks like (Django's signing: the payload in URL-safe base64,
# "." first when compressed, the time in base 62, the HMAC-SHA256 in URL-safe base64).
# The documents state it, and text of any other shape is refused before the signature
# is checked. A text of this shape may still fail its signature: that is a 400 too.
CURSOR_PATTERN = r"^\.?[A-Za-z0-9_-]+:[0-9A-Za-z]+:[A-Za-z0-9_-]{43}$"
_CURSOR_SHAPE = re.compile(CURSOR_PATTERN)

Binding = tuple[str, ...]
Key = tuple[Any, ...]


def caller_binding(actor: Actor) -> Binding:
    """What a caller's cursor is bound to: the account and the connection (the owner's
    website session has none), so another account or another key cannot use it."""
    return ("caller", str(actor.account_id), str(actor.connection_id or ""))


# -- the cursor --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cursor:
    """The state of a paged read between two pages: before the first page, no ceiling
    and no key yet. `ceiling` stays None for a list that needs none (one paged
    newest-first by creation time is not shifted by inserts)."""

    binding: Binding
    fingerprint: str
    ceiling: datetime | None = None
    key: Key | None = None


def _refused() -> Invalid:
    return Invalid("The cursor is not valid.", code="invalid_cursor")


def cursor_text(text: Any) -> str:
    """`text` if it has the shape of a cursor (a string of at most CURSOR_MAX_CHARS,
    `CURSOR_PATTERN`); Invalid `invalid_cursor` otherwise — the same refusal as a
    cursor that fails its signature."""
    if not isinstance(text, str) or len(text) > CURSOR_MAX_CHARS \
            or _CURSOR_SHAPE.match(text) is None:
        raise _refused()
    return text


CURSOR_DOC = ("meta.nextCursor of the previous page. (REST: of the same list with the same "
              "filters; any other value, or one whose signature fails, is refused: 400 "
              "invalid_cursor, or cursor_mismatch when made for other filters.)")
# A cursor argument (REST and MCP alike): its shape documented, checked by `cursor_text`.
CursorText = Annotated[str, AfterValidator(cursor_text), WithJsonSchema(
    {"type": "string", "pattern": CURSOR_PATTERN, "maxLength": CURSOR_MAX_CHARS})]


def _pack(value: Any) -> Any:
    # Keys keep their types through the cursor: a timestamp comes back as the same
    # microsecond, a float8 rank as the same float, so the seek is exact.
    if isinstance(value, datetime):
        return {"d": value.isoformat()}
    if isinstance(value, uuid.UUID):
        return {"u": str(value)}
    if value is None or isinstance(value, str | int | float):
        return value
    raise TypeError(f"A paging key cannot hold {type(value).__name__}.")


def _unpack(value: Any) -> Any:
    if isinstance(value, dict):
        if "d" in value:
            when = parse_datetime(value["d"])
            if when is None:
                raise ValueError("not a time")
            return when
        return uuid.UUID(value["u"])
    return value


def cursor_write(cursor: Cursor, *, salt: str) -> str:
    """The cursor as an opaque, signed string (readable only by `cursor_read` with the
    same salt)."""
    payload = {"b": list(cursor.binding), "f": cursor.fingerprint,
               "t": cursor.ceiling.isoformat() if cursor.ceiling else None,
               "k": [_pack(v) for v in cursor.key or ()]}
    return signing.dumps(payload, salt=salt, compress=True)


def cursor_read(text: str | None, *, salt: str, binding: Binding,
                fingerprint: str) -> Cursor:
    """The cursor `text` carries; with no text (the first page), a fresh one with this
    binding and fingerprint.

    Raises Invalid `invalid_cursor` when it is not one of ours (tampered, truncated, of
    another list) or is bound to someone else, and `cursor_mismatch` when it was made
    for other filters."""
    if text is None:
        return Cursor(binding=tuple(binding), fingerprint=fingerprint)
    cursor_text(text)
    try:
        payload = signing.loads(text, salt=salt)
        found = Cursor(binding=tuple(payload["b"]), fingerprint=payload["f"],
                       ceiling=parse_datetime(payload["t"]) if payload["t"] else None,
                       key=tuple(_unpack(v) for v in payload["k"]))
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        raise _refused() from None
    if found.binding != tuple(binding):
        raise _refused()
    if found.fingerprint != fingerprint:
        raise Invalid("The cursor belongs to a search with other filters.",
                      code="cursor_mismatch")
    return found


def cursor_after(opened: Cursor, page: Page[Any], *, ceiling: datetime | None,
                 salt: str) -> str | None:
    """The signed cursor of the page after `page` — `opened`'s binding and fingerprint,
    the ceiling the first page fixed — or None when `page` was the last."""
    if page.next_key is None:
        return None
    return cursor_write(Cursor(binding=opened.binding, fingerprint=opened.fingerprint,
                               ceiling=ceiling, key=page.next_key), salt=salt)


# -- the keyset step ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Page[T]:
    """One page of rows, and the last row's key when more rows follow (None on the last
    page: then there is no next cursor)."""

    rows: list[T]
    next_key: Key | None


def _fields(order: Sequence[str]) -> list[tuple[str, bool]]:
    return [(f.removeprefix("-"), f.startswith("-")) for f in order]


def seek_after(order: Sequence[str], after: Sequence[Any]) -> Q:
    """Rows strictly after `after` in `order` (lexicographic over the fields, each in
    its own direction): `(a < x) OR (a = x AND b < y) OR ...`. The fields are non-null."""
    fields = _fields(order)
    if len(after) != len(fields):
        raise _refused()
    arms = []
    for i, (name, descending) in enumerate(fields):
        same = {field: value for (field, _), value in zip(fields[:i], after[:i], strict=True)}
        arms.append(Q(**same, **{f"{name}__{'lt' if descending else 'gt'}": after[i]}))
    return reduce(or_, arms)


@overload
def keyset_page[M: Model](source: QuerySet[M], *, order: Sequence[str],
                          after: Sequence[Any] | None, limit: int) -> Page[M]: ...


@overload
def keyset_page[T](source: Callable[[Key | None, int], Sequence[T]], *, order: Sequence[str],
                   after: Sequence[Any] | None, limit: int) -> Page[T]: ...


def keyset_page(source: Any, *, order: Sequence[str], after: Sequence[Any] | None,
                limit: int) -> Page[Any]:
    """`limit` rows after the key `after` (None: from the start) in `order`, the last
    field being unique (an id) so the order is total.

    `source` is a queryset (filtered here, ordered by `order`) or a function
    `fetch(after, count)` that returns up to `count` rows after `after` in that order
    itself. One row more than the page is read to know whether another page follows;
    the key of a row is its `order` fields, read as attributes (annotations included)."""
    if isinstance(source, QuerySet):
        rows = source
        if after is not None:
            rows = rows.filter(seek_after(order, after))
        found = list(rows.order_by(*order)[: limit + 1])
    else:
        if after is not None and len(after) != len(order):
            raise _refused()
        found = list(source(tuple(after) if after is not None else None, limit + 1))
    more, found = len(found) > limit, found[:limit]
    next_key = None
    if more and found:
        next_key = tuple(getattr(found[-1], name) for name, _ in _fields(order))
    return Page(rows=found, next_key=next_key)
