"""A test-only resource provider and prompt, plugged in before the real ones
(`notebooks.mcp_context`) by the `catalog` fixture (tests/mcp/conftest.py): five
`fixture://item/<n>` resources in pages of two with a cursor of the provider's own, so
`resources/list` must merge two providers across pages; and a prompt whose rendering
raises what a feature app may raise."""

from __future__ import annotations

from grove.interfaces.mcp_catalog import (
    Prompt,
    PromptArgument,
    PromptMessage,
    Resource,
    ResourceContent,
    ResourceProvider,
    ResourceTemplate,
)
from grove.kernel.actor import READ, Actor
from grove.kernel.errors import Conflict, Invalid, NotFound

ITEMS, PAGE = 5, 2
UNICODE_URI = "fixture://item/été"


def _items(actor: Actor, cursor: str | None) -> tuple[list[Resource], str | None]:
    actor.require(READ)
    if cursor is None:
        start = 0
    elif cursor.startswith("offset:") and cursor[7:].isdigit():
        start = int(cursor[7:])
    else:  # the contract: a cursor the provider did not make is `invalid_cursor`
        raise Invalid("The cursor is not valid.", code="invalid_cursor")
    end = min(start + PAGE, ITEMS)
    page = [Resource(f"fixture://item/{n}", f"item-{n}", f"Item {n}", mime_type="text/plain")
            for n in range(start, end)]
    return page, (f"offset:{end}" if end < ITEMS else None)


def _read(actor: Actor, uri: str) -> list[ResourceContent] | None:
    if not uri.lower().startswith("fixture://"):
        return None
    actor.require(READ)
    name = uri.removeprefix("fixture://item/")
    if name == "busy":
        raise Conflict("The item is being rewritten; read it again shortly.",
                       code="item_busy", retry_after=1)
    if name == "été" or (name.isdigit() and int(name) < ITEMS):
        return [ResourceContent(uri=uri, text=f"Item {name}", mime_type="text/plain")]
    raise NotFound("No such item.", code="item_not_found")


RESOURCES = ResourceProvider(
    schemes=("fixture",),
    templates=[ResourceTemplate("fixture://item/{n}", "item", "An item", "Item n of five.",
                                mime_type="text/plain")],
    list_page=_items, read=_read)


def _echo(actor: Actor, arguments: dict[str, str]) -> tuple[str, list[PromptMessage]]:
    if arguments["topic"] == "nonsense":
        raise Invalid("That topic makes no sense.", code="topic_invalid", topic="nonsense")
    if arguments["topic"] == "explode":  # a bug in a provider, not a domain error
        raise RuntimeError("a provider's bug, with details no client should see")
    tone = arguments.get("tone", "plain")
    return f"About {arguments['topic']}", [
        PromptMessage("user", f"Tell me about {arguments['topic']} ({tone})."),
        PromptMessage("assistant", "Gladly.")]


PROMPTS = [Prompt("fixture_echo", "Echo a topic", "Repeats the topic back.", _echo,
                  arguments=[PromptArgument("topic", "What to talk about.", required=True),
                             PromptArgument("tone", "How to say it.")])]
