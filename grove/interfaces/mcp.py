"""MCP over stateless Streamable HTTP at `/mcp` (SPEC §7), as a plain Django view, in
both protocol eras on the same endpoint.

**Eras.** The `MCP-Protocol-Version` header alone picks one, as the official SDK server
does: no header or a handshake revision (2024-11-05 … 2025-11-25) → the handshake era
(`initialize`, `ping`, then plain methods); `2026-07-28` → the stateless era
(`server/discover`, every request carrying `params._meta` with its protocol version and
client capabilities, `Mcp-Method`/`Mcp-Name` headers mirroring the body, `resultType`
and serverInfo on every result, caching hints on lists); anything else → `-32022`
naming every revision Grove speaks. One POST per message, JSON answers, no sessions, no
batches; notifications → 202; GET/DELETE → 405.

**Shared by both eras**, checked before either era's rules: the Origin check, the body
limit, bearer authentication (API key or OAuth token), the per-connection rate limit,
and an unapproved OAuth client being answered `connection_required` (a tool error, or a
JSON-RPC error with that code for resources and prompts) instead of 401/403. The methods
themselves (`grove/interfaces/mcp_methods.py`) are the same in both: tools
(`grove/interfaces/mcp_tools.py`), resources and prompts
(`grove/interfaces/mcp_resources.py`).

**HTTP status of errors.** Handshake era: 200, except transport faults (bad JSON,
batches, invalid messages, unsupported version: 400). 2026-07-28: the spec's table —
parse, invalid request or params, header mismatch, unsupported version → 400; unknown
method (`initialize` and `ping` included) → 404; anything else → 200.

Failures of a tool (bad arguments, not found, conflicts, missing capability) are results
with `isError: true`: the message as text, then the machine code and details as a JSON
text block (`grove.interfaces.mcp_protocol.error_result`).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from grove.identity.selectors import project_header
from grove.interfaces.mcp_access import (
    authenticate,
    connection_required,
    origin_allowed,
    resource_metadata_url,
    too_big,
    unauthorized,
)
from grove.interfaces.mcp_methods import SAME_FOR_EVERYONE, CacheHint, dispatch
from grove.interfaces.mcp_protocol import (
    HANDSHAKE_VERSIONS,
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    METHOD_NOT_FOUND,
    MODERN_VERSIONS,
    NAME_BEARING,
    PARSE_ERROR,
    SUPPORTED_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    RpcError,
    capabilities,
    decode_header_value,
    message_kind,
)
from grove.interfaces.mcp_tools import (
    Tool,
    UnknownTool,
    compact_schema,
    declarations,
    output_schema,
    run_tool,
    structured,
    tool_error,
    tool_result,
    tools,
)
from grove.kernel import throttle
from grove.kernel.actor import Actor

__all__ = [
    "HANDSHAKE_VERSIONS", "INSTRUCTIONS", "MODERN_VERSIONS", "SUPPORTED_VERSIONS", "Tool",
    "UnknownTool", "compact_schema", "connection_required", "declarations", "mcp_endpoint",
    "output_schema", "resource_metadata_url", "run_tool", "server_info", "structured",
    "tool_error", "tool_result", "tools",
]

LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[0]
INSTRUCTIONS = (
    "Grove is the user's long-term memory: notes in notebooks, each with a kind "
    "(preference, fact, decision, solution, handoff) and a version. Start with `brief`: "
    "the startup read (the vision, rules, open handoffs, recent changes). `whoami` says "
    "what this connection may read and change. Call `recall` before answering questions "
    "about the user, their projects or earlier work; call `remember` to save what should "
    "outlast this conversation. You see only the notebooks the owner granted to this "
    "connection. Ids: a note is `<uuid>`, `note:<uuid>` or `note:<uuid>@<version>` as "
    "results cite it — in a change, that version is the one you read, and a newer one "
    "answers version_conflict rather than being overwritten; a notebook is `<uuid>` or "
    "`notebook:<uuid>`; \"personal\" names Personal notes, and a place left out means "
    "everything granted. Changes take an `operationId` (a UUID you pick): retrying with "
    "the same one never saves twice. A list's `meta.nextCursor` is the `cursor` of its "
    "next page. A note with `knownFalse` matches a claim the owner knows is false: never "
    "present that claim as true."
)
# The 2026-07-28 statuses by JSON-RPC code (streamable-http "Error Handling", the SDK
# server's table); any other code, -32603 and Grove's own included, is 200.
MODERN_STATUS = {PARSE_ERROR: 400, INVALID_REQUEST: 400, INVALID_PARAMS: 400,
                 HEADER_MISMATCH: 400, UNSUPPORTED_PROTOCOL_VERSION: 400,
                 METHOD_NOT_FOUND: 404}


def server_info() -> dict[str, str]:
    return {"name": "grove", "title": "Grove", "version": _version()}


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        response = HttpResponse(status=405)
        response["Allow"] = "POST"
        return response
    if not origin_allowed(request):
        return _rpc_error(None, INVALID_REQUEST, "Origin not allowed.", status=403)
    if too_big(request):
        return _too_large()
    # An empty header is no header (the first Streamable HTTP clients' era).
    version = request.headers.get("MCP-Protocol-Version") or None
    modern = version in MODERN_VERSIONS
    if modern and not _accepts_json(request):
        return HttpResponse(status=406)  # a 2026 client must accept application/json
    caller, token_sent = authenticate(request)
    if caller is None:
        return unauthorized(request, token_sent)
    if isinstance(caller, Actor):  # read when a tool runs (it may name its own project)
        caller = caller.naming(project_header(request))
    wait = throttle.connection_wait(caller.connection_id)
    if wait is not None:  # the same count as REST and /v1/tools (grove.kernel.throttle)
        response = _rpc_error(None, INVALID_REQUEST, f"Too many requests for this connection "
                              f"(limit {settings.GROVE_API_RATE_LIMIT} per minute); retry "
                              "after the number of seconds in Retry-After.", status=429,
                              data={"code": "rate_limited", "retryAfter": wait})
        response["Retry-After"] = str(wait)
        return response

    try:
        message = json.loads(request.body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return _rpc_error(None, PARSE_ERROR, "The body is not JSON (or nests too deep).",
                          status=400)
    except RequestDataTooBig:
        return _too_large()
    if isinstance(message, list):
        return _rpc_error(None, INVALID_REQUEST, "Batches are not supported; send one "
                          "message per request.", status=400)
    kind, problem = message_kind(message)
    if kind == "invalid":
        return _rpc_error(None, INVALID_REQUEST, problem, status=400)
    request_id = message.get("id") if kind == "request" else None
    if version is not None and version not in SUPPORTED_VERSIONS:
        return _rpc_error(request_id, UNSUPPORTED_PROTOCOL_VERSION,
                          "Unsupported protocol version", status=400,
                          data={"supported": list(SUPPORTED_VERSIONS), "requested": version})
    if kind == "response":
        if modern:  # a 2026 server sends no requests, so there is nothing to answer
            return _rpc_error(None, INVALID_REQUEST, "Send one JSON-RPC request or "
                              "notification per POST.", status=400)
        return HttpResponse(status=202)  # the client answering a request: nothing to say
    if kind == "notification":  # nothing to answer, in either era
        return HttpResponse(status=202)
    if modern:
        return _modern(request, caller, message)
    return _handshake(caller, message)


# -- the handshake era (2024-11-05 … 2025-11-25) --------------------------------------------


def _handshake(caller: Any, message: dict[str, Any]) -> HttpResponse:
    method, request_id = message["method"], message["id"]
    params = message.get("params") or {}
    if not isinstance(params, dict):
        return _rpc_error(request_id, INVALID_PARAMS, "params must be an object.")
    if method == "initialize":
        requested = params.get("protocolVersion")
        return _result(request_id, {
            "protocolVersion": requested if requested in HANDSHAKE_VERSIONS
            else LATEST_HANDSHAKE,
            "capabilities": capabilities(),
            "serverInfo": server_info(),
            "instructions": INSTRUCTIONS,
        })
    if method == "ping":
        return _result(request_id, {})
    try:
        result, _hint = dispatch(caller, method, params, modern=False)
    except RpcError as exc:  # errors travel with HTTP 200 in this era
        return _error_response(request_id, exc, status=200)
    return _result(request_id, result)


# -- the stateless era (2026-07-28) ----------------------------------------------------------


def _modern(request: HttpRequest, caller: Any, message: dict[str, Any]) -> HttpResponse:
    method, request_id = message["method"], message["id"]
    try:
        params = _envelope(request, message)
        if method == "server/discover":
            result: dict[str, Any] = {"supportedVersions": list(SUPPORTED_VERSIONS),
                                      "capabilities": capabilities(),
                                      "instructions": INSTRUCTIONS}
            hint: CacheHint | None = SAME_FOR_EVERYONE
        else:
            result, hint = dispatch(caller, method, params, modern=True)
    except RpcError as exc:
        return _error_response(request_id, exc, status=MODERN_STATUS.get(exc.code, 200))
    stamped = {**result, "resultType": "complete",
               "_meta": {**result.get("_meta", {}), META_SERVER_INFO: server_info()}}
    if hint is not None:
        stamped["ttlMs"], stamped["cacheScope"] = hint
    return _result(request_id, stamped)


def _envelope(request: HttpRequest, message: dict[str, Any]) -> dict[str, Any]:
    """The request's params once its 2026 envelope holds, in the SDK server's order:
    `_meta` with the protocol version and client capabilities (-32602), then the
    headers agreeing with the body (-32020) — so a client that disagrees with itself is
    told so — then the version (-32022)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(params, dict) or not isinstance(meta, dict):
        raise RpcError(INVALID_PARAMS, f"params._meta must be an object carrying the "
                       f"required '{META_PROTOCOL_VERSION}' and '{META_CLIENT_CAPABILITIES}' "
                       "envelope keys.")
    missing = [k for k in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES) if k not in meta]
    if missing:
        raise RpcError(INVALID_PARAMS, "params._meta is missing the required envelope "
                       f"key(s): {', '.join(missing)}.")
    if request.headers.get("MCP-Protocol-Version") != meta[META_PROTOCOL_VERSION]:
        raise RpcError(HEADER_MISMATCH, "The MCP-Protocol-Version header does not match "
                       "the request's protocol version in params._meta.")
    method = message["method"]
    if request.headers.get("Mcp-Method") != method:
        raise RpcError(HEADER_MISMATCH, "The Mcp-Method header does not match the "
                       "request body's method.")
    field = NAME_BEARING.get(method)
    value = params.get(field) if field else None
    if value is not None and decode_header_value(request.headers.get("Mcp-Name")) != value:
        raise RpcError(HEADER_MISMATCH, f"The Mcp-Name header does not match the request "
                       f"body's '{field}' parameter.")
    if meta[META_PROTOCOL_VERSION] not in MODERN_VERSIONS:  # the header's: already served
        raise RpcError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                       {"supported": list(SUPPORTED_VERSIONS),
                        "requested": meta[META_PROTOCOL_VERSION]})
    return params


