"""As-of reads (issue 39 item 6): what an `asOf` recall, list and read cost next to the
live ones, and whether recall as of a time answers with what was believed then.

A seeded library of `--notes` short facts (every note embedded by the local model, the
worker's own batches run in-process) in which `--changed` facts, "The <name> service
listens on port <p>.", are corrected after an instant T to another port (a second
revision each). Then, in one run, ABAB:

* recall "which port does the <name> service listen on" live and `asOf` T — whether the
  top item is the fact with the port believed then (as of T) and now (live);
* `note_search` (the list) live and as of T, `note_read` of a corrected note as of T;

at the first size, then again after the library grows to `--grow` notes. Reported:
medians and p95 in milliseconds, the as-of ÷ live ratio, and the share answered right.

    .venv/bin/python bench/as_of.py [--notes 2000] [--grow 10000] [--changed 50]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, table, write_result  # noqa: E402

WORDS = ("garden kitchen river ledger budget invoice tomato harbour meeting roadmap pricing "
         "printer laptop vendor contract backup deploy release hiring travel recipe "
         "library concert dentist insurance mortgage ticket parcel bicycle").split()


def filler(rng: random.Random, count: int) -> list[str]:
    return [f"Note {i}: the {rng.choice(WORDS)} plan mentions {rng.choice(WORDS)} and "
            f"{rng.choice(WORDS)} for week {rng.randint(1, 52)}." for i in range(count)]


def name_of(i: int) -> str:
    return f"svc{i:03d}x"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def add_notes(env: Env, texts: list[str]) -> None:
    from grove.kernel import jobs
    from grove.kernel.tenancy import tenant
    from notebooks.services.notes_many import NewNote, notes_create_many

    with tenant(env.actor):
        for start in range(0, len(texts), 500):
            notes_create_many(actor=env.actor, notebook_id=None, kind="fact",
                              items=[NewNote(content=t, tags=[])
                                     for t in texts[start:start + 500]])
    while jobs.run_batch(account_id=env.account_id, kind="embed"):
        pass
    # Statistics as autovacuum leaves them a minute after a load (the planner picks the
    # (note, version) index for as-of reads only when it knows the table's size).
    from django.db import connections

    with connections["owner"].cursor() as cursor:
        cursor.execute("ANALYZE")


def measure(env: Env, changed: list[tuple[uuid.UUID, str, int, int]], at: str,
            rounds: int) -> dict[str, Any]:
    from notebooks.selectors.note_reads import note_read
    from notebooks.selectors.recall import recall
    from notebooks.selectors.search import note_search

    times: dict[str, list[float]] = {k: [] for k in (
        "recall", "recall_as_of", "list", "list_as_of", "get", "get_as_of")}
    right = {"now": 0, "then": 0}
    for round_ in range(rounds):
        for note_id, name, old, new in changed:
            query = f"which port does the {name} service listen on"
            for label, as_of in (("recall", None), ("recall_as_of", at)):
                t0 = time.perf_counter()
                got = recall(actor=env.actor, query=query, as_of=as_of)
                times[label].append((time.perf_counter() - t0) * 1000)
                if round_ == 0 and got.data:
                    want = str(old if as_of else new)
                    top = got.data[0].note
                    if top.id == note_id and f"port {want}." in top.content:
                        right["then" if as_of else "now"] += 1
            for label, as_of in (("list", None), ("list_as_of", at)):
                t0 = time.perf_counter()
                note_search(actor=env.actor, limit=20, as_of=as_of)
                times[label].append((time.perf_counter() - t0) * 1000)
            for label, as_of in (("get", None), ("get_as_of", at)):
                t0 = time.perf_counter()
                note_read(actor=env.actor, note_id=note_id, as_of=as_of)
                times[label].append((time.perf_counter() - t0) * 1000)
    out: dict[str, Any] = {name: {"median_ms": round(statistics.median(v), 2),
                                  "p95_ms": round(percentile(v, 0.95), 2)}
                           for name, v in times.items()}
    for name in ("recall", "list", "get"):
        out[name + "_as_of"]["ratio_median"] = round(
            out[name + "_as_of"]["median_ms"] / out[name]["median_ms"], 2)
    out["right_top1"] = {k: f"{v}/{len(changed)}" for k, v in right.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--grow", type=int, default=10000)
    parser.add_argument("--changed", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default="as_of")
    args = parser.parse_args()
    started = time.perf_counter()
    env = Env.fresh("as-of")
    from django.utils import timezone

    from grove.kernel.tenancy import tenant
    from notebooks.models import Note
    from notebooks.services.notes import note_update

    rng = random.Random(39)  # noqa: S311 - a seeded corpus, not a secret
    ports = [(rng.randint(2000, 4999), rng.randint(5000, 9999)) for _ in range(args.changed)]
    add_notes(env, [f"The {name_of(i)} service listens on port {old}."
                    for i, (old, _new) in enumerate(ports)]
              + filler(rng, args.notes - args.changed))
    with tenant(env.actor):
        ids = {n.content.split()[1]: n.id for n in
               Note.objects.filter(content__contains=" service listens on port ")}
    time.sleep(0.01)
    at = timezone.now().isoformat()
    time.sleep(0.01)
    changed = []
    for i, (old, new) in enumerate(ports):
        note_id = ids[name_of(i)]
        note_update(actor=env.actor, operation_id=uuid.uuid4(), note_id=note_id,
                    content=f"The {name_of(i)} service listens on port {new}.",
                    expected_version=1)
        changed.append((note_id, name_of(i), old, new))
    add_notes(env, [])  # embeds the corrected texts
    results: dict[str, Any] = {"changed": args.changed, "sizes": {}}
    results["sizes"][args.notes] = measure(env, changed, at, args.rounds)
    print(args.notes, results["sizes"][args.notes], flush=True)
    if args.grow > args.notes:
        add_notes(env, filler(rng, args.grow - args.notes))
        results["sizes"][args.grow] = measure(env, changed, at, args.rounds)
        print(args.grow, results["sizes"][args.grow], flush=True)
    results["seconds"] = round(time.perf_counter() - started, 1)
    path = write_result(args.out, results, env)
    rows = [[size, name, r[name]["median_ms"], r[name]["p95_ms"],
             r[name].get("ratio_median", "")]
            for size, r in results["sizes"].items()
            for name in ("recall", "recall_as_of", "list", "list_as_of", "get", "get_as_of")]
    print(table(["notes", "read", "median ms", "p95 ms", "as-of ÷ live"], rows))
    print(path)
    env.close()


if __name__ == "__main__":
    main()
