"""MCP over stateless Streamable HTTP at `/mcp` (SPEC §7), as a plain Django view.

Protocol era: the initialize handshake (revisions 2024-11-05 … 2025-11-25). A modern
(2026-07-28) `server/discover` probe is answered with -32022 naming the handshake
versions, which makes clients fall back to `initialize`. One POST per message, JSON
responses, no sessions, no batches; notifications → 202; GET/DELETE → 405.

Tools are declared by the feature apps (`notebooks/mcp.py`: `TOOLS`), found through
`settings.GROVE_MCP_TOOL_MODULES` so core imports no feature app. A tool is a pydantic
argument model (extra fields refused), an output model, honest annotations and a
function that calls the same service as the REST route. `POST /v1/tools/{tool}` runs the
same declarations (grove/interfaces/rest.py).

Failures: protocol faults are JSON-RPC errors; anything the tool reports (bad
arguments, not found, conflicts, missing capability) is a result with `isError: true`:
the message as text, then the machine code and details as a JSON text block
(`grove.interfaces.mcp_protocol.error_result`; no `structuredContent`, which strict clients check
against the tool's `outputSchema`).
"""

from __future__ import annotations

import functools
import importlib
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel
from pydantic import ValidationError as ArgumentsError

from grove.identity import services
from grove.interfaces.mcp_protocol import (
    HANDSHAKE_VERSIONS,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    error_result,
    message_kind,
)
from grove.kernel import throttle
from grove.kernel.actor import Actor
from grove.kernel.errors import GroveError

log = logging.getLogger(__name__)


LATEST_VERSION = HANDSHAKE_VERSIONS[0]
# Requests after initialize without the header are from the first Streamable HTTP era.
DEFAULT_HEADER_VERSION = "2025-03-26"
UNSUPPORTED_PROTOCOL_VERSION = -32022
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
            # In arguments null means "left out" (notebooks.schemas.arguments.ToolArguments), so
            # the schema offers no null.
            "inputSchema": _inline(compact_schema(
                self.arguments.model_json_schema(by_alias=True), offer_null=False)),
            "outputSchema": output_schema(self.output),
            "annotations": {  # the title is the tool's own (MCP 2025-06-18)
                "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": False,
            },
        }


_NULL = {"type": "null"}
_REST_ONLY = re.compile(r" ?\(REST: [^)]*\)")


def compact_schema(node: Any, *, offer_null: bool = True, describe: bool = True) -> Any:
    """A pydantic JSON schema without what costs a client's context and says nothing:
    generated titles, `default: null`, `anyOf [X, null]` (written as a type list, or as X
    alone where null is not offered) and, for results (`describe=False`), the classes'
    docstrings. Property names are never touched."""
    if isinstance(node, list):
        return [compact_schema(item, offer_null=offer_null, describe=describe)
                for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "$defs"):
            out[key] = {name: compact_schema(sub, offer_null=offer_null, describe=describe)
                        for name, sub in value.items()}
        elif key == "title" and isinstance(value, str):
            continue
        elif (key == "default" and value is None) or (key == "description" and not describe):
            continue
        elif key == "description" and isinstance(value, str):
            # Shared with REST, where null has meanings tool arguments do not give it;
            # "(REST: …)" remarks are for the OpenAPI document only.
            out[key] = _REST_ONLY.sub("", value)
        elif key == "additionalProperties" and value is True:
            continue  # the default
        elif key == "format" and value == "uuid":
            continue  # the descriptions say which ids a field takes
        elif key == "pattern" and isinstance(value, str):
            continue  # id and text patterns: the descriptions say them in fewer words
        else:
            out[key] = compact_schema(value, offer_null=offer_null, describe=describe)
    options = out.get("anyOf")
    if isinstance(options, list) and _NULL in options:
        others = [o for o in options if o != _NULL]
        if len(others) == 1 and (not offer_null or isinstance(others[0].get("type"), str)):
            del out["anyOf"]
            other = dict(others[0])
            if offer_null:
                other["type"] = [other["type"], "null"]
            out = {**other, **out}
        elif not offer_null:
            out["anyOf"] = others
    return out