def _accepts_json(request: HttpRequest) -> bool:
    kinds = {part.split(";")[0].strip().lower()
             for part in request.headers.get("Accept", "").split(",")}
    return bool(kinds & {"application/json", "application/*", "*/*"})


# -- answers -------------------------------------------------------------------------------------


def _rpc_error(request_id: Any, code: int, message: str, *, status: int = 200,
               data: Any = None) -> JsonResponse:
    return _error_response(request_id, RpcError(code, message, data), status=status)


def _error_response(request_id: Any, exc: RpcError, *, status: int) -> JsonResponse:
    return JsonResponse({"jsonrpc": "2.0", "id": request_id, "error": exc.error()},
                        status=status, json_dumps_params={"ensure_ascii": False})


def _too_large() -> JsonResponse:
    return _rpc_error(None, INVALID_REQUEST, f"Request bodies are limited to "
                      f"{settings.GROVE_API_MAX_BODY:,} bytes.", status=413,
                      data={"code": "payload_too_large"})


def _result(request_id: Any, result: dict[str, Any]) -> JsonResponse:
    return JsonResponse({"jsonrpc": "2.0", "id": request_id, "result": result},
                        json_dumps_params={"ensure_ascii": False, "separators": (",", ":")})


@functools.cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("grove")
    except PackageNotFoundError:
        return "0"
