"""What-if: how fast could recall be at 100k notes if the lexical arm could use its index?

(Historical: run on 66e9ce7, result in results/latency_whatif-66e9ce7-v1.json. Since
20e95c7 the lexical arm uses its GIN index through a security-definer function instead,
so on current code the LEAKPROOF patch below changes nothing.)

Not a measurement of Grove as shipped (that is bench/latency.py) — an experiment on a
scratch database to size a fix, with the same data and queries as latency.py.

Under row-level security PostgreSQL may not use an index for an operator whose function
is not LEAKPROOF (the policy's condition must run first), and `tsvector @@ tsquery`
(ts_match_vq) is not, so every per-term lookup of recall's lexical arm is a sequential
scan that de-TOASTs each note's tsvector. On this scratch database only, the superuser
marks ts_match_vq LEAKPROOF (a security decision, not a recommendation) so the GIN index
becomes usable — a stand-in for a leak-proof design such as a postings table searched
with text equality (texteq is leakproof). Then smaller candidate sets on top of that
(COMMON_TERM_SHARE, MAX_TERMS patched; their quality cost is measured on train by
`bench/quality.py --tune`).

(An earlier version also patched the semantic arm to check the content hash after the
HNSW scan; Grove ships that since 66e9ce7, so "as shipped" includes it.)

    .venv/bin/python bench/latency_whatif.py [--size 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import sys
import time
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


def superuser_sql(env: Env, statement: str) -> None:
    import psycopg

    from grove.runtime.embedded import PORT, SUPERUSER

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
    import notebooks.selectors.recall as r
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
    r.get_embedder = lambda: cached

    def run(label: str, **constants: Any) -> None:
        saved = {k: getattr(r, k) for k in constants}
        for k, v in constants.items():
            setattr(r, k, v)
        try:
            res = summary_ms(measure(lambda q: recall_call(env, q, 8, 6000), queries, 1))
        finally:
            for k, v in saved.items():
                setattr(r, k, v)
        results["variants"][label] = res
        print(label, res, flush=True)

    run("as shipped")
    superuser_sql(env, "ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF")
    run("lexical: GIN usable under RLS (ts_match_vq LEAKPROOF)")
    run("  + COMMON_TERM_SHARE=0.05", COMMON_TERM_SHARE=0.05)
    run("  + COMMON_TERM_SHARE=0.05, MAX_TERMS=6", COMMON_TERM_SHARE=0.05, MAX_TERMS=6)

    results["seconds"] = round(time.perf_counter() - started, 1)
    path = write_result(args.out, results, env)
    print()
    print(table(["variant (service, cached query vector)", "p50 ms", "p95 ms", "p99 ms"],
                [[k, v["p50"], v["p95"], v["p99"]] for k, v in results["variants"].items()]))
    print(f"\nwrote {path} in {results['seconds']} s")
    env.close()


if __name__ == "__main__":
    main()
