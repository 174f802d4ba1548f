"""Resources and prompts on `/mcp`, in both protocol eras: what the feature apps declare
in `grove/interfaces/mcp_catalog.py` (`RESOURCES`, `PROMPTS`) turned into
`resources/list`, `resources/templates/list`, `resources/read`, `prompts/list` and
`prompts/get` answers, and their failures into JSON-RPC errors.

* **Listing** merges the providers in the order of `GROVE_MCP_TOOL_MODULES`, one
  provider's page at a time. The cursor handed out says which provider and that
  provider's own cursor, signed by `grove.kernel.paging` (its own salt) and bound to
  the calling account and connection: a client cannot craft one, move it to another key, or
  skip into a provider it was not handed. Anything else is `-32602`.
* **Reading** goes to the providers that declare the URI's scheme. Unknown scheme,
  unknown id, another account's or an ungranted note: one and the same error (the URI
  is all it repeats), so URIs cannot be probed. Its code is the era's
  resource-not-found code (`mcp_protocol.LEGACY_RESOURCE_NOT_FOUND` in the handshake
  era, `-32602` in 2026-07-28), with `data.uri`.
* **Errors a provider or prompt raises** map once (`rpc_error_of`): `Invalid` →
  `-32602`, `Forbidden` → `mcp_protocol.FORBIDDEN`, anything else → `-32603`; the
  message is the domain's, `data.code` its machine code.
* **An OAuth client not approved yet** sees the declarations (templates, prompts) and an
  empty resource list; reading or rendering anything answers `FORBIDDEN` with
  `data.code: "connection_required"` and the approval link — never 401/403.
"""

from __future__ import annotations

from typing import Any

from grove.interfaces.mcp_access import approval_needed
from grove.interfaces.mcp_catalog import (
    Prompt,
    Resource,
    ResourceProvider,
    prompts,
    resource_providers,
)
from grove.interfaces.mcp_protocol import (
    FORBIDDEN,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LEGACY_RESOURCE_NOT_FOUND,
    RpcError,
)
from grove.kernel.actor import Actor
from grove.kernel.errors import Forbidden, Gone, GroveError, Invalid, NotFound
from grove.kernel.paging import Cursor, caller_binding, cursor_read, cursor_write

CURSOR_SALT = "grove.mcp.resources.list"


def rpc_error_of(exc: GroveError) -> RpcError:
    """A domain error as a JSON-RPC error: the message as the domain wrote it, the
    machine code and details in `data` (as a tool error's second block carries them)."""
    data = {"code": exc.code, **exc.wire_details()}
    if isinstance(exc, Invalid | NotFound | Gone):
        # For a prompt, what its arguments name and the caller cannot see is as bad an
        # argument as a malformed one (resources/read handles NotFound itself).
        return RpcError(INVALID_PARAMS, exc.message, data)
    if isinstance(exc, Forbidden):
        return RpcError(FORBIDDEN, exc.message, data)
    return RpcError(INTERNAL_ERROR, exc.message, data)


def not_approved(pending: Any) -> RpcError:
    message, details = approval_needed(pending, "try again")
    return RpcError(FORBIDDEN, message, details)


# -- resources ---------------------------------------------------------------------------------


def resource_list(caller: Any, modern: bool, params: dict[str, Any]) -> dict[str, Any]:
    """One page of what the caller may read, across the providers in order."""
    cursor = params.get("cursor")
    if not isinstance(caller, Actor):  # not approved: nothing is readable yet
        return {"resources": []}
    providers = resource_providers()
    index, inner = (0, None) if cursor is None else _cursor_read(caller, cursor, providers)
    while index < len(providers):
        try:
            items, following = providers[index].list_page(caller, inner)
        except GroveError as exc:
            raise rpc_error_of(exc) from None
        if following is not None:
            return _page(items, _cursor_write(caller, index, providers, following))
        index, inner = index + 1, None
        if items:  # this provider is done; the next page starts the next one
            more = index < len(providers)
            return _page(items, _cursor_write(caller, index, providers, None)
                         if more else None)
    return {"resources": []}


def template_list(caller: Any, modern: bool, params: dict[str, Any]) -> dict[str, Any]:
    return {"resourceTemplates": [
        {"uriTemplate": t.uri_template, "name": t.name, "title": t.title,
         "description": t.description, "mimeType": t.mime_type}
        for provider in resource_providers() for t in provider.templates]}


def resource_read(caller: Any, modern: bool, params: dict[str, Any]) -> dict[str, Any]:
    uri = params.get("uri")
    if not isinstance(uri, str) or not uri:
        raise RpcError(INVALID_PARAMS, "resources/read needs a uri.")
    if not isinstance(caller, Actor):
        raise not_approved(caller)
    scheme = uri.partition(":")[0].lower()
    for provider in resource_providers():
        if scheme not in provider.schemes:
            continue
        try:
            contents = provider.read(caller, uri)
        except (NotFound, Gone) as exc:
            raise _not_found(uri, modern, exc) from None
        except GroveError as exc:
            raise rpc_error_of(exc) from None
        if contents:  # None: not this provider's after all; never answer an empty list
            return {"contents": [{"uri": c.uri, "mimeType": c.mime_type, "text": c.text}
                                 for c in contents]}
    raise _not_found(uri, modern)


