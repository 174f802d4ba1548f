"""Ingest, then ask at once: SciFact recall as a new user gets it (issue 14, item 8).

1. A fresh data folder (`/tmp/grove-bench-ingest`) and `grove serve --port N`, as the
   README says: embedded PostgreSQL, filesystem broker, the local model, one worker
   with beat. One change: `GROVE_API_RATE_LIMIT=0`, since one key saving 5,183 notes
   would otherwise be held to 600 requests a minute.
2. The owner (`grove createsuperuser`) and an API key for everything (`grove key create
   --all`).
3. Every SciFact document saved over REST (`POST /v1/notes`, title + text cut to 6,000
   characters), one request at a time — the worker embeds meanwhile.
4. `POST /v1/recall` polled every second until `meta.pending` is 0; broker messages
   waiting and job counts sampled meanwhile.
5. At once: the 300 test queries over REST recall (limit 10, maxChars 50,000), scored
   nDCG@10 — the score "right after indexing", as served.
6. A forced recount of the term statistics (`term_stats_refresh` for the account, the
   same as `grove term_stats --recount`), then the 300 queries again: the score with
   fresh statistics. Goal (issue 14): the first within 0.01 of the second.

Works on older versions of Grove as well (they recount with
`notebooks.services.term_stats_refresh`), to measure what a change did.

    .venv/bin/python bench/ingest_then_ask.py [--out ingest_then_ask] [--limit-docs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import (  # noqa: E402
    ROOT,
    Contention,
    summary_ms,
    truncate_words,
    wait_for_quiet,
    write_result,
)
from bench.scifact import load, ndcg_at  # noqa: E402

HOME = Path("/tmp/grove-bench-ingest")  # noqa: S108 - private scratch folder
USER, PASSWORD = "bench", "bench passphrase long enough"  # noqa: S105


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def grove_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GROVE_") and k not in ("DATABASE_URL", "REDIS_URL",
                                                       "DJANGO_SETTINGS_MODULE")}
    return {**env, "GROVE_HOME": str(HOME), **extra}


def grove(*args: str, **extra: str) -> str:
    result = subprocess.run([sys.executable, "-m", "grove", *args], cwd=ROOT,  # noqa: S603
                            env=grove_env(**extra), capture_output=True, text=True,
                            timeout=600, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"grove {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


class Sampler:
    """Every second: messages waiting in the broker folder (by queue)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.samples: list[tuple[float, dict[str, int]]] = []
        self._stop = threading.Event()
        self.started = time.perf_counter()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def waiting(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        try:
            names = os.listdir(self.folder)
        except OSError:
            return counts
        for name in names:
            if name.endswith(".msg") and not name.startswith("."):
                queue = name.partition(".")[2].removesuffix(".msg")
                counts[queue] = counts.get(queue, 0) + 1
        return counts

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            self.samples.append((round(time.perf_counter() - self.started, 1), self.waiting()))

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join()
        peak = max((sum(c.values()) for _, c in self.samples), default=0)
        return {"peak_waiting": peak, "samples_every_10s": self.samples[::10]}


def job_counts(account_id: uuid.UUID) -> dict[str, int]:
    from django.db.models import Count

    from grove.kernel.tenancy import tenant
    from grove.models import Job

    with tenant(account_id):
        return {f"{row['kind']}/{row['status']}": row["n"]
                for row in Job.objects.values("kind", "status").annotate(n=Count("id"))}


def recount(account_id: uuid.UUID) -> tuple[int, float]:
    from grove.kernel.actor import Actor

    try:
        from notebooks.services.term_stats import term_stats_refresh
    except ImportError:  # older Grove
        from notebooks.services.term_stats import term_stats_refresh  # type: ignore[attr-defined,no-redef]
    started = time.perf_counter()
    counted = term_stats_refresh(actor=Actor.system(account_id))
    return counted, time.perf_counter() - started


def ask_all(client: Any, queries: dict[str, str], note_to_doc: dict[str, str]
            ) -> tuple[dict[str, list[str]], list[float], set[str]]:
    runs, seconds, modes = {}, [], set()
    for qid, text in queries.items():
        started = time.perf_counter()
        response = client.post("/v1/recall", json={"query": text, "limit": 10,
                                                   "maxChars": 50_000})
        seconds.append(time.perf_counter() - started)
        response.raise_for_status()
        body = response.json()
        modes.add(body["meta"]["mode"])
        runs[qid] = [note_to_doc[str(item["note"]["id"])] for item in body["data"]]
    return runs, seconds, modes


def ndcg(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    return round(sum(ndcg_at(runs.get(q, []), rel, 10) for q, rel in qrels.items())
                 / len(qrels), 4)


def main() -> None:
    import httpx

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="ingest_then_ask")
    parser.add_argument("--limit-docs", type=int, default=0,
                        help="save only the first N documents (a quick trial)")
    args = parser.parse_args()
    started_all = time.perf_counter()
    test = load("test")
    quiet = wait_for_quiet()
    if HOME.exists():
        from grove.runtime.embedded import EmbeddedPostgres

        if EmbeddedPostgres(HOME).is_running():
            EmbeddedPostgres(HOME)._stop_server()  # noqa: SLF001 - our own scratch server
        shutil.rmtree(HOME)
    HOME.mkdir(mode=0o711)
    HOME.chmod(0o711)
    port = free_port()
    log = open(HOME / "serve.log", "w")  # noqa: SIM115 - closed at the end
    serve = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "grove", "serve", "--port", str(port)], cwd=ROOT,
        env=grove_env(GROVE_API_RATE_LIMIT="0"), stdout=log, stderr=subprocess.STDOUT)
    results: dict[str, Any] = {}
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(base + "/login/", timeout=2).status_code < 500:
                    break  # (a redirect to the owner setup page until there is an owner)
            except httpx.TransportError:
                pass
            if serve.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"grove serve did not start; see {HOME / 'serve.log'}")
            time.sleep(0.2)
        grove("createsuperuser", "--noinput", DJANGO_SUPERUSER_USERNAME=USER,
              DJANGO_SUPERUSER_PASSWORD=PASSWORD, DJANGO_SUPERUSER_EMAIL="bench@example.org")
        key = grove("key", "create", "--user", USER, "--name", "bench", "--all").strip()

        # The bench process joins the running database to count jobs and to recount.
        os.environ.update(GROVE_HOME=str(HOME), DJANGO_SETTINGS_MODULE="grove.settings")
        for name in ("DATABASE_URL", "REDIS_URL"):
            os.environ.pop(name, None)
        from grove.runtime.embedded import EmbeddedPostgres

        server = EmbeddedPostgres(HOME)
        server.ensure_running()
        import django

        django.setup()
        from grove.models import Account

        account_id = Account.objects.get(username=USER).id
        contention = Contention(server.server_pid)
        sampler = Sampler(HOME / "broker" / "queue")

        corpus = list(test.corpus.items())
        if args.limit_docs:
            corpus = corpus[:args.limit_docs]
        client = httpx.Client(base_url=base, timeout=60,
                              headers={"Authorization": f"Bearer {key}"})
        note_to_doc: dict[str, str] = {}
        save_seconds = []
        t0 = time.perf_counter()
        for doc_id, text in corpus:
            began = time.perf_counter()
            response = client.post("/v1/notes", json={"content": truncate_words(text, 6000),
                                                      "kind": "fact"},
                                   headers={"Idempotency-Key": str(uuid.uuid4())})
            save_seconds.append(time.perf_counter() - began)
            response.raise_for_status()
            note_to_doc[str(response.json()["data"]["id"])] = doc_id
        saved_after = time.perf_counter() - t0
        waiting_after_saves = sampler.waiting()
        print(f"saved {len(note_to_doc)} notes in {saved_after:.0f} s; broker holds "
              f"{waiting_after_saves}", flush=True)
        pending = None
        while pending != 0:
            body = client.post("/v1/recall", json={"query": "cell", "limit": 1}).json()
            pending = body["meta"]["pending"]
            if pending:
                time.sleep(1.0)
        indexed_after = time.perf_counter() - t0
        jobs_when_indexed = job_counts(account_id)
        waiting_when_indexed = sampler.waiting()
        print(f"indexed after {indexed_after:.0f} s; jobs {jobs_when_indexed}; broker holds "
              f"{waiting_when_indexed}", flush=True)

        if args.limit_docs:
            qrels = {q: rel for q, rel in test.qrels.items()
                     if any(d in dict(corpus) for d in rel)}
        else:
            qrels = test.qrels
        queries = {q: test.queries[q] for q in qrels}
        served_runs, served_seconds, served_modes = ask_all(client, queries, note_to_doc)
        as_served = ndcg(served_runs, qrels)
        print(f"right after indexing: nDCG@10 {as_served}", flush=True)
        counted, recount_seconds = recount(account_id)
        fresh_runs, fresh_seconds, fresh_modes = ask_all(client, queries, note_to_doc)
        fresh = ndcg(fresh_runs, qrels)
        print(f"with fresh statistics: nDCG@10 {fresh} (difference {fresh - as_served:+.4f})",
              flush=True)
        time.sleep(5)
        results = {
            "documents": len(note_to_doc), "queries": len(queries),
            "ndcg@10_right_after_indexing": as_served,
            "ndcg@10_fresh_statistics": fresh,
            "difference": round(fresh - as_served, 4),
            "identical_rankings": sum(served_runs[q] == fresh_runs[q] for q in queries),
            "modes": sorted(served_modes | fresh_modes),
            "save_ms_over_http": summary_ms(save_seconds),
            "saves_seconds": round(saved_after, 1),
            "indexed_after_seconds": round(indexed_after, 1),
            "recall_ms_over_http": summary_ms(served_seconds + fresh_seconds),
            "recount": {"notes": counted, "seconds": round(recount_seconds, 2)},
            "jobs_when_indexed": jobs_when_indexed,
            "broker_waiting_after_saves": waiting_after_saves,
            "broker_waiting_when_indexed": waiting_when_indexed,
            "broker_waiting_at_end": sampler.waiting(),
            "broker": sampler.stop(),
            "serve": "grove serve (embedded PostgreSQL, grovefs broker, local model, "
                     "grove worker --with-beat), GROVE_API_RATE_LIMIT=0",
        }
        client.close()
        other = contention.stop()
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            serve.kill()
        log.close()
    results["seconds"] = round(time.perf_counter() - started_all, 1)
    results["other_load_during_run"] = other
    path = write_result(args.out, {"quiet_at_start": quiet, **results})
    print(f"wrote {path}")
    from django.db import connections

    connections.close_all()
    server.release()


if __name__ == "__main__":
    main()
