"""Live note counts per notebook and Personal, kept by the writes (migration 0022): the
triggers append each statement's changes to `NoteCount`, a place's count is the sum of
its rows (`notebooks.selectors.note_counts` reads them).

* `note_counts_compact` (periodic, one indexed probe when nothing changed) folds each
  place's rows into one, so reads stay a row per notebook;
* `note_counts_refresh` recounts from the notes themselves — the repair tool
  (`grove term_stats --recount`), and the reference the tests hold the triggers to.

Compaction and recount of one account take the same transaction-level advisory lock;
writers take none (they only append).
"""

from __future__ import annotations

import uuid

from django.db import connection

from grove.kernel.actor import WRITE, Actor
from grove.kernel.tenancy import tenant
from notebooks.services.frame import transaction_lock


def _lock(account_id: uuid.UUID) -> None:
    transaction_lock(f"grove.note_counts:{account_id}")


def note_counts_compact(*, actor: Actor) -> int:
    """Fold the account's count rows into one per place (periodic). Returns how many rows
    were folded (0: nothing to do).

    One statement deletes the rows it sees and inserts their sums, so each row is
    counted exactly once whatever commits meanwhile (rows appended after its snapshot
    stay for the next run), and a reader sees the counts before or after, never half.
    Places whose count is zero keep no row."""
    with tenant(actor):
        actor.require(WRITE)
        with connection.cursor() as cursor:
            # Under row-level security only this account's rows are here.
            cursor.execute("SELECT EXISTS (SELECT 1 FROM notebooks_notecount "
                           "GROUP BY notebook_id HAVING count(*) > 1 OR sum(notes) = 0)")
            if not cursor.fetchone()[0]:
                return 0
            _lock(actor.account_id)
            cursor.execute(
                "WITH moved AS (DELETE FROM notebooks_notecount RETURNING notebook_id, notes),"
                " folded AS ("
                "  INSERT INTO notebooks_notecount (account_id, notebook_id, notes)"
                "  SELECT %s, notebook_id, sum(notes) FROM moved GROUP BY notebook_id"
                "  HAVING sum(notes) <> 0 RETURNING 1)"
                " SELECT (SELECT count(*) FROM moved) - (SELECT count(*) FROM folded)",
                [actor.account_id])
            return int(cursor.fetchone()[0])


def note_counts_refresh(*, actor: Actor) -> int:
    """Recount the account's live note counts from its notes, replacing every row
    (repair; the triggers keep them current otherwise). Returns the number of active
    notes. One statement: the count and the rows it replaces come from one snapshot, so
    a save committing meanwhile is either counted (and its row removed) or not (and its
    row kept)."""
    with tenant(actor):
        actor.require(WRITE)
        _lock(actor.account_id)
        with connection.cursor() as cursor:
            cursor.execute(
                "WITH fresh AS ("
                "  SELECT notebook_id, count(*) AS notes FROM notebooks_note"
                "  WHERE status = 'active' GROUP BY notebook_id),"
                " dropped AS (DELETE FROM notebooks_notecount RETURNING 1),"
                " written AS ("
                "  INSERT INTO notebooks_notecount (account_id, notebook_id, notes)"
                "  SELECT %s, notebook_id, notes FROM fresh RETURNING 1)"
                " SELECT coalesce(sum(notes), 0), (SELECT count(*) FROM dropped),"
                "        (SELECT count(*) FROM written) FROM fresh",
                [actor.account_id])
            return int(cursor.fetchone()[0])
