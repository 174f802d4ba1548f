"""Term statistics: per account, how many passages of active notes contain each lexeme
(recall's lexical arm weighs query terms by rarity with them; a memory record is one
passage).

The writes keep them current: triggers on `passages_passage` and `notebooks_note`
append each statement's changes to `TermDelta` (migrations notebooks 0011 and passages
0002 say how and why), so a note counts from the moment its save commits. The count of
a lexeme is its `TermStat` row plus its `TermDelta` rows:

* `term_counts` (`notebooks.selectors.recall`) reads both in one statement (one
  snapshot);
* `term_stats_compact` (periodic, cheap when nothing changed) folds the deltas into
  `TermStat`, so reads stay a handful of index probes;
* `term_stats_refresh` recounts from the passages themselves — the repair tool
  (`grove term_stats --recount`), and the reference the tests hold the triggers to.

Compaction and recount of one account take the same transaction-level advisory lock,
so they never interleave; writers take no lock at all (they only append).
"""

from __future__ import annotations

import uuid

from django.db import connection

from grove.kernel.actor import WRITE, Actor
from grove.kernel.tenancy import tenant
from notebooks.rules import LENGTH_LEXEME
from notebooks.services.frame import transaction_lock

# Folded per compaction at most (a backlog of deltas is folded over several runs, each
# a short transaction).
COMPACT_BATCH = 200_000


def _lock(account_id: uuid.UUID) -> None:
    """Serialise compaction and recount of one account (until the transaction ends)."""
    transaction_lock(f"grove.term_stats:{account_id}")


def term_stats_compact(*, actor: Actor) -> int:
    """Fold the account's pending `TermDelta` rows into `TermStat` (periodic). Returns
    how many delta rows were folded (0: nothing to do, one indexed probe).

    One statement moves the deltas (DELETE … RETURNING) and adds their sums to the
    counters, so every delta is counted exactly once whatever commits meanwhile:
    deltas appended after the statement's snapshot stay for the next run. Counters
    that reach zero (lexemes of notes gone from the account) are removed."""
    with tenant(actor):
        actor.require(WRITE)
        with connection.cursor() as cursor:
            cursor.execute("SELECT EXISTS (SELECT 1 FROM notebooks_termdelta)")
            if not cursor.fetchone()[0]:
                return 0
        _lock(actor.account_id)
        with connection.cursor() as cursor:
            cursor.execute(
                "WITH batch AS ("
                "  SELECT id FROM notebooks_termdelta ORDER BY id LIMIT %s),"
                " moved AS ("
                "  DELETE FROM notebooks_termdelta d USING batch WHERE d.id = batch.id"
                "  RETURNING d.lexeme, d.ndoc),"
                " summed AS ("
                "  SELECT lexeme, sum(ndoc) AS ndoc, count(*) AS rows FROM moved"
                "  GROUP BY lexeme),"
                # Counters that exist get the (possibly negative) sum; GREATEST: a count
                # cannot go below zero, even if notes were changed behind the triggers'
                # back (a recount repairs that). Only compaction and recount write
                # counters, under the lock, so nothing else inserts one meanwhile.
                " updated AS ("
                "  UPDATE notebooks_termstat t SET ndoc = GREATEST(t.ndoc + s.ndoc, 0)"
                "  FROM summed s WHERE t.lexeme = s.lexeme AND s.ndoc <> 0"
                "  RETURNING t.lexeme, t.ndoc),"
                " inserted AS ("
                "  INSERT INTO notebooks_termstat (account_id, lexeme, ndoc)"
                "  SELECT %s, s.lexeme, s.ndoc FROM summed s WHERE s.ndoc > 0"
                "  AND NOT EXISTS (SELECT 1 FROM notebooks_termstat t WHERE t.lexeme = s.lexeme)"
                "  RETURNING 1)"
                " SELECT (SELECT coalesce(sum(rows), 0) FROM summed),"
                "        ARRAY(SELECT lexeme FROM updated WHERE ndoc = 0),"
                "        (SELECT count(*) FROM inserted)",
                [COMPACT_BATCH, actor.account_id],
            )
            folded, emptied, _ = cursor.fetchone()
            if emptied:
                cursor.execute(
                    "DELETE FROM notebooks_termstat WHERE lexeme = ANY(%s) AND ndoc = 0",
                    [emptied])
        return int(folded)


def term_stats_refresh(*, actor: Actor) -> int:
    """Recount the account's term statistics from the passages of its active notes,
    replacing counters and pending deltas (repair; the triggers keep them current
    otherwise). Returns the number of those passages.

    One statement: the count and the deltas it replaces come from one snapshot, so a
    save committing meanwhile is either counted (and its deltas removed) or not (and its
    deltas kept) — never both. Concurrent saves are not blocked."""
    with tenant(actor):
        actor.require(WRITE)
        _lock(actor.account_id)
        with connection.cursor() as cursor:
            # Under row-level security every table here holds only this account's rows.
            cursor.execute(
                "WITH fresh AS ("
                "  SELECT l.lexeme, count(*) AS ndoc FROM passages_passage p"
                "  JOIN notebooks_note n ON n.id = p.note_id AND n.status = 'active'"
                "  CROSS JOIN LATERAL"
                "   unnest(array_append(tsvector_to_array(p.search), '')) AS l(lexeme)"
                "  GROUP BY l.lexeme"
                "  UNION ALL"  # the passages' distinct lexemes in all (BM25's length)
                "  SELECT %s, sum(length(p.search)) FROM passages_passage p"
                "  JOIN notebooks_note n ON n.id = p.note_id AND n.status = 'active'"
                "  HAVING sum(length(p.search)) > 0),"
                " dropped_deltas AS (DELETE FROM notebooks_termdelta RETURNING 1),"
                " dropped_counts AS ("
                "  DELETE FROM notebooks_termstat t"
                "  WHERE NOT EXISTS (SELECT 1 FROM fresh f WHERE f.lexeme = t.lexeme)"
                "  RETURNING 1),"
                " written AS ("
                "  INSERT INTO notebooks_termstat AS t (account_id, lexeme, ndoc)"
                "  SELECT %s, lexeme, ndoc FROM fresh ORDER BY lexeme"
                "  ON CONFLICT (account_id, lexeme) DO UPDATE SET ndoc = EXCLUDED.ndoc"
                "  RETURNING 1)"
                " SELECT coalesce((SELECT ndoc FROM fresh WHERE lexeme = ''), 0),"
                "        (SELECT count(*) FROM written), (SELECT count(*) FROM dropped_deltas),"
                "        (SELECT count(*) FROM dropped_counts)",
                [LENGTH_LEXEME, actor.account_id],
            )
            return int(cursor.fetchone()[0])
