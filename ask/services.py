"""Ask (SPEC §8): a question answered from the caller's notes, every claim citing the
exact note revision it used. Stateless here (`POST /v1/ask`, the `ask` MCP tool);
conversations build on the same function.

Evidence is recall's (grant-scoped, thresholded). No evidence → `no_evidence` without
calling the model. Generation off, or `mode=search` → the sources alone. Otherwise the
model's answer is checked against the evidence actually sent: a citation of anything
else — unknown, another account's, another version — is dropped and its block marked
unsupported, so an answer never links to a note the model was not shown.

Model output is untrusted (a note it read may carry instructions), so Grove, not the
model, decides what an answer's text may do: before any channel returns or stores it,
`answer_text` turns every markdown image into a link naming its host — answer markdown
may carry links and never images, so no client rendering it fetches anything by itself
(what PostgreSQL cannot hold is already out: `providers` cleans the model's JSON).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

from ask import providers
from grove.interfaces.rendering import without_images
from grove.kernel.actor import READ, Actor
from grove.kernel.errors import Invalid, Unavailable
from grove.kernel.schemas import Out
from grove.kernel.validation import storable_text
from notebooks.rules import EVERYWHERE
from notebooks.schemas.notes import NoteOut
from notebooks.selectors import recall

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


def check_citations(drafted: list[providers.DraftBlock], allowed: set[str]) -> list[AnswerBlock]:
    blocks = []
    for block in drafted:
        kept = list(dict.fromkeys(c for c in block.citations if c in allowed))
        dropped = len(set(block.citations)) != len(kept)
        blocks.append(AnswerBlock(text=answer_text(block.text), citations=kept,
                                  supported=bool(kept) and not dropped))
    return blocks


def evidence_of(sources: list[Source]) -> list[providers.Evidence]:
    return [providers.Evidence(cite_as=s.cite_as, content=s.note.content, kind=s.note.kind,
                               place="Personal" if s.note.notebook_id is None
                               else str(s.note.notebook_id)) for s in sources]


def answered(draft: providers.Draft, sources: list[Source]) -> tuple[str, list[AnswerBlock]]:
    """The model's draft with its citations checked against the sources it was shown
    and its text made safe to store and render (`answer_text`). Every channel — `ask`,
    `aask`, the conversation job — goes through here."""
    blocks = check_citations(draft.blocks, {s.cite_as for s in sources})
    status = draft.status if blocks or draft.status != "answered" else "insufficient_evidence"
    return status, blocks


@dataclass(frozen=True)
class _Prepared:
    question: str
    previous: list[str]
    sources: list[Source]
    done: AskOut | None  # the whole answer when no model call is needed


def _prepare(*, actor: Actor, query: Any, notebook_id: Any, include_personal: bool,
             previous_questions: Any, mode: str) -> _Prepared:
    question = clean_query(query)
    if mode not in ("answer", "search"):
        raise Invalid("mode is answer or search.", code="invalid_mode")
    previous = list(previous_questions or [])
    if len(previous) > PREVIOUS_MAX:
        raise Invalid(f"At most {PREVIOUS_MAX} previous questions.", code="invalid_previous")
    previous = [clean_query(q) for q in previous]
    actor.require(READ)
    sources = retrieve(actor=actor, question=question, notebook_id=notebook_id,
                       include_personal=include_personal)
    done = None
    if not sources:
        done = AskOut(status="no_evidence", blocks=[], sources=[])
    elif mode == "search":
        done = AskOut(status="search", blocks=[], sources=sources)
    elif not providers.configured():
        done = AskOut(status="disabled", blocks=[], sources=sources)
    return _Prepared(question=question, previous=previous, sources=sources, done=done)


def retrieve(*, actor: Actor, question: str, notebook_id: Any = EVERYWHERE,
             include_personal: bool = True, limit: int = EVIDENCE_LIMIT) -> list[Source]:
    """Recall's evidence for a question in a scope: `notebook_id` omitted (EVERYWHERE) =
    every granted notebook, None = Personal only, else that one notebook."""
    if notebook_id is EVERYWHERE:
        scope: dict[str, Any] = {"notebook_ids": None, "include_personal": include_personal}
    elif notebook_id is None:
        scope = {"notebook_ids": [], "include_personal": True}
    else:
        scope = {"notebook_ids": [uuid.UUID(str(notebook_id))], "include_personal": False}
    found = recall.recall(actor=actor, query=question, limit=limit,
                          max_chars=EVIDENCE_MAX_CHARS, **scope)
    return [Source(cite_as=hit.note.versioned_id, note=hit.note, score=hit.score)
            for hit in found.data]


def ask(*, actor: Actor, query: Any, notebook_id: Any = EVERYWHERE,
        include_personal: bool = True, previous_questions: Any = (),
        mode: str = "answer") -> AskOut:
    """Answer `query` from the caller's notes. `notebook_id`: omitted = everything
    granted, None = Personal only, else one notebook. Raises Invalid, NotFound (notebook),
    Unavailable (503: `provider_unavailable`). Stores nothing."""
    prepared = _prepare(actor=actor, query=query, notebook_id=notebook_id,
                        include_personal=include_personal,
                        previous_questions=previous_questions, mode=mode)
    if prepared.done is not None:
        return prepared.done
    try:
        draft = providers.generate(prepared.question, evidence_of(prepared.sources),
                                   prepared.previous)
    except providers.ProviderUnavailable as exc:
        raise Unavailable(str(exc), code="provider_unavailable") from None
    status, blocks = answered(draft, prepared.sources)
    return AskOut(status=status, blocks=blocks, sources=prepared.sources)  # type: ignore[arg-type]


async def aask(*, actor: Actor, query: Any, notebook_id: Any = EVERYWHERE,
               include_personal: bool = True, previous_questions: Any = (),
               mode: str = "answer") -> AskOut:
    """`ask` for async callers (`POST /v1/ask`): the database work runs in a thread, the
    model call on the async client, so a caller that hangs up cancels it (SPEC §8)."""
    from asgiref.sync import sync_to_async

    prepared = await sync_to_async(_prepare)(
        actor=actor, query=query, notebook_id=notebook_id, include_personal=include_personal,
        previous_questions=previous_questions, mode=mode)
    if prepared.done is not None:
        return prepared.done
    try:
        draft = await providers.agenerate(prepared.question, evidence_of(prepared.sources),
                                          prepared.previous)
    except providers.ProviderUnavailable as exc:
        raise Unavailable(str(exc), code="provider_unavailable") from None
    status, blocks = answered(draft, prepared.sources)
    return AskOut(status=status, blocks=blocks, sources=prepared.sources)  # type: ignore[arg-type]
