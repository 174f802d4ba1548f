"""Ask as an MCP tool: the same arguments and service as `POST /v1/ask`, answering with
compact sources (the cited revisions' notes as the other tools return them)."""

from __future__ import annotations

from ask import services
from ask.arguments import AskIn
from grove.interfaces.mcp import Tool
from grove.kernel.actor import Actor
from grove.kernel.schemas import Out
from notebooks import selectors
from notebooks.schemas.arguments import ToolArguments
from notebooks.schemas.tools import CompactNote


class AskArgs(ToolArguments, AskIn):
    pass


class AskToolOut(Out):
    status: str  # answered | insufficient_evidence | no_evidence | disabled | search
    blocks: list[services.AnswerBlock]
    sources: list[CompactNote]

    def mcp_text(self) -> str:
        lines = [f"status: {self.status}"]
        for block in self.blocks:
            cited = f" [{', '.join(block.citations)}]" if block.citations else ""
            lines.append(("" if block.supported else "(unsupported) ") + block.text + cited)
        if self.sources:
            lines.append("Sources:\n\n" + "\n\n".join(s.mcp_line() for s in self.sources))
        return "\n\n".join(lines)


def _ask(actor: Actor, args: AskArgs) -> AskToolOut:
    answer = services.ask(actor=actor, **args.service_kwargs())
    notes = [source.note for source in answer.sources]
    names = selectors.notebook_names(actor=actor, notes=notes)
    return AskToolOut(status=answer.status, blocks=answer.blocks,
                      sources=[CompactNote.of(n, names) for n in notes])


TOOLS = [
    Tool(name="ask", title="Ask your notes",
         description=(
             "Answer a question from the user's notes, in blocks citing the note revisions "
             "they rely on; distrust a block marked unsupported. status no_evidence: "
             "nothing relevant (nothing made up); disabled: no answer model here, sources "
             "only (as mode=search)."),
         arguments=AskArgs, output=AskToolOut, run=_ask, read_only=True),
]
