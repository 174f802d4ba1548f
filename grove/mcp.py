"""MCP over stateless Streamable HTTP at `/mcp` (SPEC §7), as a plain Django view.

Protocol era: the initialize handshake (revisions 2024-11-05 … 2025-11-25). A modern
(2026-07-28) `server/discover` probe is answered with -32022 naming the handshake
versions, which makes clients fall back to `initialize`. One POST per message, JSON
responses, no sessions, no batches; notifications → 202; GET/DELETE → 405.

Tools are declared by the feature apps (`notebooks/mcp.py`: `TOOLS`), found through
`settings.GROVE_MCP_TOOL_MODULES` so core imports no feature app. A tool is a pydantic
argument model (extra fields refused), an output model, honest annotations and a
function that calls the same service as the REST route. `POST /v1/tools/{tool}` runs the
same declarations (grove/api.py).

Failures: protocol faults are JSON-RPC errors; anything the tool reports (bad
arguments, not found, conflicts, missing capability) is a result with `isError: true`,
the machine code in `structuredContent` and the message in a text block.
"""

from __future__ import annotations

import functools
import importlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel
from pydantic import ValidationError as ArgumentsError

from grove import services
from grove.actor import Actor
from grove.errors import GroveError
from grove.mcp_versions import HANDSHAKE_VERSIONS

log = logging.getLogger(__name__)


LATEST_VERSION = HANDSHAKE_VERSIONS[0]
# Requests after initialize without the header are from the first Streamable HTTP era.
DEFAULT_HEADER_VERSION = "2025-03-26"
UNSUPPORTED_PROTOCOL_VERSION = -32022
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
INSTRUCTIONS = (
    "Grove is the user's long-term memory: notes in notebooks, each with a kind "
    "(preference, fact, decision, solution, handoff) and a version. Call `recall` before "
    "answering questions about the user, their projects or earlier work; call `remember` "
    "to save what should outlast this conversation. You see only the notebooks the owner "
    "granted to this connection. Changes take an `operationId`: retrying with the same one "
    "never saves twice."
)


@dataclass(frozen=True)
class Tool:
    """One MCP tool (and `POST /v1/tools/<name>`)."""

    name: str
    title: str
    description: str
    arguments: type[BaseModel]
    output: type[BaseModel]
    run: Callable[[Actor, Any], BaseModel]
    read_only: bool
    destructive: bool = False
    idempotent: bool = True

    def declaration(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.arguments.model_json_schema(by_alias=True),
            "outputSchema": self.output.model_json_schema(by_alias=True, mode="serialization"),
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": False,
            },
        }


@functools.cache
def tools() -> dict[str, Tool]:
    """Every declared tool by name, in declaration order."""
    found: dict[str, Tool] = {}
    for module in settings.GROVE_MCP_TOOL_MODULES:
        for tool in importlib.import_module(module).TOOLS:
            assert tool.name not in found, f"tool {tool.name} declared twice"
            found[tool.name] = tool
    return found


class UnknownTool(Exception):
    pass


def run_tool(actor: Actor, name: str, arguments: Any) -> BaseModel:
    """Validate the arguments and run the tool. Raises UnknownTool, GroveError (from the
    service, or `invalid_arguments` for arguments the model refuses)."""
    tool = tools().get(name)
    if tool is None:
        raise UnknownTool(name)
    try:
        parsed = tool.arguments.model_validate(arguments if arguments is not None else {})
    except ArgumentsError as exc:
        from grove.errors import Invalid

        problems = [{"path": ".".join(str(p) for p in e["loc"]), "message": e["msg"]}
                    for e in exc.errors(include_url=False, include_context=False)]
        raise Invalid("The arguments are not valid: " + "; ".join(
            f"{p['path'] or '(arguments)'}: {p['message']}" for p in problems),
            code="invalid_arguments", problems=problems) from None
    return tool.run(actor, parsed)


def tool_result(output: BaseModel) -> dict[str, Any]:
    structured = output.model_dump(mode="json", by_alias=True)
    return {"content": [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}],
            "structuredContent": structured, "isError": False}


def tool_error(exc: GroveError) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": exc.message}],
            "structuredContent": {"code": exc.code, "message": exc.message,
                                  **({"details": exc.details} if exc.details else {})},
            "isError": True}


# -- the endpoint ----------------------------------------------------------------------------


def resource_url() -> str:
    return settings.GROVE_BASE_URL.rstrip("/") + "/mcp"


def resource_metadata_url() -> str:
    return settings.GROVE_BASE_URL.rstrip("/") + "/.well-known/oauth-protected-resource/mcp"


def _rpc_error(request_id: Any, code: int, message: str, *, status: int = 200,
               data: Any = None) -> JsonResponse:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return JsonResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status=status)


def _unauthorized(token_sent: bool) -> HttpResponse:
    challenge = f'Bearer resource_metadata="{resource_metadata_url()}"'
    if token_sent:
        challenge += ', error="invalid_token", error_description="The token is not valid."'
    response = JsonResponse({"jsonrpc": "2.0", "id": None, "error": {
        "code": -32001, "message": "Authentication required: send a Grove API key or an "
                                   "OAuth access token as a Bearer token."}}, status=401)
    response["WWW-Authenticate"] = challenge
    return response