def _not_found(uri: str, modern: bool, exc: GroveError | None = None) -> RpcError:
    # Identical for every reason a URI cannot be read (only `data.uri` echoes the
    # request); the era alone decides the code. One exception: a version that a note the
    # caller may read never had is said as such — `version_not_found`, as REST and the
    # get_note tool say it — since it names nothing the caller could not read.
    code = INVALID_PARAMS if modern else LEGACY_RESOURCE_NOT_FOUND
    if exc is not None and exc.code == "version_not_found":
        return RpcError(code, exc.message, {"uri": uri, "code": exc.code,
                                            **exc.wire_details()})
    return RpcError(code, "Resource not found.", {"uri": uri, "code": "resource_not_found"})


def _page(items: list[Resource], cursor: str | None) -> dict[str, Any]:
    page: dict[str, Any] = {"resources": [_resource(r) for r in items]}
    if cursor is not None:
        page["nextCursor"] = cursor
    return page


def _resource(resource: Resource) -> dict[str, Any]:
    shown = {"uri": resource.uri, "name": resource.name, "title": resource.title,
             "mimeType": resource.mime_type}
    if resource.description:
        shown["description"] = resource.description
    return shown


def _cursor_write(actor: Actor, index: int, providers: tuple[ResourceProvider, ...],
                  inner: str | None) -> str:
    return cursor_write(Cursor(binding=caller_binding(actor), fingerprint=_made_for(providers),
                               key=(index, inner)), salt=CURSOR_SALT)


def _made_for(providers: tuple[ResourceProvider, ...]) -> str:
    """What a listing cursor is made for: the providers in order, by their schemes (the
    module list may change on upgrade, and a cursor must not skip into another one)."""
    return "|".join(",".join(provider.schemes) for provider in providers)


def _cursor_read(actor: Actor, cursor: Any,
                 providers: tuple[ResourceProvider, ...]) -> tuple[int, str | None]:
    """(provider index, its own cursor) from a cursor this server handed this caller,
    for these providers (`grove.kernel.paging`: signed, bound to the caller)."""
    refused = RpcError(INVALID_PARAMS, "The cursor is not valid.",
                       {"code": "invalid_cursor"})
    if not isinstance(cursor, str):
        raise refused
    try:
        key = cursor_read(cursor, salt=CURSOR_SALT, binding=caller_binding(actor),
                          fingerprint=_made_for(providers)).key
    except Invalid:
        raise refused from None
    if key is None or len(key) != 2:
        raise refused
    index, inner = key
    if not (isinstance(index, int) and 0 <= index < len(providers)
            and (inner is None or isinstance(inner, str))):
        raise refused
    return index, inner


# -- prompts -----------------------------------------------------------------------------------


def prompt_list(caller: Any, modern: bool, params: dict[str, Any]) -> dict[str, Any]:
    return {"prompts": [_prompt(p) for p in prompts().values()]}


def _prompt(prompt: Prompt) -> dict[str, Any]:
    return {"name": prompt.name, "title": prompt.title, "description": prompt.description,
            "arguments": [{"name": a.name, "description": a.description,
                           "required": a.required} for a in prompt.arguments]}


def prompt_get(caller: Any, modern: bool, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(INVALID_PARAMS, "prompts/get needs a prompt name.")
    prompt = prompts().get(name)
    if prompt is None:
        raise RpcError(INVALID_PARAMS, f"Unknown prompt: {name}.",
                       {"code": "unknown_prompt", "name": name})
    arguments = _prompt_arguments(prompt, params.get("arguments"))
    if not isinstance(caller, Actor):
        raise not_approved(caller)
    try:
        description, messages = prompt.render(caller, arguments)
    except GroveError as exc:
        raise rpc_error_of(exc) from None
    return {"description": description, "messages": [
        {"role": m.role, "content": {"type": "text", "text": m.text}} for m in messages]}


def _prompt_arguments(prompt: Prompt, given: Any) -> dict[str, str]:
    """The arguments as the prompt declares them: strings (MCP's prompt arguments are
    string-valued), a null taken as left out, none unknown, every required one there."""
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise RpcError(INVALID_PARAMS, "Prompt arguments must be an object of strings.",
                       {"code": "invalid_arguments"})
    given = {k: v for k, v in given.items() if v is not None}
    declared = {a.name for a in prompt.arguments}
    problems = [f"{k}: not an argument of {prompt.name}" for k in given if k not in declared]
    problems += [f"{k}: must be a string" for k, v in given.items()
                 if k in declared and not isinstance(v, str)]
    problems += [f"{a.name}: required" for a in prompt.arguments
                 if a.required and not (isinstance(given.get(a.name), str)
                                        and given[a.name].strip())]
    if problems:
        raise RpcError(INVALID_PARAMS, "The arguments are not valid: " + "; ".join(problems),
                       {"code": "invalid_arguments", "problems": problems})
    return given
