"""Likely duplicates among a place's live notes (SPEC §8 Tidy-up; `remember`'s `similar`).

Two notes are likely duplicates when

* their content is the same up to case and whitespace (`Note.content_key`, a generated
  column with its own index), at any embedding model and before either is indexed; or
* the cosine distance of their *current* vectors (the active profile's, made from the
  content each note has now) is at most `rules.DUPLICATE_MAX_DISTANCE`.

A place is one notebook or Personal (notebook null): duplicates are looked for only
there, among the caller's live notes (`access.live_filter`: its account, its grant,
active, unexpired, in a live notebook), and never include the note compared. Every read
runs in the caller's tenant transaction or opens one, so row-level security applies too.

Vectors are the ones already stored for the notes' first passages (a memory record is
one passage: its whole text; `passages_passagevector`), with one exception: a text just
saved has none yet (its embed job runs after commit), so `remember` embeds it
beforehand as recall embeds a query (`probe_of`) and compares that.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

import numpy as np
from django.db import connection
from django.db.models import OuterRef, Q, Subquery, Value
from django.db.models.functions import Cast
from pgvector.django import CosineDistance, VectorField

from grove.embeddings import EmbeddingUnavailable, configured_profile, get_embedder
from grove.kernel.actor import READ, Actor
from grove.kernel.errors import Invalid
from grove.kernel.tenancy import tenant
from notebooks.models import content_key_of
from notebooks.rules import (
    DUPLICATE_GROUP_MAX,
    DUPLICATE_GROUPS_MAX,
    DUPLICATE_MAX_DISTANCE,
    DUPLICATE_SCAN_MAX,
    SIMILAR_DEFAULT_LIMIT,
    SIMILAR_MAX_LIMIT,
    parse_uuid,
)
from notebooks.schemas.notes import (
    DuplicateGroup,
    DuplicateGroupsOut,
    DuplicateLink,
    DuplicateMember,
)
from notebooks.selectors.access import (
    access_note,
    live_filter,
    notes_live,
    resolve_scope,
)
from passages.models import PassageVector

log = logging.getLogger(__name__)

# Nearest vectors read per lookup before the threshold and the current-content check.
NEAREST_SLACK = 10
# Provider failures that leave a save without `similar` vectors rather than failing it:
# the embed job's declared transient errors (`services.indexing.HANDLER`).
PROVIDER_FAILURES = (EmbeddingUnavailable, TimeoutError, ConnectionError)


@dataclass(frozen=True)
class Probe:
    """A text's vector under the active profile, made outside any transaction."""

    profile: str
    dimension: int
    vector: list[float]


def probe_of(content: str) -> Probe | None:
    """The vector of `content` with the active embedding provider — the way recall embeds
    its query: before the tenant transaction opens (with the `openai` provider it is an
    HTTP call). None when embeddings are disabled or the provider fails now (a declared
    transient failure, logged): the caller then compares by content alone."""
    embedder = get_embedder()
    configured = configured_profile()
    if embedder is None or configured is None:
        return None
    try:
        vector = embedder.embed([content])[0]
    except PROVIDER_FAILURES as exc:
        log.warning("similar notes: the embedding provider failed (%s); content only", exc)
        return None
    return Probe(profile=configured[0], dimension=int(configured[1]),
                 vector=[float(x) for x in vector])


def _place(notebook_id: uuid.UUID | None, prefix: str = "") -> Q:
    if notebook_id is None:
        return Q(**{f"{prefix}notebook__isnull": True})
    return Q(**{f"{prefix}notebook_id": notebook_id})


def _clean_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) \
            or not 1 <= limit <= SIMILAR_MAX_LIMIT:
        raise Invalid(f"limit must be a whole number from 1 to {SIMILAR_MAX_LIMIT}.",
                      code="invalid_limit")
    return limit


def _clean_distance(max_distance: float) -> float:
    if not 0 <= max_distance <= 2:
        raise Invalid("maxDistance must be in [0, 2].", code="invalid_max_distance")
    return float(max_distance)


def _exact(actor: Actor, notebook_id: uuid.UUID | None, key: object,
           exclude: uuid.UUID | None, limit: int) -> list[uuid.UUID]:
    """Live notes of the place with this content key, newest first."""
    notes = notes_live(actor).filter(_place(notebook_id), content_key=key)
    if exclude is not None:
        notes = notes.exclude(id=exclude)
    return list(notes.order_by("-updated_at", "id").values_list("id", flat=True)[:limit])