@functools.cache
def output_schema(output: type[BaseModel]) -> dict[str, Any]:
    """A result's schema as declared: compact, and an optional field is never null (it
    is left out instead; `fit` makes every result keep that promise)."""
    schema = _inline(compact_schema(
        output.model_json_schema(by_alias=True, mode="serialization"), describe=False))
    for node in _objects(schema):
        required = set(node.get("required", ()))
        for name, prop in node.get("properties", {}).items():
            kinds = prop.get("type")
            if name not in required and isinstance(kinds, list) and "null" in kinds:
                kinds = [k for k in kinds if k != "null"]
                prop["type"] = kinds[0] if len(kinds) == 1 else kinds
    return schema


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """Definitions used once written in place (a `$ref` costs more than it saves)."""
    defs = schema.get("$defs", {})
    uses = json.dumps(schema)
    once = {name for name in defs if uses.count(f'"#/$defs/{name}"') == 1}

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref", "")
        if ref.startswith("#/$defs/") and ref[8:] in once:
            return walk({**defs[ref[8:]], **{k: v for k, v in node.items() if k != "$ref"}})
        return {k: walk(v) for k, v in node.items() if k != "$defs"}

    inlined = walk(schema)
    kept = {name: walk(d) for name, d in defs.items() if name not in once}
    return {**inlined, "$defs": kept} if kept else inlined


def _objects(schema: Any) -> list[dict[str, Any]]:
    """Every object schema inside `schema`."""
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        if "properties" in schema:
            found.append(schema)
        for value in schema.values():
            found += _objects(value)
    elif isinstance(schema, list):
        for value in schema:
            found += _objects(value)
    return found


def fit(value: Any, schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """`value` without the nulls its schema leaves out (optional fields that are null)."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[1]]
    if isinstance(value, dict) and "properties" in schema:
        required = set(schema.get("required", ()))
        return {k: fit(v, schema["properties"].get(k, {}), defs) for k, v in value.items()
                if v is not None or k in required}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [fit(v, schema["items"], defs) for v in value]
    return value


@functools.cache
def tools() -> dict[str, Tool]:
    """Every declared tool by name, in declaration order."""
    found: dict[str, Tool] = {}
    for module in settings.GROVE_MCP_TOOL_MODULES:
        for tool in importlib.import_module(module).TOOLS:
            assert tool.name not in found, f"tool {tool.name} declared twice"
            found[tool.name] = tool
    return found


def declarations() -> list[dict[str, Any]]:
    """`tools/list` (and `GET /v1/tools`)."""
    return [t.declaration() for t in tools().values()]


def server_info() -> dict[str, str]:
    return {"name": "grove", "title": "Grove", "version": _version()}


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
        from grove.kernel.errors import Invalid

        problems = [{"path": ".".join(str(p) for p in e["loc"]), "message": e["msg"]}
                    for e in exc.errors(include_url=False, include_context=False)]
        raise Invalid("The arguments are not valid: " + "; ".join(
            f"{p['path'] or '(arguments)'}: {p['message']}" for p in problems),
            code="invalid_arguments", problems=problems) from None
    return tool.run(actor, parsed)


def structured(output: BaseModel) -> dict[str, Any]:
    """A tool's result as JSON, fitted to its declared outputSchema (what /mcp sends as
    structuredContent and `POST /v1/tools/<tool>` as data)."""
    schema = output_schema(type(output))
    return fit(output.model_dump(mode="json", by_alias=True), schema, schema.get("$defs", {}))


def tool_result(output: BaseModel) -> dict[str, Any]:
    """The structured result, and as text what a model reads: the output's own compact
    rendering (`mcp_text()`) where it gives one, else the structured result's JSON."""
    data = structured(output)
    render = getattr(output, "mcp_text", None)
    text = render() if callable(render) else None
    if text is None:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return {"content": [{"type": "text", "text": text}], "structuredContent": data,
            "isError": False}


def tool_error(exc: GroveError) -> dict[str, Any]:
    return error_result(exc.code, exc.message, exc.wire_details())


