"""Why term statistics are appended as deltas rather than counted in place (notebooks
0011): concurrent writers of one account under both designs.

The shipped triggers append each statement's changes to `notebooks_termdelta`. The
alternative keeps the counters themselves current: the same triggers, but upserting
`notebooks_termstat` (`ON CONFLICT DO UPDATE`, rows in sorted lexeme order). Both are
run here against the same library (1,000 SciFact notes), by W threads writing to one
account at once, each round: save a note, correct the content of one of its notes
(`note_update`), then archive three of its own notes and restore two (batches lock
and save their notes one after the other, as `note_archive` does). Reported per
design: latency of each operation, deadlocks and other errors, and whether the
statistics still equal a recount. The alternative is installed in this
scratch database only (the schema owner swaps the trigger functions and drops the
non-negative check on counters, which negative in-place changes would break).

    .venv/bin/python bench/term_stats_design.py [--writers 6] [--rounds 40]
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, summary_ms, table, truncate_words, write_result  # noqa: E402
from bench.scifact import load  # noqa: E402

IN_PLACE = """
CREATE OR REPLACE FUNCTION grove_term_stats_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.notebooks_termstat AS t (account_id, lexeme, ndoc)
    SELECT n.account_id, l.lexeme, count(*)
    FROM grove_new_notes n
    CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(n.search), '')) AS l(lexeme)
    WHERE n.status = 'active'
    GROUP BY n.account_id, l.lexeme
    ORDER BY n.account_id, l.lexeme
    ON CONFLICT (account_id, lexeme) DO UPDATE SET ndoc = t.ndoc + EXCLUDED.ndoc;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION grove_term_stats_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.notebooks_termstat AS t (account_id, lexeme, ndoc)
    SELECT account_id, lexeme, sum(change) FROM (
        SELECT o.account_id, l.lexeme, -1 AS change
        FROM grove_old_notes o JOIN grove_new_notes n ON n.id = o.id
        CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(o.search), '')) AS l(lexeme)
        WHERE o.status = 'active' AND (n.status <> 'active' OR n.search <> o.search)
        UNION ALL
        SELECT n.account_id, l.lexeme, 1
        FROM grove_old_notes o JOIN grove_new_notes n ON n.id = o.id
        CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(n.search), '')) AS l(lexeme)
        WHERE n.status = 'active' AND (o.status <> 'active' OR n.search <> o.search)
    ) changes
    GROUP BY account_id, lexeme
    HAVING sum(change) <> 0
    ORDER BY account_id, lexeme
    ON CONFLICT (account_id, lexeme) DO UPDATE SET ndoc = t.ndoc + EXCLUDED.ndoc;
    RETURN NULL;
