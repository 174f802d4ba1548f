"""A known note's passages for a question (issue 37 item 4): the question's vector made
before the transaction (STYLE §4: with the `openai` provider it is an HTTP call), its
term weights and the ranking (`passage_rank.best_passages`) read in one tenant
transaction. Ask's strict selection of a long note and the brief's digest of one call it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from grove.embeddings import get_embedder
from grove.embeddings.profile import active_profile_name
from grove.kernel.actor import READ, Actor
from grove.kernel.tenancy import tenant
from notebooks.selectors.passage_rank import QueryArms, RankedPassage, best_passages
from notebooks.selectors.recall import DEFAULT_MAX_DISTANCE, term_weights
from notebooks.selectors.recall_query import SEMANTIC_SETTINGS


def query_vector(query: str | None) -> tuple[list[float] | None, str | None, int | None]:
    """The query's vector with the profile and dimension it was made for (Nones without
    a query or a model). Outside any transaction."""
    embedder = get_embedder() if query else None
    profile = active_profile_name() if embedder is not None else None
    if embedder is None or profile is None or not query:
        return None, None, None
    return embedder.embed([query])[0].tolist(), profile, int(embedder.dimension)


def arms_for(query: str | None, vector: tuple[list[float] | None, str | None, int | None]
             ) -> QueryArms:
    """The arms of `query` (caller holds a tenant transaction: term weights read the
    account's statistics)."""
    return QueryArms(term_weights(query) if query else None, *vector,
                     max_distance=DEFAULT_MAX_DISTANCE)


def passages_for(*, actor: Actor, note_ids: Sequence[uuid.UUID], query: str | None,
                 per_note: int) -> dict[uuid.UUID, list[RankedPassage]]:
    """Each note's best `per_note` passages for `query` (its first ones without a query
    or a match). The caller has checked the notes are the actor's to read."""
    actor.require(READ)
    vector = query_vector(query)
    with tenant(actor, local=SEMANTIC_SETTINGS if vector[0] is not None else ()):
        return best_passages(note_ids, arms_for(query, vector), per_note=per_note)
