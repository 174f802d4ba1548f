"""Ask (SPEC §8): a question answered from the caller's notes, every claim citing the
exact note revision it used. Stateless here (`POST /v1/ask`, the `ask` MCP tool);
conversations build on the same function.

Evidence is recall's (grant-scoped, thresholded). No evidence → `no_evidence` without
calling the model. Generation off, or `mode=search` → the sources alone. Otherwise the
model's answer is checked against the evidence actually sent: a citation of anything
else — unknown, another account's, another version — is dropped and its block marked
unsupported, so an answer never links to a note the model was not shown.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from ask import providers
from grove.actor import READ, Actor
from grove.errors import Invalid, Unavailable
from grove.schemas import Out
from notebooks import recall
from notebooks.schemas import NoteOut
from notebooks.selectors import EVERYWHERE
from notebooks.services import storable_text

QUERY_MAX_CHARS = 6000
PREVIOUS_MAX = 4
EVIDENCE_LIMIT = 8
EVIDENCE_MAX_CHARS = 6000


class AnswerBlock(Out):
    text: str
    citations: list[str]
    # False when the model cited something it was not shown (dropped) or nothing at all.
    supported: bool


class Source(Out):
    cite_as: str  # note:<uuid>@<version>
    note: NoteOut
    score: float


class AskOut(Out):
    status: Literal["answered", "insufficient_evidence", "no_evidence", "disabled", "search"]
    blocks: list[AnswerBlock]
    sources: list[Source]


def _clean_query(query: Any) -> str:
    if not isinstance(query, str) or not query.strip():
        raise Invalid("Ask a question (query).", code="invalid_query")
    if len(query) > QUERY_MAX_CHARS:
        raise Invalid(f"A question is at most {QUERY_MAX_CHARS} characters.",
                      code="invalid_query")
    return storable_text(query, what="query", code="invalid_query").strip()


def check_citations(drafted: list[providers.DraftBlock], allowed: set[str]) -> list[AnswerBlock]:
    blocks = []
    for block in drafted:
        kept = list(dict.fromkeys(c for c in block.citations if c in allowed))
        dropped = len(set(block.citations)) != len(kept)
        blocks.append(AnswerBlock(text=block.text, citations=kept,
                                  supported=bool(kept) and not dropped))
    return blocks


def ask(*, actor: Actor, query: Any, notebook_id: Any = EVERYWHERE,
        include_personal: bool = True, previous_questions: Any = (),
        mode: str = "answer") -> AskOut:
    """Answer `query` from the caller's notes. `notebook_id`: omitted = everything
    granted, None = Personal only, else one notebook. Raises Invalid, NotFound (notebook),
    Unavailable (503: `provider_unavailable`). Stores nothing."""
    question = _clean_query(query)
    if mode not in ("answer", "search"):
        raise Invalid("mode is answer or search.", code="invalid_mode")
    previous = list(previous_questions or [])
    if len(previous) > PREVIOUS_MAX:
        raise Invalid(f"At most {PREVIOUS_MAX} previous questions.", code="invalid_previous")
    previous = [_clean_query(q) for q in previous]
    actor.require(READ)
    if notebook_id is EVERYWHERE:
        scope: dict[str, Any] = {"notebook_ids": None, "include_personal": include_personal}
    elif notebook_id is None:
        scope = {"notebook_ids": [], "include_personal": True}
    else:
        scope = {"notebook_ids": [uuid.UUID(str(notebook_id))],
                 "include_personal": False}
    found = recall.recall(actor=actor, query=question, limit=EVIDENCE_LIMIT,
                          max_chars=EVIDENCE_MAX_CHARS, **scope)
    sources = [Source(cite_as=hit.note.versioned_id, note=hit.note, score=hit.score)
               for hit in found.data]
    if not sources:
        return AskOut(status="no_evidence", blocks=[], sources=[])
    if mode == "search":
        return AskOut(status="search", blocks=[], sources=sources)
    if not providers.configured():
        return AskOut(status="disabled", blocks=[], sources=sources)
    evidence = [providers.Evidence(cite_as=s.cite_as, content=s.note.content,
                                   kind=s.note.kind,
                                   place="Personal" if s.note.notebook_id is None
                                   else str(s.note.notebook_id)) for s in sources]
    try:
        draft = providers.generate(question, evidence, previous)
    except providers.ProviderUnavailable as exc:
        raise Unavailable(str(exc), code="provider_unavailable") from None
    blocks = check_citations(draft.blocks, {e.cite_as for e in evidence})
    return AskOut(status=draft.status if blocks or draft.status != "answered"
                  else "insufficient_evidence", blocks=blocks, sources=sources)
