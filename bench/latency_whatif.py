"""What-if: how fast could recall be at 100k notes if both arms could use their index?

Not a measurement of Grove as shipped (that is bench/latency.py) — an experiment on a
scratch database to size two fixes, same data and queries as latency.py:

* semantic arm: recall filters `embedding.content_hash = note.content_hash` inside the
  nearest-neighbour query; the planner estimates that cross-table equality at one row
  and sorts every vector exactly instead of walking the HNSW index. The patched arm
  (bench-only monkeypatch of `notebooks.recall._semantic`) drops that condition from
  the SQL and checks the hash on the 50 rows it gets back.
* lexical arm: under row-level security PostgreSQL may not use an index for an operator
  whose function is not LEAKPROOF, and `tsvector @@ tsquery` (ts_match_vq) is not, so
  every term lookup is a sequential scan that de-TOASTs each note's tsvector. On this
  scratch database only, the superuser marks ts_match_vq LEAKPROOF (a security
  decision, not a recommendation) so the GIN index becomes usable — a stand-in for a
  leak-proof design such as a postings table searched with text equality.

    .venv/bin/python bench/latency_whatif.py [--size 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, summary_ms, table, truncate_words, write_result  # noqa: E402
from bench.latency import (  # noqa: E402
    CachedEmbedder,
    bulk_load,
    doc_vectors,
    measure,
    rebuild_hnsw,
    recall_call,
)
from bench.scifact import load  # noqa: E402


def semantic_hash_checked_after(embedder: Any, profile: str, query: str, scope: Any,
                                max_distance: float) -> list[tuple[uuid.UUID, float]]:
    """recall._semantic without the cross-table content_hash condition in SQL."""
    from django.db import connection
    from django.db.models.functions import Cast
    from pgvector.django import CosineDistance, VectorField

    import notebooks.recall as r
    from notebooks.models import NoteEmbedding

    vector = embedder.embed([query])[0].tolist()
    dim = int(embedder.dimension)
    distance = CosineDistance(Cast("embedding", VectorField(dimensions=dim)), vector)
    nearest = (
        NoteEmbedding.objects.filter(scope.q(prefix="note__"), profile=profile, dimension=dim)
        .annotate(distance=distance)
        .order_by("distance")
        .values_list("note_id", "distance", "content_hash", "note__content_hash")[:r.CANDIDATES]
    )
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.ef_search = 100")
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
    return [(note_id, float(d)) for note_id, d, mine, current in nearest
            if mine == current and d <= max_distance]


def superuser_sql(env: Env, statement: str) -> None:
    import psycopg

    from grove.embedded import PORT, SUPERUSER

    with psycopg.connect(host=str(env.server.socket_dir), port=PORT, user=SUPERUSER,
                         dbname="grove", autocommit=True) as conn:
        conn.execute(statement)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", default="latency_whatif")
    args = parser.parse_args()
    started = time.perf_counter()
    data = load("test")
    doc_ids = list(data.corpus)
    docs = [data.corpus[d] for d in doc_ids]
    queries = list(data.queries.values())[: args.queries]

    env = Env.fresh("whatif")
    import notebooks.recall as r
    from grove.embeddings import configured_profile, get_embedder

    real = get_embedder()
    profile = configured_profile()[0]
    vectors = doc_vectors(real, doc_ids, [truncate_words(d, 6000) for d in docs])
    cached = CachedEmbedder(real, dict(zip(queries, real.embed(queries), strict=True)))
    rebuild_hnsw(env, drop_only=True)
    load_info = bulk_load(env, 0, args.size, doc_ids, docs, vectors, profile)
    rebuild_hnsw(env)
    env.refresh_stats()
    print(args.size, load_info, flush=True)

    results: dict[str, Any] = {"notes": args.size, "queries": len(queries), "load": load_info,
                               "variants": {}}
    original_semantic = r._semantic  # noqa: SLF001
    r.get_embedder = lambda: cached

    def run(label: str) -> None:
        res = summary_ms(measure(lambda q: recall_call(env, q, 8, 6000), queries, 1))
        results["variants"][label] = res
        print(label, res, flush=True)

    run("as shipped")
    r._semantic = semantic_hash_checked_after  # noqa: SLF001
    run("semantic: hash checked after the HNSW scan")
    superuser_sql(env, "ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF")
    run("+ lexical: GIN usable under RLS (ts_match_vq LEAKPROOF)")
    r._semantic = original_semantic  # noqa: SLF001
    run("lexical fix alone")

    results["seconds"] = round(time.perf_counter() - started, 1)
    path = write_result(args.out, results, env)
    print()
    print(table(["variant (service, cached query vector)", "p50 ms", "p95 ms", "p99 ms"],
                [[k, v["p50"], v["p95"], v["p99"]] for k, v in results["variants"].items()]))
    print(f"\nwrote {path} in {results['seconds']} s")
    env.close()


if __name__ == "__main__":
    main()
