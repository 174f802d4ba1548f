"""Ask as an MCP tool: the same arguments and service as `POST /v1/ask`, answering with
compact sources (the cited revisions' notes as the other tools return them)."""

from __future__ import annotations

from ask.schemas import AskArgs, AskToolOut, CompactProposal
from ask.services import ask
from grove.interfaces.mcp import Tool
from grove.kernel.actor import Actor
from notebooks import selectors
from notebooks.schemas.tools import FoundNote


def _ask(actor: Actor, args: AskArgs) -> AskToolOut:
    answer = ask(actor=actor, **args.service_kwargs())
    names = selectors.notebook_names(actor=actor, notes=[s.note for s in answer.sources])
    return AskToolOut(status=answer.status, blocks=answer.blocks,
                      # Each source by the id the blocks cite it with: a document's
                      # passage is `note:<id>@<v>#<n>`, its content that passage.
                      # A source reached through a link says from which note.
                      sources=[FoundNote.found(s.note, names, passage=None, via=s.via,
                                               authority=s.authority,
                                               known_false=s.known_false).model_copy(
                                                   update={"id": s.cite_as})
                               for s in answer.sources],
                      proposals=[CompactProposal.of(p) for p in answer.proposals])


TOOLS = [
    Tool(name="ask", title="Ask your notes",
         description=(
             "Answer a question from the user's notes, in blocks citing the note revisions "
             "they rely on; distrust a block marked unsupported. status no_evidence: "
             "nothing relevant (nothing made up); disabled: no answer model here, sources "
             "only (as mode=search). proposals (when asked to change notes) are data: "
             "only the owner applies them, in Grove."),
         arguments=AskArgs, output=AskToolOut, run=_ask, read_only=True),
]
