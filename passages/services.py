"""Writes of passages: a note's rows kept in step with its content, and their vectors
(docs/architecture.md, "Documents and passages"). Callers hold the note's tenant
transaction; nothing here checks a grant — the note services did."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from passages.models import Passage
from passages.rules import pieces


@dataclass(frozen=True)
class Synced:
    kept: int  # rows whose text is unchanged (their vectors kept)
    added: int  # rows with new text: they need a vector
    removed: int


def passages_sync(*, account_id: uuid.UUID, note_id: uuid.UUID, kind: str,
                  content: str) -> Synced:
    """Make the note's passages those of `content`: rows whose passage is unchanged
    (same hash) stay — with their vectors — and move to their new place; the others are
    deleted and the new passages inserted. Positions are unique per note only at commit
    (a deferred constraint), so rows can trade places."""
    wanted = pieces(kind, content)
    stored: dict[str, list[tuple[int, int, int, int]]] = defaultdict(list)
    for row in (Passage.objects.filter(note_id=note_id)
                .values_list("hash", "id", "position", "start", "end")
                .order_by("position")):
        stored[row[0]].append(row[1:])
    moves: list[tuple[int, int, int, int]] = []  # (id, position, start, end)
    new = []
    kept = 0
    for piece in wanted:
        same = stored.get(piece.hash)
        if same:
            row_id, position, start, end = same.pop(0)
            kept += 1
            if (position, start, end) != (piece.position, piece.start, piece.end):
                moves.append((row_id, piece.position, piece.start, piece.end))
        else:
            new.append(Passage(account_id=account_id, note_id=note_id, position=piece.position,
                               start=piece.start, end=piece.end, headings=list(piece.headings),
                               trail=piece.trail, text=piece.text, hash=piece.hash))
    gone = [row[0] for rows in stored.values() for row in rows]
    with connection.cursor() as cursor:
        if gone:
            cursor.execute("DELETE FROM passages_passage WHERE id = ANY(%s)", [gone])
        if moves:
            ids, positions, starts, ends = (list(column) for column in zip(*moves, strict=True))
            cursor.execute(
                'UPDATE passages_passage AS p SET position = m.position, start = m.start, '
                '"end" = m.stop FROM unnest(%s::bigint[], %s::int[], %s::int[], %s::int[]) '
                "AS m(id, position, start, stop) WHERE p.id = m.id",
                [ids, positions, starts, ends])
    if new:
        Passage.objects.bulk_create(new)
    return Synced(kept=kept, added=len(new), removed=len(gone))


def passages_add(notes: Sequence[tuple[uuid.UUID, uuid.UUID, str, str]]) -> int:
    """The passages of new notes — (account id, note id, kind, content) each, none cut
    before — in one INSERT (a batch save, an import). Returns how many."""
    rows = [Passage(account_id=account_id, note_id=note_id, position=piece.position,
                    start=piece.start, end=piece.end, headings=list(piece.headings),
                    trail=piece.trail, text=piece.text, hash=piece.hash)
            for account_id, note_id, kind, content in notes
            for piece in pieces(kind, content)]
    Passage.objects.bulk_create(rows)
    return len(rows)


def vectors_store(*, account_id: uuid.UUID, profile: str, dimension: int,
                  vectors: Sequence[tuple[int, uuid.UUID, list[float]]],
                  now: datetime) -> int:
    """Store (passage id, note id, vector) for `profile`, for the passages that still
    exist (an edit may have removed one since it was read); returns how many."""
    if not vectors:
        return 0
    rows: list[Any] = []
    for passage_id, note_id, vector in vectors:
        rows += [account_id, passage_id, note_id, profile, dimension,
                 "[" + ",".join(f"{x:.7g}" for x in vector) + "]", now]
    values = ", ".join(["(%s, %s, %s, %s, %s, %s::vector, %s)"] * len(vectors))
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO passages_passagevector (account_id, passage_id, note_id, profile, "  # noqa: S608 - placeholders only
            f"dimension, embedding, created_at) SELECT v.* FROM (VALUES {values}) "
            "AS v(account_id, passage_id, note_id, profile, dimension, embedding, created_at) "
            "WHERE EXISTS (SELECT 1 FROM passages_passage p WHERE p.id = v.passage_id) "
            "ON CONFLICT (passage_id, profile) DO UPDATE SET dimension = EXCLUDED.dimension, "
            "embedding = EXCLUDED.embedding, created_at = EXCLUDED.created_at",
            rows)
        return cursor.rowcount


def vectors_drop_other_profiles(profile: str) -> None:
    """After `grove reindex` finishes: every vector not of `profile` goes (caller holds
    the account's tenant transaction)."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM passages_passagevector WHERE profile <> %s", [profile])
