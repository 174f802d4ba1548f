"""The MCP tools over REST (`/v1/tools`): the same declarations and the same run as
/mcp, for the stdio bridge and scripts."""

from __future__ import annotations

import json
from typing import Any, Literal

from django.http import HttpRequest

from grove.interfaces.rest import ERRORS, WRITE_ERRORS, ApiRouter, Ok, actor_of, ok
from grove.kernel.errors import GroveError, Invalid, NotFound

router = ApiRouter(tags=["tools"])


@router.get("/tools", response={200: Ok[dict[str, Any]], **ERRORS},
            summary="The MCP tool declarations (as tools/list), the server's "
                    "instructions and version; used by the stdio bridge")
def tool_list(request: HttpRequest) -> Any:
    from grove.interfaces import mcp

    actor_of(request)
    return ok({"tools": mcp.declarations(), "instructions": mcp.INSTRUCTIONS,
               "server": mcp.server_info()})


@router.post(
    "/tools/{tool}", response={200: Ok[dict[str, Any]], **WRITE_ERRORS},
    openapi_extra={"requestBody": {"content": {"application/json": {"schema": {
        "type": "object", "description": "The tool's arguments, exactly as over MCP "
                                        "(see tools/list for each tool's inputSchema); "
                                        "arguments it refuses: 400 invalid_arguments"}}}}},
    summary="Run an MCP tool with the same arguments; the result in the REST envelope "
            "(with ?format=mcp: the MCP tool result itself, errors included)")
def tool_run(request: HttpRequest, tool: str, format: Literal["rest", "mcp"] = "rest") -> Any:
    from grove.interfaces import mcp

    try:
        arguments = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise Invalid("The body must be a JSON object of the tool's arguments (nesting "
                      "at most a few hundred levels).", code="invalid_request") from None
    if not isinstance(arguments, dict):
        raise Invalid("The body must be a JSON object of the tool's arguments.",
                      code="invalid_request")
    try:
        output = mcp.run_tool(actor_of(request), tool, arguments)
    except mcp.UnknownTool:
        raise NotFound(f"No tool named {tool!r}.", code="unknown_tool") from None
    except GroveError as exc:
        if format == "mcp":  # what /mcp answers: a tool result with isError
            return ok(mcp.tool_error(exc))
        raise
    if format == "mcp":
        return ok(mcp.tool_result(output))
    return ok(mcp.structured(output))
