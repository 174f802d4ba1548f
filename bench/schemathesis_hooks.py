"""Schemathesis extension for Grove's runs (`SCHEMATHESIS_HOOKS=bench.schemathesis_hooks`,
loaded by `bench/schema_fuzz.py` and `tests/api/test_fuzz.py`).

The document states every rule a JSON Schema can: types, ranges, patterns, which fields
go together. Three refusals it cannot state, and documents in words instead:

* **a cursor's signature** (SPEC §4): the document gives a signed cursor's exact shape
  (`grove.kernel.paging.CURSOR_PATTERN`), so `cursor=0` is invalid by it; but text of
  that shape may still fail its signature, or have been made for other filters — 400
  `invalid_cursor` / `cursor_mismatch`, like an unknown id no schema can rule out;
* **a note named twice in one batch** under two spellings (`<uuid>`, `note:<UUID>@3`):
  `uniqueItems` compares the strings, the service compares the notes — 400
  `duplicate_ids`;
* **a tool's arguments** over `POST /v1/tools/{tool}`: each tool's own `inputSchema`
  (`GET /v1/tools`), which the path's one body schema cannot follow — 400
  `invalid_arguments`.

`bench/schemathesis.toml` lets `positive_data_acceptance` take a 400 on exactly the
operations where these can happen, and `unstated_refusals_only` takes the allowance
back for everything else: a request the document calls valid may be refused 400 there
only with that rule's code, and only when the request really did what the rule refuses
(sent a cursor; named one note twice)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import schemathesis
from schemathesis.specs.openapi.checks import is_unexpected_http_status_case

_UUID = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                   r"[0-9a-fA-F]{12}")


def _sent_cursor(case: Any) -> bool:
    return any(isinstance(part, dict) and part.get("cursor") is not None
               for part in (case.query, case.body))


def _note_named_twice(case: Any) -> bool:
    body = case.body if isinstance(case.body, dict) else {}
    items = body.get("items", body.get("noteIds")) or []
    notes = []
    for item in items:
        text = item.get("id") if isinstance(item, dict) else item
        found = _UUID.search(text) if isinstance(text, str) else None
        if found:
            notes.append(found.group().replace("-", "").lower())
    return len(set(notes)) < len(notes)


CURSOR = (("invalid_cursor", "cursor_mismatch"), _sent_cursor)
DUPLICATES = (("duplicate_ids",), _note_named_twice)
# `POST /v1/tools/{tool}`: the body is the named tool's inputSchema (`GET /v1/tools`),
# which the one body schema of the path cannot follow.
TOOL_ARGUMENTS = (("invalid_arguments",), lambda case: True)
# The operations bench/schemathesis.toml names, with the rule each may refuse by.
UNSTATED: dict[str, tuple[tuple[str, ...], Callable[[Any], bool]]] = {
    "GET /v1/notes": CURSOR, "POST /v1/notes/search": CURSOR, "GET /v1/notebooks": CURSOR,
    "GET /v1/notes/{note_id}/related": CURSOR,
    "GET /v1/activity": CURSOR, "POST /v1/conversations/search": CURSOR,
    "POST /v1/notes/archive": DUPLICATES, "POST /v1/notes/restore": DUPLICATES,
    "POST /v1/notes/forget": DUPLICATES, "POST /v1/notes/move": DUPLICATES,
    "POST /v1/tools/{tool}": TOOL_ARGUMENTS,
}


@schemathesis.check
def unstated_refusals_only(ctx: Any, response: Any, case: Any) -> bool | None:
    """A schema-valid request refused 400 on an operation of `UNSTATED` must have been
    refused by that operation's rule, for something the request really sent."""
    meta = case.meta
    rule = UNSTATED.get(f"{case.method.upper()} {case.operation.path}")
    if rule is None or meta is None or not meta.generation.mode.is_positive \
            or response.status_code != 400 or is_unexpected_http_status_case(case):
        return None
    codes, applies = rule
    try:
        code = json.loads(response.content)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        code = None
    if code not in codes or not applies(case):
        raise AssertionError(
            f"A request the document calls valid was refused 400 ({code}), which is not "
            f"the one refusal the document cannot state here ({', '.join(codes)}).")
    return None
