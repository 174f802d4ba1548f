"""MCP tools: how a feature app declares one (`Tool`), how its schemas are compacted for
a client's context, and how a call is validated, run and turned into a tool result.

Tools are declared by the feature apps (`notebooks/mcp.py`: `TOOLS`), found through
`settings.GROVE_MCP_TOOL_MODULES` so core imports no feature app. A tool is a pydantic
argument model (extra fields refused), an output model, honest annotations and a
function that calls the same service as the REST route. `/mcp` (both protocol eras),
`POST /v1/tools/{tool}` (grove/interfaces/tool_api.py) and, through that route, the
stdio bridge run the same declarations.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from pydantic import BaseModel
from pydantic import ValidationError as ArgumentsError

from grove.identity.selectors import actor_for_project
from grove.interfaces.mcp_protocol import error_result
from grove.kernel.actor import Actor
from grove.kernel.errors import GroveError, Invalid


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
            "outputSchema": declared_output_schema(self.output),
            "annotations": self.annotations(),
        }

    def annotations(self) -> dict[str, bool]:
        """Every hint said outright (their defaults are the cautious ones), except
        `destructiveHint` and `idempotentHint` on a read-only tool, where MCP gives them
        no meaning. The title is the tool's own (MCP 2025-06-18)."""
        hints = {"readOnlyHint": self.read_only}
        if not self.read_only:
            hints |= {"destructiveHint": self.destructive, "idempotentHint": self.idempotent}
        return {**hints, "openWorldHint": False}


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
        elif (key == "default" and (value is None or value is False)) or (
                key == "description" and not describe):
            continue  # no default, or a flag's: a flag left out is false
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
                if "enum" in other:  # an enum lists every value it allows, null too
                    other["enum"] = [*other["enum"], None]
            out = {**other, **out}
        elif not offer_null:
            out["anyOf"] = others
    options = out.get("anyOf")
    if isinstance(options, list) and options and all(
            o.get("type") == "string" and set(o) <= {"type", "format", "const"}
            for o in options):
        # A union of strings (a date or a time; an id or "root"): one string, which the
        # description spells out.
        del out["anyOf"]
        out = {"type": "string", **out}
    return out


@functools.cache
def output_schema(output: type[BaseModel]) -> dict[str, Any]:
    """A result's schema as declared: compact and lean (`_lean`), and no field is ever
    null — one without a value is left out instead (`fit` makes every result keep that
    promise), so null is taken out of each field's type, enum and `anyOf`."""
    schema = _inline(compact_schema(
        output.model_json_schema(by_alias=True, mode="serialization"), describe=False))
    for node in _objects(schema):
        for prop in node.get("properties", {}).values():
            _never_null(prop)
    return {**_lean(schema), "type": "object"}


@functools.cache
def declared_output_schema(output: type[BaseModel]) -> dict[str, Any]:
    """What `tools/list` declares of a result: its fields and the JSON type of each —
    the nested shapes (a recall item's note, a brief's sections) are the tool's
    description's and its text's to say. Every client puts the list in its model's
    context, where the full nested schemas cost 7 KB (of a 28,000-byte budget:
    tests/mcp/test_tools_list_size.py); the results still keep the full schema's promise
    (`fit`: no field is ever null, at any depth), so what a client checks against this
    one always holds."""
    full = output_schema(output)
    defs = full.get("$defs", {})
    return {"type": "object", "properties": {
        name: _shallow(prop, defs) for name, prop in full.get("properties", {}).items()}}


