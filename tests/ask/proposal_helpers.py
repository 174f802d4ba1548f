"""Helpers of the proposal tests: a stand-in model's reply with proposals, a turn asked
over exactly the picked notes (so what the model is shown is known), and apply/undo over
REST with the owner's session."""

from __future__ import annotations

import json
from typing import Any

from ask.models import Proposal
from grove.kernel.tenancy import tenant
from tests.ask.helpers import generate, start, submit, turn_of


def proposal(kind: str, notes: list[str] | None = None, *, action: str | None = None,
             summary: str = "Tidy up.", content: str | None = None,
             note_kind: str | None = None, notebook: str | None = None,
             subject: str | None = None, name: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "action": action, "summary": summary, "notes": notes or [],
            "content": content, "note_kind": note_kind, "notebook": notebook,
            "subject": subject, "name": name}


def reply(cite: str, *proposals: dict[str, Any]) -> str:
    return json.dumps({"status": "answered",
                       "blocks": [{"text": "Here is what I propose.", "citations": [cite]}],
                       "proposals": list(proposals)})


def asked(owner, provider, question: str, notes: list, *proposals: dict[str, Any],
          notebooks: list | None = None, cite: str | None = None):
    """A conversation whose one turn is answered from exactly `notes` (and `notebooks`)
    by a stand-in model returning `proposals`. Returns (conversation, turn)."""
    conversation = start(owner)
    provider.chat_replies = [reply(cite or notes[0].versioned_id, *proposals)]
    turn = submit(owner, conversation, question, context={
        "notes": [str(n.id) for n in notes],
        "notebooks": [str(nb.id) for nb in notebooks or []], "only": True})
    generate(owner)
    return conversation, turn_of(owner, conversation, turn)


def path(conversation, turn, proposal_id, verb: str) -> str:
    return (f"/v1/conversations/{conversation.id}/turns/{turn.id}/proposals/"
            f"{proposal_id}/{verb}")


def act(web, conversation, turn, proposal_id, verb: str):
    return web.post(path(conversation, turn, proposal_id, verb), data="{}",
                    content_type="application/json")


def stored(owner) -> list[Proposal]:
    with tenant(owner):
        return list(Proposal.objects.order_by("created_at", "position"))