def _authenticate(request: HttpRequest) -> tuple[Any, bool]:
    """(caller, token sent): an Actor (API key or approved OAuth client), a
    PendingClient (OAuth client awaiting the owner's approval) or None."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None, False
    if token.startswith(services.KEY_PREFIX):
        return services.connection_authenticate(token), True
    from grove.oauth import token_caller

    caller, _error = token_caller(request)
    return caller, True


def connection_required(pending: Any) -> dict[str, Any]:
    """The tool result for a client the owner has not approved: where to approve it."""
    request = services.connection_request_approval(
        account_id=pending.account_id, connection_id=pending.connection_id,
        redirect_host=pending.redirect_host)
    url = (f"{settings.GROVE_BASE_URL.rstrip('/')}/connections/{pending.connection_id}"
           f"/approve?request={request['id']}")
    message = (f"The owner of this Grove has not approved this app yet. Ask them to open "
               f"{url} (signed in to Grove), choose what this app may read or change, and "
               f"approve; then call the tool again. The link works for 10 minutes. "
               f"Client id: {pending.client_id}.")
    return {"content": [{"type": "text", "text": message}],
            "structuredContent": {"code": "connection_required", "message": message,
                                  "approvalUrl": url, "clientId": pending.client_id,
                                  "expiresAt": request["expiresAt"]},
            "isError": True}


def _origin_allowed(request: HttpRequest) -> bool:
    """Browsers send Origin; a page on another site must not drive a local server
    (DNS rebinding). Clients that are not browsers send none."""
    origin = request.headers.get("Origin")
    if not origin:
        return True
    allowed = urlsplit(settings.GROVE_BASE_URL)
    seen = urlsplit(origin)
    return (seen.scheme, seen.netloc) == (allowed.scheme, allowed.netloc)


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        response = HttpResponse(status=405)
        response["Allow"] = "POST"
        return response
    if not _origin_allowed(request):
        return _rpc_error(None, INVALID_REQUEST, "Origin not allowed.", status=403)
    actor, token_sent = _authenticate(request)
    if actor is None:
        return _unauthorized(token_sent)

    try:
        message = json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        return _rpc_error(None, PARSE_ERROR, "The body is not JSON.", status=400)
    if isinstance(message, list):
        return _rpc_error(None, INVALID_REQUEST, "Batches are not supported; send one "
                          "message per request.", status=400)
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" \
            or not isinstance(message.get("method"), str):
        return _rpc_error(message.get("id") if isinstance(message, dict) else None,
                          INVALID_REQUEST, "Not a JSON-RPC 2.0 request.", status=400)
    method, request_id = message["method"], message.get("id")

    version = request.headers.get("MCP-Protocol-Version")
    if method == "server/discover" or (version and version not in HANDSHAKE_VERSIONS):
        # A modern-era probe, or a version this server does not speak: name the ones it
        # does (clients fall back to `initialize`).
        return _rpc_error(request_id, UNSUPPORTED_PROTOCOL_VERSION,
                          f"Unsupported protocol version {version or '(modern)'}.",
                          status=400, data={"supported": list(HANDSHAKE_VERSIONS),
                                            "requested": version})

    if "id" not in message:  # a notification: nothing to answer
        return HttpResponse(status=202)
    params = message.get("params") or {}
    if not isinstance(params, dict):
        return _rpc_error(request_id, INVALID_PARAMS, "params must be an object.")

    if method == "initialize":
        requested = params.get("protocolVersion")
        return _result(request_id, {
            "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else LATEST_VERSION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "grove", "title": "Grove", "version": _version()},
            "instructions": INSTRUCTIONS,
        })
    if method == "ping":
        return _result(request_id, {})
    if method == "tools/list":
        return _result(request_id, {"tools": [t.declaration() for t in tools().values()]})
    if method == "tools/call":
        name = params.get("name")
        if not isinstance(name, str):
            return _rpc_error(request_id, INVALID_PARAMS, "tools/call needs a tool name.")
        if not isinstance(actor, Actor):  # authenticated, not approved: never 401/403
            if name not in tools():
                return _rpc_error(request_id, INVALID_PARAMS, f"Unknown tool: {name}.")
            return _result(request_id, connection_required(actor))
        try:
            output = run_tool(actor, name, params.get("arguments"))
        except UnknownTool:
            return _rpc_error(request_id, INVALID_PARAMS, f"Unknown tool: {name}.")
        except GroveError as exc:
            return _result(request_id, tool_error(exc))
        return _result(request_id, tool_result(output))
    return _rpc_error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}.")


def _result(request_id: Any, result: dict[str, Any]) -> JsonResponse:
    return JsonResponse({"jsonrpc": "2.0", "id": request_id, "result": result},
                        json_dumps_params={"ensure_ascii": False})


@functools.cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("grove")
    except PackageNotFoundError:
        return "0"