def _nearest(actor: Actor, notebook_id: uuid.UUID | None, probe: Probe,
             exclude: uuid.UUID | None, limit: int,
             max_distance: float) -> list[tuple[uuid.UUID, float]]:
    """Live notes of the place whose current vector is within `max_distance` of the
    probe's, nearest first (HNSW with iterative scan, as recall's semantic arm)."""
    # Must be the HNSW index's expression: (embedding)::vector(dim).
    distance = CosineDistance(Cast("embedding", VectorField(dimensions=probe.dimension)),
                              probe.vector)
    rows = PassageVector.objects.filter(
        live_filter(actor, prefix="note__"), _place(notebook_id, prefix="note__"),
        passage__position=1, profile=probe.profile, dimension=probe.dimension)
    if exclude is not None:
        rows = rows.exclude(note_id=exclude)
    nearest = (rows.annotate(distance=distance).order_by("distance")
               .values_list("note_id", "distance")[:limit + NEAREST_SLACK])
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.ef_search = 100")
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
    return [(note_id, float(d)) for note_id, d in nearest if d <= max_distance][:limit]


def _merged(exact: list[uuid.UUID], near: list[tuple[uuid.UUID, float]],
            limit: int) -> list[uuid.UUID]:
    """Exact duplicates first, then near ones by distance; each note once."""
    out: list[uuid.UUID] = []
    for note_id in [*exact, *(note_id for note_id, _ in near)]:
        if note_id not in out:
            out.append(note_id)
    return out[:limit]


def similar_notes(
    *,
    actor: Actor,
    note_id: uuid.UUID | str,
    limit: int = SIMILAR_DEFAULT_LIMIT,
    max_distance: float = DUPLICATE_MAX_DISTANCE,
) -> list[uuid.UUID]:
    """Ids of likely duplicates of a note the caller may read: live notes of the same
    place (its notebook, or Personal), same content up to case and whitespace first, then
    those whose current vector lies within `max_distance` of the note's, nearest first;
    at most `limit` (1–20). A note whose current content has no vector yet is compared
    by content only. NotFound for a note the caller cannot read. Read-only."""
    limit = _clean_limit(limit)
    max_distance = _clean_distance(max_distance)
    note_uuid = parse_uuid(note_id, what="note id")
    configured = configured_profile()
    with tenant(actor):
        note = access_note(actor, note_uuid, need=READ)
        exact = _exact(actor, note.notebook_id, note.content_key, note.id, limit)
        near: list[tuple[uuid.UUID, float]] = []
        if configured is not None:
            stored = (PassageVector.objects
                      .filter(note_id=note.id, passage__position=1, profile=configured[0])
                      .values_list("embedding", flat=True).first())
            if stored is not None:
                probe = Probe(profile=configured[0], dimension=int(configured[1]),
                              vector=[float(x) for x in stored])
                near = _nearest(actor, note.notebook_id, probe, note.id, limit, max_distance)
        return _merged(exact, near, limit)


def similar_to_text(
    *,
    actor: Actor,
    notebook_id: uuid.UUID | None,
    content: str,
    probe: Probe | None,
    exclude: uuid.UUID | None = None,
    limit: int = SIMILAR_DEFAULT_LIMIT,
    max_distance: float = DUPLICATE_MAX_DISTANCE,
) -> list[uuid.UUID]:
    """Likely duplicates of a text for the place `notebook_id` (None = Personal): as
    `similar_notes`, with the text's `probe` (`probe_of`, made before the transaction;
    None: content only) standing in for a stored vector. For `remember`, whose note has
    no vector yet. A caller without `memory:read` learns of no other note: []. Caller
    holds a tenant transaction."""
    if READ not in actor.capabilities:
        return []
    limit = _clean_limit(limit)
    max_distance = _clean_distance(max_distance)
    exact = _exact(actor, notebook_id, content_key_of(Value(content)), exclude, limit)
    near = [] if probe is None else _nearest(actor, notebook_id, probe, exclude, limit,
                                             max_distance)
    return _merged(exact, near, limit)


# -- groups of a notebook ----------------------------------------------------------------


Pair = tuple[int, int]


@dataclass
class _Scanned:
    id: uuid.UUID
    version: int
    key: str
    vector: object  # the current vector, or None