# -- the endpoint ----------------------------------------------------------------------------


def resource_metadata_url(request: HttpRequest) -> str:
    from grove.identity.oauth_views import public_origin

    return public_origin(request) + "/.well-known/oauth-protected-resource/mcp"


def _rpc_error(request_id: Any, code: int, message: str, *, status: int = 200,
               data: Any = None) -> JsonResponse:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return JsonResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status=status)


def _unauthorized(request: HttpRequest, token_sent: bool) -> HttpResponse:
    challenge = f'Bearer resource_metadata="{resource_metadata_url(request)}", scope="mcp"'
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
    from grove.identity.oauth import token_caller

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
    return error_result("connection_required", message, {
        "approvalUrl": url, "clientId": pending.client_id, "expiresAt": request["expiresAt"]})


def _origin_allowed(request: HttpRequest) -> bool:
    """Browsers send Origin; a page on another site must not drive a local server
    (DNS rebinding). Clients that are not browsers send none. Allowed: the base URL's
    origin, and the origin the request itself was made to (its Host has passed
    ALLOWED_HOSTS, so a rebound name never gets here)."""
    origin = request.headers.get("Origin")
    if not origin:
        return True
    seen = urlsplit(origin)
    allowed = urlsplit(settings.GROVE_BASE_URL)
    own = (request.scheme, request.get_host())
    return (seen.scheme, seen.netloc) in {(allowed.scheme, allowed.netloc), own}


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        response = HttpResponse(status=405)
        response["Allow"] = "POST"
        return response
    if not _origin_allowed(request):
        return _rpc_error(None, INVALID_REQUEST, "Origin not allowed.", status=403)
    if _too_big(request):
        return _rpc_error(None, INVALID_REQUEST, f"Request bodies are limited to "
                          f"{settings.GROVE_API_MAX_BODY:,} bytes.", status=413,
                          data={"code": "payload_too_large"})
    actor, token_sent = _authenticate(request)
    if actor is None:
        return _unauthorized(request, token_sent)
    wait = throttle.connection_wait(actor.connection_id)
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
        return _rpc_error(None, INVALID_REQUEST, f"Request bodies are limited to "
                          f"{settings.GROVE_API_MAX_BODY:,} bytes.", status=413,
                          data={"code": "payload_too_large"})
    if isinstance(message, list):
        return _rpc_error(None, INVALID_REQUEST, "Batches are not supported; send one "
                          "message per request.", status=400)
    kind, problem = message_kind(message)
    if kind == "invalid":
        return _rpc_error(None, INVALID_REQUEST, problem, status=400)
    if kind == "response":
        return HttpResponse(status=202)  # the client answering a request: nothing to say
    method, request_id = message["method"], message.get("id")

    version = request.headers.get("MCP-Protocol-Version")
    if method == "server/discover" or (version and version not in HANDSHAKE_VERSIONS):
        # A modern-era probe, or a version this server does not speak: name the ones it
        # does (clients fall back to `initialize`).
        return _rpc_error(request_id, UNSUPPORTED_PROTOCOL_VERSION,
                          f"Unsupported protocol version {version or '(modern)'}.",
                          status=400, data={"supported": list(HANDSHAKE_VERSIONS),
                                            "requested": version})

    if kind == "notification":  # nothing to answer
        return HttpResponse(status=202)
    params = message.get("params") or {}
    if not isinstance(params, dict):
        return _rpc_error(request_id, INVALID_PARAMS, "params must be an object.")

    if method == "initialize":
        requested = params.get("protocolVersion")
        return _result(request_id, {
            "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else LATEST_VERSION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": server_info(),
            "instructions": INSTRUCTIONS,
        })
    if method == "ping":
        return _result(request_id, {})
    if method == "tools/list":
        return _result(request_id, {"tools": declarations()})
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


def _too_big(request: HttpRequest) -> bool:
    try:
        return int(request.headers.get("Content-Length") or 0) > settings.GROVE_API_MAX_BODY
    except ValueError:
        return False


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
