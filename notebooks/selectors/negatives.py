"""Matching text against claims known to be false (SPEC §10).

A text matches a claim **lexically** when it contains every lexeme of the claim (English
stemming, stop words dropped), and **semantically** when its vector is within
`SEMANTIC_MAX_DISTANCE` of the claim's *and* it agrees on the claim's values: every
lexeme of the claim holding a digit (a version, a host name, a date, an amount) is in
the text too. Without that second condition a note stating the right value ("staging is
db-stage-2") would sit as close to the false claim ("staging is db-stage-1") as the claim
itself — sentence embeddings barely see a changed digit.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from django.db import connection

from notebooks.models import SEARCH_CONFIG, NegativeClaim
from notebooks.schemas.notes import KnownFalse

SEMANTIC_MAX_DISTANCE = 0.25  # cosine: similarity 0.75 and up
log = logging.getLogger(__name__)


def lexemes_of(texts: Sequence[str]) -> list[set[str]]:
    """Each text's lexemes, as full text search stems them. One statement."""
    if not texts:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT ord, tsvector_to_array(to_tsvector(%s::regconfig, t)) "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS x(t, ord) ORDER BY ord",
            [SEARCH_CONFIG, list(texts)])
        return [set(row[1] or []) for row in cursor.fetchall()]


def note_lexemes(note_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, set[str]]:
    """The stored lexemes of notes (their `search` column). Caller holds a tenant
    transaction."""
    if not note_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, tsvector_to_array(search) FROM notebooks_note "
                       "WHERE id = ANY(%s)", [list(note_ids)])
        return {row[0]: set(row[1] or []) for row in cursor.fetchall()}


def note_distances(note_ids: Sequence[uuid.UUID], claims: Sequence[NegativeClaim],
                   profile: str | None) -> dict[tuple[uuid.UUID, uuid.UUID], float]:
    """Cosine distance between each note's nearest passage and each claim's vector,
    where both were made under the active `profile`."""
    embedded = [c.id for c in claims if c.embedding is not None and c.profile == profile]
    if not note_ids or not embedded or profile is None:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.note_id, c.id, min(e.embedding <=> c.embedding) "
            "FROM passages_passagevector e "
            "JOIN notebooks_negativeclaim c ON c.id = ANY(%s) "
            "WHERE e.note_id = ANY(%s) AND e.profile = %s "
            "AND vector_dims(e.embedding) = vector_dims(c.embedding) GROUP BY e.note_id, c.id",
            [embedded, list(note_ids), profile])
        return {(row[0], row[1]): float(row[2]) for row in cursor.fetchall()}


def matches(claims: Sequence[NegativeClaim], lexemes: Mapping[uuid.UUID, set[str]],
            distances: Mapping[tuple[uuid.UUID, uuid.UUID], float]
            ) -> dict[uuid.UUID, list[KnownFalse]]:
    """Which claims each text (by key) matches, by the rule above. `lexemes` holds each
    text's lexemes; `distances` (text key, claim id) → cosine distance, where known."""
    claim_lexemes = lexemes_of([c.claim for c in claims])
    found: dict[uuid.UUID, list[KnownFalse]] = {}
    for key, words in lexemes.items():
        for claim, wanted in zip(claims, claim_lexemes, strict=True):
            if not wanted:
                continue
            values = {w for w in wanted if any(ch.isdigit() for ch in w)}
            lexical = wanted <= words
            distance = distances.get((key, claim.id))
            semantic = (distance is not None and distance <= SEMANTIC_MAX_DISTANCE
                        and values <= words)
            if lexical or semantic:
                found.setdefault(key, []).append(KnownFalse(claim_id=claim.id,
                                                            claim=claim.claim))
    return found


def texts_matching(texts: Sequence[str], claims: Sequence[NegativeClaim]
                   ) -> list[list[KnownFalse]]:
    """The claims each text matches (an answer's blocks), by the same rule as notes: the
    texts' lexemes from the database's parser, their vectors from the active embedding
    provider when the claims have vectors of its profile (else lexical alone)."""
    if not texts or not claims:
        return [[] for _ in texts]
    from grove.embeddings import get_embedder
    from grove.embeddings.profile import active_profile_name

    keys = [uuid.uuid4() for _ in texts]
    lexemes = dict(zip(keys, lexemes_of(list(texts)), strict=True))
    distances: dict[tuple[uuid.UUID, uuid.UUID], float] = {}
    embedder = get_embedder()
    profile = active_profile_name() if embedder is not None else None
    embedded = [c for c in claims if c.embedding is not None and c.profile == profile]
    vectors: Any = []
    if embedder is not None and embedded:
        from notebooks.selectors.duplicates import PROVIDER_FAILURES

        try:
            vectors = embedder.embed(list(texts))
        except PROVIDER_FAILURES as exc:  # the check goes on, lexically
            log.warning("known-false check: the embedding provider failed (%s)", exc)
        for key, vector in zip(keys, vectors, strict=False):
            for claim in embedded:
                other = np.asarray(claim.embedding, dtype=np.float32)
                if other.shape != vector.shape:
                    continue
                cosine = float(np.dot(vector, other)
                               / (np.linalg.norm(vector) * np.linalg.norm(other) or 1.0))
                distances[(key, claim.id)] = 1.0 - cosine
    found = matches(claims, lexemes, distances)
    return [found.get(key, []) for key in keys]


def notes_matching(note_ids: Sequence[uuid.UUID], claims: Sequence[NegativeClaim],
                   profile: str | None) -> dict[uuid.UUID, list[KnownFalse]]:
    """The claims each note matches. Caller holds a tenant transaction."""
    if not note_ids or not claims:
        return {}
    return matches(claims, note_lexemes(note_ids), note_distances(note_ids, claims, profile))