def duplicate_groups(
    *,
    actor: Actor,
    notebook_id: uuid.UUID | str | None,
    max_groups: int = DUPLICATE_GROUPS_MAX,
    max_group_size: int = DUPLICATE_GROUP_MAX,
    max_scanned: int = DUPLICATE_SCAN_MAX,
    max_distance: float = DUPLICATE_MAX_DISTANCE,
) -> DuplicateGroupsOut:
    """Groups of likely duplicates among the live notes of one place (a notebook the
    caller may read, or Personal when `notebook_id` is None): for a tidy-up.

    The `max_scanned` most recently updated live notes are read in one query, each with
    its current vector of the active profile, and compared pairwise in memory; links are
    pairs within `max_distance` or with the same content up to case and whitespace.
    Groups are grown from the closest links first, and a link that would make a group
    larger than `max_group_size` is skipped (so loose chains do not fuse a notebook into
    one group). At most `max_groups` groups, tightest (closest link) first. Each group
    names its notes with their versions (what a merge proposal fences on) and the links
    that joined it. NotFound for a notebook the caller cannot read, Forbidden for
    Personal outside the grant. Read-only."""
    for name, value, top in (("maxGroups", max_groups, DUPLICATE_GROUPS_MAX),
                             ("maxGroupSize", max_group_size, DUPLICATE_GROUP_MAX),
                             ("maxScanned", max_scanned, DUPLICATE_SCAN_MAX)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
            raise Invalid(f"{name} must be a whole number from 1 to {top}.",
                          code="invalid_limit")
    if max_group_size < 2:
        raise Invalid("maxGroupSize must be at least 2.", code="invalid_limit")
    max_distance = _clean_distance(max_distance)
    configured = configured_profile()
    with tenant(actor):
        notes = resolve_scope(actor, notebook_id).notes()
        if configured is not None:
            current = PassageVector.objects.filter(
                note_id=OuterRef("id"), passage__position=1,
                profile=configured[0]).values("embedding")[:1]
            notes = notes.annotate(vector=Subquery(current, output_field=VectorField()))
        else:
            notes = notes.annotate(vector=Value(None, output_field=VectorField()))
        rows = list(notes.order_by("-updated_at", "id")
                    .values_list("id", "version", "content_key", "vector")[:max_scanned + 1])
    truncated = len(rows) > max_scanned
    scanned = [_Scanned(*row) for row in rows[:max_scanned]]
    links = _links(scanned, max_distance)
    groups = _grouped(scanned, links, max_group_size)[:max_groups]
    return DuplicateGroupsOut(
        groups=groups, scanned=len(scanned), truncated=truncated,
        unindexed=sum(1 for s in scanned if s.vector is None), max_distance=max_distance)


def _links(scanned: list[_Scanned], max_distance: float) -> list[DuplicateLink]:
    """Every pair within `max_distance` or with one content key, closest first."""
    found: dict[tuple[int, int], float | None] = {}
    with_vector = [i for i, s in enumerate(scanned) if s.vector is not None]
    if len(with_vector) > 1:
        matrix = np.asarray([np.asarray(scanned[i].vector, dtype=np.float32)
                             for i in with_vector])
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        distances = 1.0 - matrix @ matrix.T
        rows, cols = np.nonzero(np.triu(distances <= max_distance, k=1))
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            found[(with_vector[r], with_vector[c])] = max(float(distances[r, c]), 0.0)
    # Same content: each note linked to the next with its key (enough to join them all,
    # and linear however many copies there are).
    by_key: dict[str, list[int]] = {}
    for i, s in enumerate(scanned):
        by_key.setdefault(s.key, []).append(i)
    exact: set[tuple[int, int]] = set()
    for same in by_key.values():
        for i, j in zip(same, same[1:], strict=False):
            exact.add((i, j))
            if (i, j) not in found:
                a, b = scanned[i].vector, scanned[j].vector
                found[(i, j)] = (None if a is None or b is None
                                 else max(1.0 - _cosine(a, b), 0.0))

    def closeness(item: tuple[tuple[int, int], float | None]) -> tuple[bool, float, Pair]:
        pair, distance = item
        return pair not in exact, 0.0 if distance is None else distance, pair

    ordered = sorted(found.items(), key=closeness)
    return [DuplicateLink(a=scanned[i].id, b=scanned[j].id,
                          distance=None if d is None else round(d, 6), exact=(i, j) in exact)
            for (i, j), d in ordered]


def _cosine(a: object, b: object) -> float:
    x, y = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return float(x @ y / max(float(np.linalg.norm(x) * np.linalg.norm(y)), 1e-12))


def _grouped(scanned: list[_Scanned], links: list[DuplicateLink],
             max_group_size: int) -> list[DuplicateGroup]:
    """Connected components over the links taken closest first (exact ones before any),
    skipping a link that would join two groups into one larger than `max_group_size`."""
    order = {s.id: i for i, s in enumerate(scanned)}  # most recently updated first
    parent = list(range(len(scanned)))
    members: dict[int, list[int]] = {i: [i] for i in range(len(scanned))}
    joined: dict[int, list[DuplicateLink]] = {}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for link in links:
        a, b = root(order[link.a]), root(order[link.b])
        if a == b or len(members[a]) + len(members[b]) > max_group_size:
            continue
        parent[b] = a
        members[a] += members.pop(b)
        joined[a] = [*joined.pop(a, []), *joined.pop(b, []), link]
    groups = []
    for top, linked in joined.items():
        notes = [DuplicateMember(id=scanned[i].id, version=scanned[i].version)
                 for i in sorted(members[top])]
        groups.append(DuplicateGroup(notes=notes, links=linked))
    # Tightest first: the closest link (links are already closest first), then bigger.
    rank = {id(link): n for n, link in enumerate(links)}
    groups.sort(key=lambda g: (min(rank[id(link)] for link in g.links), -len(g.notes)))
    return groups
