"""Where recall's time goes, statement by statement, on one kept corpus.

Loads `--size` notes once into /tmp/grove-bench-<name> (bench/latency.py's bulk load:
SciFact documents with variations, real base embeddings plus noise) and keeps it, so a
change to recall can be measured again in a minute instead of a reload. Then, with the
query vector cached (as latency.py's target path), per query:

* the service call, timed without instrumentation (p50/p95/p99);
* the SQL floor: the two arms, each as the statement it would be alone
  (`bench.latency.arm_statements`), replayed over a plain connection;
* one instrumented pass: every statement recall sent, its time as Django saw it,
  grouped by what it is, and what is left to Python.

    .venv/bin/python bench/recall_profile.py [--size 100000] [--queries 200] [--reload]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, percentile, summary_ms, table, truncate_words  # noqa: E402
from bench.latency import (  # noqa: E402
    CachedEmbedder,
    arm_statements,
    bulk_load,
    doc_vectors,
    measure,
    rebuild_hnsw,
    recall_call,
    replay,
)
from bench.scifact import load  # noqa: E402

KINDS = [
    ("tenant", re.compile(r"grove\.account_id|set_config|SET LOCAL (?!hnsw)")),
    ("both arms, fusion and rows (one statement)",
     re.compile(r"grove_lexical_matches\(|<=>|SET LOCAL hnsw")),
    ("term statistics", re.compile(r"notebooks_termstat|tsvector_to_array")),
    ("transaction", re.compile(r"^(BEGIN|COMMIT|SAVEPOINT|RELEASE)")),
]


def kind_of(sql: str) -> str:
    for name, pattern in KINDS:
        if pattern.search(sql):
            return name
    return "other: " + re.sub(r"\s+", " ", sql)[:70]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--name", default="recall-profile")
    parser.add_argument("--reload", action="store_true", help="wipe the kept corpus first")
    args = parser.parse_args()

    if args.reload:
        shutil.rmtree(f"/tmp/grove-bench-{args.name}", ignore_errors=True)  # noqa: S108
    data = load("test")
    doc_ids = list(data.corpus)
    docs = [data.corpus[d] for d in doc_ids]
    queries = list(data.queries.values())[: args.queries]

    env, loaded = Env.kept(args.name)
    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    import notebooks.selectors.recall as r
    from grove.embeddings import configured_profile, get_embedder

    real = get_embedder()
    if not loaded:
        started = time.perf_counter()
        profile = configured_profile()[0]
        vectors = doc_vectors(real, doc_ids, [truncate_words(d, 6000) for d in docs])
        rebuild_hnsw(env, drop_only=True)
        bulk_load(env, 0, args.size, doc_ids, docs, vectors, profile)
        rebuild_hnsw(env)
        env.refresh_stats()
        env.mark_loaded()
        print(f"loaded {args.size} notes in {time.perf_counter() - started:.0f} s", flush=True)
    qvecs = dict(zip(queries, real.embed(queries), strict=True))
    cached = CachedEmbedder(real, qvecs)
    r.get_embedder = lambda: cached

    # Warm-up and capture.
    captured: dict[str, list[dict[str, Any]]] = {}
    for q in queries:
        with CaptureQueriesContext(connection) as ctx:
            recall_call(env, q, 8, 6000)
        captured[q] = list(ctx.captured_queries)
    service = measure(lambda q: recall_call(env, q, 8, 6000), queries, 1, warmup=False)

    import psycopg

    db = settings.DATABASES["default"]
    conn = psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"], dbname=db["NAME"])
    separate = {q: arm_statements(env, q, cached) for q in queries}
    arms = {q: v["lexical"] + v["semantic"] for q, v in separate.items()}
    floor = measure(lambda q: replay(conn, env.account_id, arms[q]), queries, 1)
    conn.close()

    # One instrumented pass: statement times as Django measured them.
    per_kind: dict[str, list[float]] = defaultdict(list)
    python: list[float] = []
    statements: list[int] = []
    for q in queries:
        with CaptureQueriesContext(connection) as ctx:
            started = time.perf_counter()
            recall_call(env, q, 8, 6000)
            total = time.perf_counter() - started
        sums: dict[str, float] = defaultdict(float)
        for c in ctx.captured_queries:
            sums[kind_of(c["sql"])] += float(c["time"])
        for name in {kind_of(c["sql"]) for v in captured.values() for c in v}:
            per_kind[name].append(sums.get(name, 0.0) * 1000)
        python.append((total - sum(sums.values())) * 1000)
        statements.append(len(ctx.captured_queries))

    rows = [["service, cached vector", *summary_ms(service).values()][:4],
            ["SQL floor, two arms", *summary_ms(floor).values()][:4]]
    print(table(["path", "n", "p50 ms", "p95 ms"], rows))
    print(f"\nstatements per recall: median {statistics.median(statements)}, "
          f"max {max(statements)}")
    rows = [[name, round(statistics.median(v), 2), round(percentile(v, 95), 2),
             round(statistics.fmean(v), 2)]
            for name, v in sorted(per_kind.items(), key=lambda kv: -statistics.fmean(kv[1]))]
    rows.append(["python (total − statements)", round(statistics.median(python), 2),
                 round(percentile(python, 95), 2), round(statistics.fmean(python), 2)])
    print(table(["instrumented pass: statement kind", "p50 ms", "p95 ms", "mean ms"], rows))
    env.close()


if __name__ == "__main__":
    main()
