"""Reads of passages (docs/architecture.md, "Documents and passages"). Callers hold the
tenant transaction and have checked the reader may read the note."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable

from django.db import connection

from passages.rules import embedded_text


def missing_vectors(note_ids: Iterable[uuid.UUID], profile: str, *, limit: int
                    ) -> dict[uuid.UUID, list[tuple[int, str]]]:
    """Per note, up to `limit` passages in all (in note and position order) without a
    vector for `profile`: (passage id, the text the model reads)."""
    ids = list(note_ids)
    found: dict[uuid.UUID, list[tuple[int, str]]] = defaultdict(list)
    if not ids or limit < 1:
        return found
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.note_id, p.id, p.trail, p.text FROM passages_passage p "
            "WHERE p.note_id = ANY(%s) AND NOT EXISTS (SELECT 1 FROM passages_passagevector v "
            "WHERE v.passage_id = p.id AND v.profile = %s) "
            "ORDER BY p.note_id, p.position LIMIT %s", [ids, profile, limit])
        for note_id, passage_id, trail, text in cursor.fetchall():
            found[note_id].append((passage_id, embedded_text(trail, text)))
    return found


def notes_missing_vectors(note_ids: Iterable[uuid.UUID], profile: str) -> set[uuid.UUID]:
    """Which of the notes still have a passage without a vector for `profile`."""
    ids = list(note_ids)
    if not ids:
        return set()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT p.note_id FROM passages_passage p WHERE p.note_id = ANY(%s) "
            "AND NOT EXISTS (SELECT 1 FROM passages_passagevector v "
            "WHERE v.passage_id = p.id AND v.profile = %s)", [ids, profile])
        return {row[0] for row in cursor.fetchall()}
