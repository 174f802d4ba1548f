"""Ask's rules and limits, shared by its reads, writes and shapes: what a question, a title
and a source selection may be, and what an answer's text may carry."""

from __future__ import annotations

import uuid
from typing import Any

from ask.models import PROPOSAL_SUMMARY_MAX_CHARS as PROPOSAL_SUMMARY_MAX_CHARS
from ask.models import TITLE_MAX_CHARS, Conversation
from grove.interfaces.rendering import without_images
from grove.kernel.errors import Conflict, Invalid
from grove.kernel.validation import storable_text
from notebooks.rules import EVERYWHERE, RECALL_QUERY_MAX_CHARS

# A question is searched for as it was asked (it is recall's query), so it has recall's
# limit: a longer one is refused (invalid_query), never cut.
QUERY_MAX_CHARS = RECALL_QUERY_MAX_CHARS
PREVIOUS_MAX = 4
EVIDENCE_LIMIT = 8
EVIDENCE_MAX_CHARS = 6000


def clean_query(query: Any) -> str:
    if not isinstance(query, str) or not query.strip():
        raise Invalid("Ask a question (query).", code="invalid_query")
    if len(query) > QUERY_MAX_CHARS:
        raise Invalid(f"A question is at most {QUERY_MAX_CHARS} characters.",
                      code="invalid_query")
    return storable_text(query, what="query", code="invalid_query").strip()


def answer_text(text: str) -> str:
    """A model's answer text as Grove keeps and returns it: markdown with links but no
    images (see the module's docstring)."""
    return without_images(text)


TURN_LIMIT = 100
HISTORY_TURNS = 8
PAGE = 30
SEARCH_MAX_CHARS = 200
CONTEXT_NOTES_MAX = 12
CONTEXT_NOTEBOOKS_MAX = 6
GENERATE = "ask.generate"


def clean_title(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Invalid("title must be text.", code="invalid_title")
    title = " ".join(storable_text(value, what="title", code="invalid_title").split())
    if len(title) > TITLE_MAX_CHARS:
        raise Invalid(f"A title is at most {TITLE_MAX_CHARS} characters.",
                      code="invalid_title")
    return title


def context_unavailable(message: str) -> Conflict:
    return Conflict(message, code="context_unavailable")


def clean_context(value: Any) -> dict[str, Any] | None:
    """`{notes: [≤12], notebooks: [≤6], only}` with unique ids and at least one selector,
    normalised; anything else → 409 context_unavailable (SPEC §8)."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"notes", "notebooks", "only"}:
        raise context_unavailable("context is {notes, notebooks, only}.")
    notes, notebooks = value.get("notes") or [], value.get("notebooks") or []
    only = value.get("only", False)
    if not isinstance(notes, list | tuple) or not isinstance(notebooks, list | tuple) \
            or not isinstance(only, bool):
        raise context_unavailable("context.notes and context.notebooks are lists of ids; only is "
                           "true or false.")
    if len(notes) > CONTEXT_NOTES_MAX or len(notebooks) > CONTEXT_NOTEBOOKS_MAX:
        raise context_unavailable(f"Select at most {CONTEXT_NOTES_MAX} notes and "
                           f"{CONTEXT_NOTEBOOKS_MAX} notebooks.")
    if not notes and not notebooks:
        raise context_unavailable("Select at least one note or notebook.")
    try:
        note_ids = [uuid.UUID(str(n)) for n in notes]
        notebook_ids = [uuid.UUID(str(n)) for n in notebooks]
    except (ValueError, TypeError, AttributeError):
        raise context_unavailable("Selected ids must be UUIDs.") from None
    if len(set(note_ids)) != len(note_ids) or len(set(notebook_ids)) != len(notebook_ids):
        raise context_unavailable("Each note and notebook can be selected once.")
    return {"notes": [str(n) for n in note_ids], "notebooks": [str(n) for n in notebook_ids],
            "only": only}


def personal_in(place: Any, include_personal: bool) -> bool:
    """Ask's `includePersonal` (its one reading): Personal beside everything granted; a
    question about a notebook reads that notebook alone (and one about Personal reads
    Personal, whatever the flag). `resolve_scope` checks the grant."""
    return bool(include_personal) and place is EVERYWHERE


def scope_of(conversation: Conversation) -> Any:
    """The conversation's notebook argument for retrieval (see services.retrieve)."""
    if conversation.scope == Conversation.Scope.EVERYWHERE:
        return EVERYWHERE
    return conversation.notebook_id


# -- proposals (SPEC §8) -----------------------------------------------------------------------

# At most this many proposals of one answer are kept; the rest are dropped and counted.
PROPOSALS_MAX = 6
# Notes one proposal may act on (a merge: the survivor and the others).
PROPOSAL_NOTES_MAX = 12
# Notebooks listed to the model as places it may organise into.
NOTEBOOKS_SHOWN_MAX = 50
# Why a proposal is dropped (stored with it; the turn counts them): malformed, too_many,
# unseen_note, outside_grant, unseen_notebook, note_changed, not_applicable, too_long,
# outside_group — see ask.selectors.proposals.


def clean_tidy(value: Any, context: Any) -> dict[str, Any] | None:
    """A tidy-up of one place: `{"notebookId": <uuid> | None (Personal)}`, never with a
    source selection (the tidy-up picks its own notes); else 409 context_unavailable."""
    if value is None:
        return None
    if context is not None:
        raise context_unavailable("A tidy-up picks its own notes: send tidy or context, "
                                  "not both.")
    if not isinstance(value, dict) or set(value) != {"notebookId"}:
        raise context_unavailable("tidy is {notebookId} (null = Personal).")
    raw = value["notebookId"]
    if raw is None:
        return {"notebookId": None}
    try:
        return {"notebookId": str(uuid.UUID(str(raw)))}
    except (ValueError, TypeError, AttributeError):
        raise context_unavailable("tidy.notebookId must be a notebook id or null.") from None
