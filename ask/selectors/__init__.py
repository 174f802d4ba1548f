"""Ask's reads (SPEC §8).

| module | reads |
|---|---|
| `conversations` | conversations and turns as their starter sees them, history, evidence, pages |
| `citations` | whether what an answer cited still reads the same ("changed since") |
| `proposals` | proposals checked against what the model was shown, and their previews |
| `fingerprints` | the state a preview was made from, compared before apply and undo |
| `proposal_state` | what can be done with a stored proposal now, as its reader sees it |

The interfaces call them through this package (`from ask import selectors`).
"""

from ask.selectors.conversations import (
    access_conversation,
    check_context,
    check_tidy,
    conversation_get,
    conversation_list,
    conversation_page,
    conversation_search,
    conversations_visible_to,
    known_false_in,
    notes_picked,
    retrieve,
    source_choices,
    turn_get,
)

__all__ = [
    "access_conversation",
    "check_context",
    "check_tidy",
    "conversation_get",
    "conversation_list",
    "conversation_page",
    "conversation_search",
    "conversations_visible_to",
    "known_false_in",
    "notes_picked",
    "retrieve",
    "source_choices",
    "turn_get",
]
