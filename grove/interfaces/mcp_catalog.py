"""What feature apps declare to `/mcp` besides tools: resources and prompts (SPEC §7).

A module named in `settings.GROVE_MCP_TOOL_MODULES` may export, beside `TOOLS`:

* `RESOURCES`: a `ResourceProvider` — URI templates, a paged listing within the caller's
  grant, and a reader that applies the same access rules as the tools (an unknown,
  foreign or ungranted URI is the same `NotFound`);
* `PROMPTS`: a list of `Prompt` — name, title, arguments, and a function rendering the
  messages for the caller.

`grove/interfaces/mcp.py` serves them (`resources/list`, `resources/templates/list`,
`resources/read`, `prompts/list`, `prompts/get`) in both protocol eras, and the stdio
bridge forwards them. Core declares the shapes; the feature apps fill them.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from django.conf import settings

from grove.kernel.actor import Actor


@dataclass(frozen=True)
class ResourceTemplate:
    """A family of resources, e.g. `note://{id}`."""

    uri_template: str
    name: str
    title: str
    description: str
    mime_type: str = "text/markdown"


@dataclass(frozen=True)
class Resource:
    """One resource as `resources/list` shows it."""

    uri: str
    name: str
    title: str
    mime_type: str = "text/markdown"
    description: str | None = None


@dataclass(frozen=True)
class ResourceContent:
    """What `resources/read` returns for a URI (text only: Grove serves no blobs)."""

    uri: str
    text: str
    mime_type: str = "text/markdown"


@dataclass(frozen=True)
class ResourceProvider:
    """A feature app's resources.

    `list_page(actor, cursor)` returns one page of the resources the caller may read and
    the cursor of the next page (None on the last); a cursor it did not make raises
    `Invalid` (`invalid_cursor`). `read(actor, uri)` returns the contents, or None when
    the URI's scheme is not this provider's; it raises `NotFound` for anything the caller
    may not read, exactly as for an unknown one."""

    schemes: tuple[str, ...]
    templates: list[ResourceTemplate]
    list_page: Callable[[Actor, str | None], tuple[list[Resource], str | None]]
    read: Callable[[Actor, str], list[ResourceContent] | None]


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str
    required: bool = False


@dataclass(frozen=True)
class PromptMessage:
    role: Literal["user", "assistant"]
    text: str


@dataclass(frozen=True)
class Prompt:
    """A prompt template a person picks in their client (e.g. a slash command).

    `render(actor, arguments)` returns (description, messages); bad or missing
    arguments raise `Invalid`, what the caller may not read `NotFound`."""

    name: str
    title: str
    description: str
    render: Callable[[Actor, dict[str, str]], tuple[str, list[PromptMessage]]]
    arguments: list[PromptArgument] = field(default_factory=list)


@functools.cache
def resource_providers() -> tuple[ResourceProvider, ...]:
    """Every declared resource provider, in the order of the modules."""
    return tuple(provider for module in settings.GROVE_MCP_TOOL_MODULES
                 if (provider := getattr(importlib.import_module(module), "RESOURCES", None))
                 is not None)


@functools.cache
def prompts() -> dict[str, Prompt]:
    """Every declared prompt by name, in declaration order."""
    found: dict[str, Prompt] = {}
    for module in settings.GROVE_MCP_TOOL_MODULES:
        for prompt in getattr(importlib.import_module(module), "PROMPTS", ()):
            assert prompt.name not in found, f"prompt {prompt.name} declared twice"
            found[prompt.name] = prompt
    return found
