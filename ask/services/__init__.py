"""Ask's writes (SPEC §8): one keyword-only function per use case (STYLE §1).

| module | use cases |
|---|---|
| `conversations` | ask (stateless), conversations: create, start, submit, re-ask, retry, delete |
| `proposals` | apply and undo a proposal, fenced by its fingerprint |
| `budget` | the model-call budget: every model call counted before it is made |
| `session_handoff` | a client session's handoff, summarised by the model when there is one |

The interfaces call them through this package (`from ask import services`).
"""

from ask.services.conversations import (
    EVERYWHERE,
    aask,
    answered,
    ask,
    conversation_create,
    conversation_delete,
    conversation_start,
    evidence_of,
    turn_reask,
    turn_retry,
    turn_submit,
)
from ask.services.proposals import proposal_apply, proposal_undo
from ask.services.session_handoff import handoff_from_session

__all__ = [
    "EVERYWHERE",
    "aask",
    "answered",
    "ask",
    "conversation_create",
    "conversation_delete",
    "conversation_start",
    "evidence_of",
    "handoff_from_session",
    "proposal_apply",
    "proposal_undo",
    "turn_reask",
    "turn_retry",
    "turn_submit",
]
