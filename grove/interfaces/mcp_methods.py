"""The MCP methods both protocol eras serve, and how long a client may keep each answer.

`dispatch` runs one method for one caller and returns the result as the handshake era
sends it; `grove/interfaces/mcp.py` adds what the 2026-07-28 era stamps on top
(`resultType`, `_meta` serverInfo, and these caching hints). The era-specific methods
(`initialize`, `ping` / `server/discover`) live with the eras, not here.

**Caching hints** (`ttlMs`, `cacheScope`; 2026-07-28 only):

* `tools/list`, `prompts/list`, `resources/templates/list` (and `server/discover`) are
  the same for every caller of one server version — declarations carry no grant — and
  change only when Grove is upgraded. Grove sends no list-changed notifications, so the
  TTL is what bounds how long a client keeps an old list after an upgrade: an hour,
  `public` (nothing in them belongs to a user). Should tools ever depend on the
  connection, these must become `private`.
* `resources/list` and `resources/read` are per grant and change with every note, and a
  grant the owner narrows or revokes must take effect on the next request: `ttlMs: 0`,
  `private`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from grove.interfaces import mcp_resources
from grove.interfaces.mcp_access import connection_required
from grove.interfaces.mcp_protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RpcError,
)
from grove.interfaces.mcp_tools import UnknownTool, declarations, run_tool, tool_error, tools
from grove.interfaces.mcp_tools import tool_result as _tool_result
from grove.kernel.actor import Actor
from grove.kernel.errors import GroveError

log = logging.getLogger(__name__)

CacheHint = tuple[int, str]  # (ttlMs, cacheScope)
SAME_FOR_EVERYONE: CacheHint = (3_600_000, "public")
PER_GRANT: CacheHint = (0, "private")

Handler = Callable[[Any, bool, dict[str, Any]], dict[str, Any]]


def tool_list(caller: Any, modern: bool, params: dict[str, Any]) -> dict[str, Any]:
    # Declaration order, every time (deterministic lists cache well, in clients and in
    # the model's prompt cache). An unapproved client sees the same list.
    return {"tools": declarations()}


def tool_call(caller: Any, modern: bool, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(INVALID_PARAMS, "tools/call needs a tool name.")
    if name not in tools():
        raise RpcError(INVALID_PARAMS, f"Unknown tool: {name}.")
    if not isinstance(caller, Actor):  # authenticated, not approved: never 401/403
        return connection_required(caller)
    try:
        output = run_tool(caller, name, params.get("arguments"))
    except UnknownTool:
        raise RpcError(INVALID_PARAMS, f"Unknown tool: {name}.") from None
    except GroveError as exc:
        return tool_error(exc)
    return _tool_result(output)


METHODS: dict[str, tuple[Handler, CacheHint | None]] = {
    "tools/list": (tool_list, SAME_FOR_EVERYONE),
    "tools/call": (tool_call, None),
    "resources/list": (mcp_resources.resource_list, PER_GRANT),
    "resources/templates/list": (mcp_resources.template_list, SAME_FOR_EVERYONE),
    "resources/read": (mcp_resources.resource_read, PER_GRANT),
    "prompts/list": (mcp_resources.prompt_list, SAME_FOR_EVERYONE),
    "prompts/get": (mcp_resources.prompt_get, None),
}


def dispatch(caller: Any, method: str, params: dict[str, Any], *,
             modern: bool) -> tuple[dict[str, Any], CacheHint | None]:
    """(result, caching hint) of `method` for `caller` — an Actor, or a PendingClient
    (an OAuth client awaiting approval). Raises RpcError."""
    known = METHODS.get(method)
    if known is None:
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}.", method)
    handler, hint = known
    try:
        return handler(caller, modern, params), hint
    except RpcError:
        raise
    except Exception:  # a bug: answered as JSON-RPC, never the website's HTML 500 page
        log.exception("unhandled error in MCP %s", method)
        raise RpcError(INTERNAL_ERROR, "Something went wrong on our side.",
                       {"code": "internal_error"}) from None
