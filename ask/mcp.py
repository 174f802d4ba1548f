"""Ask as an MCP tool: the same arguments and service as `POST /v1/ask`."""

from __future__ import annotations

from ask import services
from ask.arguments import AskIn
from grove.actor import Actor
from grove.mcp import Tool


def _ask(actor: Actor, args: AskIn) -> services.AskOut:
    return services.ask(actor=actor, **args.service_kwargs())


TOOLS = [
    Tool(name="ask", title="Ask your notes",
         description=(
             "Answer a question from the user's notes. The answer comes in blocks, each "
             "citing the exact note revisions (`note:<id>@<version>`) it relies on; a block "
             "marked supported=false cited something it was not given — do not trust it. "
             "status no_evidence: nothing relevant was found (no answer is made up); "
             "disabled: answer generation is off on this server, the matching sources are "
             "returned instead; mode=search returns sources only. Only notebooks granted "
             "to this connection are searched."),
         arguments=AskIn, output=services.AskOut, run=_ask, read_only=True),
]