END $$;
"""


def shipped_functions(env: Env) -> list[str]:
    from django.db import connections

    with connections["owner"].cursor() as cursor:
        cursor.execute("SELECT pg_get_functiondef(p.oid) FROM pg_proc p "
                       "WHERE proname IN ('grove_term_stats_inserted', "
                       "'grove_term_stats_updated')")
        return [row[0] for row in cursor.fetchall()]


def positive_check(env: Env) -> str:
    from django.db import connections

    with connections["owner"].cursor() as cursor:
        cursor.execute("SELECT conname FROM pg_constraint WHERE conrelid = "
                       "'notebooks_termstat'::regclass AND contype = 'c'")
        return cursor.fetchone()[0]


def run_writers(env: Env, texts: list[str], writers: int, rounds: int) -> dict[str, Any]:
    from django.db import connections

    from notebooks import services

    timings: dict[str, list[float]] = {"save": [], "edit": [], "archive 3": [],
                                       "restore 2": []}
    errors: Counter[str] = Counter()
    lock = threading.Lock()
    barrier = threading.Barrier(writers)

    def writer(index: int) -> None:
        rng = random.Random(index)  # noqa: S311 - a reproducible workload, not a secret
        mine: list[uuid.UUID] = []
        try:
            barrier.wait(timeout=30)
            for round_ in range(rounds):
                steps: list[tuple[str, Any]] = [("save", None)]
                if len(mine) >= 3:
                    steps += [("edit", rng.choice(mine)), ("archive 3", rng.sample(mine, 3))]
                    # Archived and not restored: no longer edited or batched.
                    mine.remove(steps[-1][1][2])
                for name, items in steps:
                    started = time.perf_counter()
                    try:
                        if name == "save":
                            text = texts[(index * rounds + round_) % len(texts)]
                            out = services.note_remember(actor=env.actor,
                                                         operation_id=uuid.uuid4(),
                                                         content=text, kind="fact")
                            mine.append(out.note.id)
                        elif name == "edit":
                            text = texts[rng.randrange(len(texts))]
                            services.note_update(actor=env.actor, operation_id=uuid.uuid4(),
                                                 note_id=items, content=text)
                        else:
                            services.note_archive(actor=env.actor, operation_id=uuid.uuid4(),
                                                  items=items)
                            elapsed = time.perf_counter() - started
                            with lock:
                                timings[name].append(elapsed)
                            name, started = "restore 2", time.perf_counter()
                            services.note_restore(actor=env.actor, operation_id=uuid.uuid4(),
                                                  items=items[:2])
                    except Exception as exc:  # noqa: BLE001 - counted and reported
                        with lock:
                            errors[type(exc).__name__ + (": deadlock" if "deadlock" in
                                                         str(exc) else "")] += 1
                        continue
                    elapsed = time.perf_counter() - started
                    with lock:
                        timings[name].append(elapsed)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    return {"seconds": round(wall, 1), "errors": dict(errors),
            **{name: summary_ms(values) for name, values in timings.items() if values}}


def statistics_match(env: Env) -> bool:
    from django.db import connection

    from grove.kernel.tenancy import tenant

    with tenant(env.actor), connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme, sum(ndoc) FROM (SELECT lexeme, ndoc FROM notebooks_termstat "
            "UNION ALL SELECT lexeme, ndoc FROM notebooks_termdelta) c "
            "GROUP BY lexeme HAVING sum(ndoc) <> 0")
        kept = dict(cursor.fetchall())
        cursor.execute("SELECT word, ndoc FROM ts_stat("
                       "'SELECT search FROM notebooks_note WHERE status = ''active''')")
        fresh = dict(cursor.fetchall())
        cursor.execute("SELECT count(*) FROM notebooks_note WHERE status = 'active'")
        fresh[""] = cursor.fetchone()[0]
    return {k: int(v) for k, v in kept.items()} == {k: int(v) for k, v in fresh.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writers", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--out", default="term_stats_design")
    args = parser.parse_args()
    started = time.perf_counter()
    corpus = load("test").corpus
    texts = [truncate_words(t, 6000) for t in corpus.values()]
    env = Env.fresh("termstats-design")
    from grove.kernel.actor import Actor
    from notebooks.services.remember import note_remember
    from notebooks.services.term_stats import term_stats_refresh

    for text in texts[:1000]:
        note_remember(actor=env.actor, operation_id=uuid.uuid4(), content=text, kind="fact")
    term_stats_refresh(actor=Actor.system(env.account_id))
    work = texts[1000:]
    results: dict[str, Any] = {"writers": args.writers, "rounds": args.rounds,
                               "library_notes": 1000}
    shipped = shipped_functions(env)
    check = positive_check(env)
    for design in ("appended deltas (shipped)", "counters in place", "appended deltas again"):
        if design == "counters in place":
            env.owner_sql(f"ALTER TABLE notebooks_termstat DROP CONSTRAINT {check}", IN_PLACE)
        res = run_writers(env, work, args.writers, args.rounds)
        res["statistics_equal_a_recount"] = statistics_match(env)
        if design == "counters in place":
            env.owner_sql(*shipped)
            term_stats_refresh(actor=Actor.system(env.account_id))
            env.owner_sql(f"ALTER TABLE notebooks_termstat ADD CONSTRAINT {check} "
                          "CHECK (ndoc >= 0)")
        results[design] = res
        print(design, res, flush=True)
    results["seconds"] = round(time.perf_counter() - started, 1)
    path = write_result(args.out, results, env)
    rows = []
    for design in ("appended deltas (shipped)", "counters in place", "appended deltas again"):
        r = results[design]
        rows.append([design, r["save"]["p50"], r["save"]["p95"],
                     r.get("edit", {}).get("p95", "-"), r.get("archive 3", {}).get("p95", "-"),
                     r.get("restore 2", {}).get("p95", "-"),
                     sum(r["errors"].values()), r["errors"] or "-",
                     r["statistics_equal_a_recount"], r["seconds"]])
    print(table(["design", "save p50 ms", "save p95 ms", "edit p95 ms", "archive-3 p95 ms",
                 "restore-2 p95 ms", "errors", "which", "equal to a recount", "seconds"],
                rows))
    print(f"\nwrote {path}")
    env.close()


if __name__ == "__main__":
    main()