def _shallow(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A field's schema to its JSON type: an object or an array without its insides, a
    scalar (its type, enum or const) as it is."""
    if "$ref" in prop:
        return _shallow(defs[prop["$ref"].rsplit("/", 1)[1]], defs)
    if "properties" in prop or "additionalProperties" in prop or prop.get("type") == "object":
        return {"type": "object"}
    if "items" in prop or prop.get("type") == "array":
        return {"type": "array"}
    if isinstance(prop.get("anyOf"), list):
        options: list[dict[str, Any]] = []
        for option in prop["anyOf"]:
            kind = _shallow(option, defs)
            if kind not in options:
                options.append(kind)
        return options[0] if len(options) == 1 else {"anyOf": options}
    return prop


def _lean(node: Any) -> Any:
    """A result schema without what a reader does not need and checking a result does
    not miss: `type` beside `properties` (object), `items` (array), `enum` or `const`
    — the keyword says it; the annotations `format` and `default` (a result has no
    defaults, and its field names say which strings are times); and `required` — every
    field of a result is sent whenever it has a value, and one without is left out,
    never null, so the properties' types are the whole promise. The root keeps
    `type: object` (MCP)."""
    if isinstance(node, list):
        return [_lean(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("format", "default", "required") and not isinstance(value, dict):
            continue
        if key == "type" and ((value == "object" and "properties" in node)
                              or (value == "array" and "items" in node)
                              or "enum" in node or "const" in node):
            continue
        out[key] = {name: _lean(sub) for name, sub in value.items()} if key in (
            "properties", "$defs") else _lean(value)
    return out


def _never_null(prop: dict[str, Any]) -> None:
    kinds = prop.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        kinds = [k for k in kinds if k != "null"]
        prop["type"] = kinds[0] if len(kinds) == 1 else kinds
    if isinstance(prop.get("enum"), list) and None in prop["enum"]:
        prop["enum"] = [value for value in prop["enum"] if value is not None]
    options = prop.get("anyOf")
    if isinstance(options, list) and _NULL in options:
        others = [option for option in options if option != _NULL]
        del prop["anyOf"]
        if len(others) == 1:
            prop.update({**others[0], **prop})
        else:
            prop["anyOf"] = others


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
    """`value` without its null fields, at every depth its schema declares properties
    (through `$ref`s, and the `anyOf` branch the value takes): a free-form object (a
    full REST record) keeps its own nulls."""
    if "$ref" in schema:
        schema = {**defs[schema["$ref"].rsplit("/", 1)[1]],
                  **{k: v for k, v in schema.items() if k != "$ref"}}
    if isinstance(schema.get("anyOf"), list):
        for option in schema["anyOf"]:
            branch = defs[option["$ref"].rsplit("/", 1)[1]] if "$ref" in option else option
            if (isinstance(value, dict) and "properties" in branch) or (
                    isinstance(value, list) and "items" in branch):
                return fit(value, option, defs)
    if isinstance(value, dict) and "properties" in schema:
        return {k: fit(v, schema["properties"].get(k, {}), defs) for k, v in value.items()
                if v is not None}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [fit(v, schema["items"], defs) for v in value]
    return value


@functools.cache
def tools() -> dict[str, Tool]:
    """Every declared tool by name, in declaration order (which `tools/list` keeps, so
    clients and their prompt caches see the same list every time). A module may declare
    only resources or prompts (`grove/interfaces/mcp_catalog.py`) and no `TOOLS`."""
    found: dict[str, Tool] = {}
    for module in settings.GROVE_MCP_TOOL_MODULES:
        for tool in getattr(importlib.import_module(module), "TOOLS", ()):
            assert tool.name not in found, f"tool {tool.name} declared twice"
            found[tool.name] = tool
    return found


def declarations() -> list[dict[str, Any]]:
    """`tools/list` (and `GET /v1/tools`)."""
    return [t.declaration() for t in tools().values()]


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
        problems = [{"path": ".".join(str(p) for p in e["loc"]), "message": e["msg"]}
                    for e in exc.errors(include_url=False, include_context=False)]
        raise Invalid("The arguments are not valid: " + "; ".join(
            f"{p['path'] or '(arguments)'}: {p['message']}" for p in problems),
            code="invalid_arguments", problems=problems) from None
    # The project it names (an argument, else the request's header) is its home here.
    actor = actor_for_project(actor, getattr(parsed, "project", None) or actor.project)
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
