"""What the HTTP path adds to recall and to a save, and where it goes (issue 21).

One run, on a fresh data folder:

1. The first `--notes` SciFact documents are bulk-loaded as notes with their real
   embeddings (as `bench/latency.py` loads them), HNSW built, term statistics counted.
2. `grove serve --port N`, as the README starts Grove (embedded PostgreSQL, the
   filesystem broker, a worker with beat), on that data folder; an API key with every
   notebook. The per-connection and per-address limits are raised far above what the
   run sends (they still count every request: that work is part of what is measured).
3. `--rounds` rounds; in each, in a random order: the service calls in this process
   with the actor that key yields (`notebooks.selectors.recall.recall(query=…)`, the
   query embedded by the real model; `notebooks.services.note_remember(…)`, a new
   ~600-character note), the same over HTTP with one keep-alive httpx client
   (`POST /v1/recall`, `POST /v1/notes`), and `GET /healthz`. After each round the
   bench waits until the worker has embedded the round's two saves, so the worker never
   runs beside a measured request. Overhead = HTTP − service, per percentile.
4. In-process, the same two requests through `grove.asgi.application` with a timer
   around every layer (`bench/http_layers.py`): where the overhead goes.

    .venv/bin/python bench/http_overhead.py [--notes 2000] [--rounds 400] [--out NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, percentile, summary_ms, table, truncate_words, write_result  # noqa: E402
from bench.latency import bulk_load, doc_vectors, rebuild_hnsw  # noqa: E402
from bench.scifact import load  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAVE_CHARS = 600
WARMUP = 20
PATHS = ("service_recall", "http_recall", "service_remember", "http_remember", "http_healthz")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Serve:
    """`grove serve --port N` on the bench's data folder (it joins the bench's running
    embedded PostgreSQL), with one keep-alive client holding the API key."""

    def __init__(self, env: Env, key: str, log: Path):
        import httpx

        self.port = free_port()
        environ = {k: v for k, v in os.environ.items()
                   if not k.startswith("GROVE_") and k not in ("DATABASE_URL", "REDIS_URL",
                                                               "DJANGO_SETTINGS_MODULE")}
        environ.update(GROVE_HOME=str(env.home), GROVE_API_RATE_LIMIT="1000000",
                       GROVE_ADDRESS_RATE_LIMIT="1000000")
        self.log = open(log, "w")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "grove", "serve", "--port", str(self.port), "--no-migrate"],
            cwd=ROOT, env=environ, stdout=self.log, stderr=subprocess.STDOUT)
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=60,
                                   headers={"Authorization": f"Bearer {key}"})
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.client.get("/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"grove serve did not start; see {log}")
            time.sleep(0.2)

    def close(self) -> None:
        self.client.close()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def jobs_left(account_id: uuid.UUID) -> int:
    from grove.kernel.tenancy import tenant
    from grove.models import Job

    with tenant(account_id):
        return Job.objects.filter(status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).count()


def wait_for_worker(account_id: uuid.UUID, timeout: float = 10.0) -> float:
    started = time.perf_counter()
    while jobs_left(account_id) and time.perf_counter() - started < timeout:
        time.sleep(0.01)
    return time.perf_counter() - started


def interleaved(env: Env, actor: Any, serve: Serve, queries: list[str], texts: list[str],
                rounds: int) -> dict[str, list[float]]:
    from notebooks.selectors.recall import recall
    from notebooks.services import note_remember

    client = serve.client
    rng = random.Random(21)  # noqa: S311 - an order, not a secret
    texts_left = iter(texts)

    def run(path: str, query: str) -> float:
        started = time.perf_counter()
        if path == "service_recall":
            recall(actor=actor, query=query)
        elif path == "http_recall":
            client.post("/v1/recall", json={"query": query}).raise_for_status()
        elif path == "service_remember":
            note_remember(actor=actor, operation_id=uuid.uuid4(), content=next(texts_left),
                          kind="fact")
        elif path == "http_remember":
            client.post("/v1/notes", json={"content": next(texts_left), "kind": "fact"}
                        ).raise_for_status()
        else:
            client.get("/healthz").raise_for_status()
        return time.perf_counter() - started

    for i in range(WARMUP):
        for path in PATHS:
            run(path, queries[-1 - i % len(queries)])
        wait_for_worker(env.account_id)
    seconds: dict[str, list[float]] = {path: [] for path in PATHS}
    for i in range(rounds):
        order = list(PATHS)
        rng.shuffle(order)
        query = queries[i % len(queries)]
        for path in order:
            seconds[path].append(run(path, query))
        wait_for_worker(env.account_id)
    return seconds


def overhead(http: list[float], service: list[float]) -> dict[str, float]:
    return {f"p{p}": round((percentile(http, p) - percentile(service, p)) * 1000, 2)
            for p in (50, 95, 99)}


def layer_profile(env: Env, key: str, queries: list[str], texts: list[str],
                  requests: int) -> dict[str, Any]:
    from bench.http_layers import Harness, Probe, derived, install

    probe = Probe()
    install(probe)  # before grove.asgi builds Django's handler (it binds its methods)
    harness = Harness("127.0.0.1", key)
    out: dict[str, Any] = {}
    try:
        cases = {
            "recall": lambda i: ("POST", "/v1/recall",
                                 json.dumps({"query": queries[i % len(queries)]}).encode()),
            "remember": lambda i: ("POST", "/v1/notes",
                                   json.dumps({"content": texts[i], "kind": "fact"}).encode()),
            "healthz": lambda i: ("GET", "/healthz", b""),
        }
        for name, make in cases.items():
            for i in range(WARMUP):
                probe.start()
                harness.request(*make(len(texts) - 1 - i))
                probe.finish()
                if name == "remember":
                    wait_for_worker(env.account_id)
            probe.requests.clear()
            for i in range(requests):
                probe.start()
                status, body = harness.request(*make(i))
                assert status in (200, 201), (status, body[:200])
                probe.finish()
                if name == "remember":
                    wait_for_worker(env.account_id)
            rows = [derived(r) for r in probe.requests]
            out[name] = {k: _layer_summary([r.get(k, 0.0) for r in rows], _count(k))
                         for k in sorted({k for r in rows for k in r})}
            probe.requests.clear()
    finally:
        harness.close()
        probe.close()
    return out


def _count(name: str) -> bool:
    return name in ("sql_statements", "last_contact_updates")


def _layer_summary(values: list[float], is_count: bool) -> dict[str, float]:
    scale = 1 if is_count else 1000  # counts as they are, times in ms
    return {"p50": round(percentile(values, 50) * scale, 3),
            "p95": round(percentile(values, 95) * scale, 3),
            "mean": round(sum(values) / len(values) * scale, 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--profile-requests", type=int, default=200)
    parser.add_argument("--out", default="http_overhead")
    parser.add_argument("--py-spy", metavar="FILE", default="",
                        help="also sample the server with py-spy during the rounds (collapsed "
                             "stacks to FILE; the timings of such a run include the sampling)")
    args = parser.parse_args()
    started_all = time.perf_counter()

    data = load("test")
    doc_ids = list(data.corpus)
    n = args.notes
    docs = [data.corpus[d] for d in doc_ids[:n]]
    queries = list(data.queries.values())
    saves_needed = 2 * (WARMUP + args.rounds) + WARMUP + args.profile_requests + WARMUP
    extra = [truncate_words(data.corpus[d], SAVE_CHARS) for d in doc_ids[n:]]
    texts = [f"{extra[i % len(extra)]} ({i})" for i in range(saves_needed)]

    env = Env.fresh("http-overhead")
    from grove.embeddings import configured_profile, get_embedder
    from grove.identity.services import connection_authenticate, connection_create_key

    real = get_embedder()
    profile = configured_profile()[0]
    vectors = doc_vectors(real, doc_ids[:n], [truncate_words(d, 6000) for d in docs])
    rebuild_hnsw(env, drop_only=True)
    loaded = bulk_load(env, 0, n, doc_ids[:n], docs, vectors, profile)
    rebuild_hnsw(env)
    env.refresh_stats()
    key = connection_create_key(actor=env.actor, name="bench", personal=True,
                                all_notebooks=True).key
    actor = connection_authenticate(key)
    assert actor is not None
    print(f"{n} notes loaded ({loaded['copy_seconds']} s)", flush=True)

    serve = Serve(env, key, env.home / "serve.log")
    try:
        spy = None
        if args.py_spy:
            spy = subprocess.Popen(  # noqa: S603 - the venv's py-spy on our own child
                [str(Path(sys.executable).parent / "py-spy"), "record", "--pid",
                 str(serve.process.pid), "--rate", "500", "--format", "raw", "--threads",
                 "--output", args.py_spy], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seconds = interleaved(env, actor, serve, queries, texts, args.rounds)
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=60)
        results: dict[str, Any] = {"notes": n, "rounds": args.rounds,
                                   "paths": {p: summary_ms(s) for p, s in seconds.items()}}
        results["overhead_ms"] = {
            "recall": overhead(seconds["http_recall"], seconds["service_recall"]),
            "remember": overhead(seconds["http_remember"], seconds["service_remember"]),
        }
        rows = [[p, *(f"{results['paths'][p][k]:.2f}" for k in ("p50", "p95", "p99"))]
                for p in PATHS]
        print(table(["path", "p50 ms", "p95 ms", "p99 ms"], rows), flush=True)
        print("overhead (HTTP − service) ms:", results["overhead_ms"], flush=True)
        # In-process, while the server's worker still embeds what the saves queue.
        used = 2 * (WARMUP + args.rounds)
        results["layers"] = layer_profile(env, key, queries, texts[used:],
                                          args.profile_requests)
    finally:
        serve.close()
    for case, layers in results["layers"].items():
        print(case, json.dumps({k: v["p50"] for k, v in layers.items()}), flush=True)
    results["seconds"] = round(time.perf_counter() - started_all, 1)
    path = write_result(args.out, results, env)
    print(f"wrote {path}", flush=True)
    env.close()


if __name__ == "__main__":
    main()
