"""The brief's cost at 100k notes (SPEC §10; no target in the spec — measured so an
agent's first read is known to be cheap).

Data: 100,000 notes bulk-loaded as in latency.py (SciFact documents and variations),
spread over 20 notebooks as in library.py (every 10th stays Personal), then given a mix
of kinds — 20 % preferences, 20 % decisions, 2 % handoffs (each its own task), the rest
facts — 8 pinned, and 300 changed within the last week; random vectors (recall for a
focus embeds the query with the configured local model and walks the HNSW index).

Measured in-process, after 5 warm-up calls each, `--samples` calls (default 100) of:

* `brief_get` for everything, with the default budget (2,000 tokens);
* one notebook, default budget; and with an 8,000-token budget;
* everything with a `focus` (recall, query embedding included);
* `GET /v1/brief` through Django's test client with an API key (middleware, auth, the
  envelope) — i.e. everything but the network;
* `activity_list` (first page of 50) and `whoami`.

    .venv/bin/python bench/brief.py [--size 100000] [--samples 100]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, summary_ms, table, write_result  # noqa: E402
from bench.latency import bulk_load, rebuild_hnsw  # noqa: E402
from bench.library import spread_over_notebooks  # noqa: E402
from bench.scifact import load  # noqa: E402

WARMUP = 5
FOCUS = ["vitamin D deficiency and bone density", "microRNA regulation in cancer cells",
         "antibiotic resistance in hospitals", "sleep and memory consolidation"]


def mix_kinds(env: Env) -> dict[str, int]:
    """Kinds, pins and recent changes, in place (rows that merely need to exist)."""
    from django.db import connection

    from grove.kernel.tenancy import tenant

    with tenant(env.actor), connection.cursor() as cursor:
        cursor.execute(
            # Numbered in another order than `spread_over_notebooks` numbers them, so
            # kinds are independent of places (every place holds every kind).
            "WITH numbered AS (SELECT id, row_number() OVER (ORDER BY md5(id::text)) AS n "
            "FROM notebooks_note) "
            "UPDATE notebooks_note SET "
            " kind = CASE WHEN n % 50 = 7 THEN 'handoff' WHEN n % 5 = 1 THEN 'preference' "
            "             WHEN n % 5 = 2 THEN 'decision' ELSE 'fact' END, "
            " task_id = CASE WHEN n % 50 = 7 THEN 'task-' || n ELSE NULL END, "
            " retention_days = CASE WHEN n % 50 = 7 THEN 30 ELSE NULL END, "
            " expires_at = CASE WHEN n % 50 = 7 THEN now() + interval '30 days' ELSE NULL END, "
            " pinned = (n % 12500 = 3), importance = (n % 10) / 10.0, "
            " updated_at = CASE WHEN n % 333 = 0 THEN now() - (n % 7) * interval '1 day' "
            "                   ELSE now() - interval '60 days' END "
            "FROM numbered WHERE notebooks_note.id = numbered.id")
        cursor.execute("SELECT kind, count(*), count(*) FILTER (WHERE pinned) "
                       "FROM notebooks_note GROUP BY kind ORDER BY kind")
        return {f"{kind} ({pinned} pinned)": total
                for kind, total, pinned in cursor.fetchall()}


def measure(call: Any, samples: int) -> list[float]:
    for _ in range(WARMUP):
        call(0)
    seconds = []
    for i in range(samples):
        started = time.perf_counter()
        call(i)
        seconds.append(time.perf_counter() - started)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--out", default="brief")
    args = parser.parse_args()
    started_all = time.perf_counter()

    data = load("test")
    doc_ids = list(data.corpus)
    docs = [data.corpus[d] for d in doc_ids]
    env = Env.fresh("brief")
    from grove.embeddings import configured_profile

    profile = configured_profile()[0]
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(len(docs), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rebuild_hnsw(env, drop_only=True)
    t0 = time.perf_counter()
    info: dict[str, Any] = bulk_load(env, 0, args.size, doc_ids, docs, vectors, profile)
    notebook_ids = spread_over_notebooks(env)
    info["kinds"] = mix_kinds(env)
    info["hnsw_seconds"] = round(rebuild_hnsw(env), 1)
    env.refresh_stats()
    info["load_total_seconds"] = round(time.perf_counter() - t0, 1)
    print(args.size, info, flush=True)

    from django.test import Client

    from grove.identity import services as identity
    from notebooks.selectors import activity_list, brief_get, whoami

    key = identity.connection_create_key(actor=env.actor, name="bench", personal=True,
                                         all_notebooks=True).key
    client = Client(HTTP_HOST="127.0.0.1")
    one = notebook_ids[3]
    meta = brief_get(actor=env.actor).meta
    print("brief meta", meta.returned, meta.indexed, meta.dropped, meta.available,
          meta.tokens, flush=True)
    runs: dict[str, Any] = {
        "brief_get (everything, 2,000 tokens)": lambda i: brief_get(actor=env.actor),
        "brief_get (one notebook, 2,000 tokens)": lambda i: brief_get(actor=env.actor,
                                                                     notebook_id=one),
        "brief_get (one notebook, 8,000 tokens)": lambda i: brief_get(
            actor=env.actor, notebook_id=one, budget_tokens=8000),
        "brief_get (everything, focus: recall)": lambda i: brief_get(
            actor=env.actor, focus=FOCUS[i % len(FOCUS)]),
        "GET /v1/brief (API key, in-process)": lambda i: _ok(client.get(
            "/v1/brief", HTTP_AUTHORIZATION=f"Bearer {key}")),
        "activity_list (first page of 50)": lambda i: activity_list(actor=env.actor),
        "whoami": lambda i: whoami(actor=env.actor),
    }
    results: dict[str, Any] = {"size": args.size, "samples": args.samples, "load": info,
                               "brief_meta": meta.to_json(), "paths": {}}
    for label, call in runs.items():
        results["paths"][label] = summary_ms(measure(call, args.samples))
        print(label, results["paths"][label], flush=True)
    results["seconds"] = round(time.perf_counter() - started_all, 1)
    path = write_result(args.out, results, env)
    rows = [[label, s["p50"], s["p95"], s["p99"]] for label, s in results["paths"].items()]
    print(table(["call", "p50 ms", "p95 ms", "p99 ms"], rows))
    print(f"wrote {path}")
    env.close()


def _ok(response: Any) -> Any:
    assert response.status_code == 200, response.content[:300]
    return response


if __name__ == "__main__":
    main()
