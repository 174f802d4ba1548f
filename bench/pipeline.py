"""Save latency and embedding throughput of the write path.

1. Save latency: 1,000 `note_remember` calls of ~1 KB notes (SciFact documents cut to
   1,000 characters at a word boundary), one at a time, after 20 warm-up saves. Each
   save includes its revision, operation record, `embed` job row and the on-commit
   Celery wake-up written to the filesystem broker under $GROVE_HOME/broker (no worker
   runs). A further 300 saves with `grove.kernel.jobs.send` patched to a no-op show what the
   wake-up costs.
2. Raw model: `get_embedder().embed(texts)` over the same 1,000 texts (length-sorted
   batches of 32), once before and once after each pipeline measurement below, so each
   of them is compared with the model as fast as it ran right beside it (other
   engineers share the machine's two cores): its ratio is its rate ÷ the mean rate of
   the raw runs just before and after it. Once more in claim order (batches of 32, no
   global sort).
3. Pipeline in-process: `grove.kernel.jobs.run_batch` until all 1,300 jobs of step 1
   are done; the handler's `execute` is wrapped to time the model share.
4. Pipeline with a real worker: 1,000 new notes are imported in one transaction
   (`account_import`, as `grove import` does: one wake-up) with no worker running, then
   `python -m grove worker --concurrency N` is started on the same GROVE_HOME (it joins
   the embedded server this process owns) and timed until every note is `ready`, for
   N = 2 (the default) and N = 1; with `--worker-saves each`, saved one at a time
   instead (one wake-up per note). Throughput is reported both from the worker's start
   (includes Celery start and model load) and in steady state (jobs finished after the
   first batch / time between first and last finish); the end is the last job's
   finished_at, the bench polls only every 0.5 s. Also: the broker messages still
   waiting when the last job finished, and the CPU other processes used meanwhile.

    .venv/bin/python bench/pipeline.py [--n 1000] [--worker-saves import|each]
    .venv/bin/python bench/pipeline.py --saves-only --out pipeline-saves   # step 1 only,
        # plus the same saves with the term-statistics triggers on and off, alternating
    .venv/bin/python bench/pipeline.py --saves-only --brief-indexes --out pipeline-saves-brief
        # step 1, plus the same saves with the brief's indexes (notebooks 0014) on and off
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ROOT, Env, summary_ms, table, truncate_words, write_result  # noqa: E402
from bench.scifact import load  # noqa: E402


def texts_of(corpus: dict[str, str], n: int, skip: int = 0) -> list[str]:
    long_docs = [truncate_words(t.replace("\n\n", " "), 1000) for t in corpus.values()
                 if len(t) >= 1100]
    return long_docs[skip:skip + n]


def save_all(env: Env, texts: list[str]) -> tuple[list[float], list[uuid.UUID]]:
    from notebooks.services.remember import note_remember

    seconds, ids = [], []
    for text in texts:
        started = time.perf_counter()
        out = note_remember(actor=env.actor, operation_id=uuid.uuid4(), content=text,
                            kind="fact")
        seconds.append(time.perf_counter() - started)
        ids.append(out.note.id)
    return seconds, ids


def import_all(env: Env, texts: list[str]) -> list[uuid.UUID]:
    """The texts as notes of one import (one transaction, one wake-up); their ids."""
    from grove.kernel.tenancy import tenant
    from notebooks.models import Note
    from notebooks.services.portability import account_import
    from tests.factories import export_records

    records = export_records(texts, "2026-12-01T00:00:00Z")
    with tenant(env.actor):
        before = set(Note.objects.values_list("id", flat=True))
    account_import(actor=env.actor, records=records)
    with tenant(env.actor):
        return [i for i in Note.objects.values_list("id", flat=True) if i not in before]


def waiting_messages(env: Env) -> int:
    queue = env.home / "broker" / "queue"
    return sum(1 for name in os.listdir(queue)
               if name.endswith(".msg") and not name.startswith(".")) if queue.is_dir() else 0


def raw_rate(embedder: Any, texts: list[str]) -> float:
    t = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - t)


def ready_count(env: Env, ids: list[uuid.UUID]) -> int:
    from grove.kernel.tenancy import tenant
    from notebooks.models import Note

    with tenant(env.actor):
        return Note.objects.filter(id__in=ids, indexing="ready").count()


def finish_times(env: Env, ids: list[uuid.UUID]) -> list[float]:
    from grove.kernel.tenancy import tenant
    from grove.models import Job

    with tenant(env.actor):
        stamps = list(Job.objects.filter(target_id__in=ids, kind="embed", status="done")
                      .values_list("finished_at", flat=True))
    return sorted(s.timestamp() for s in stamps)


def clear_broker(env: Env) -> None:
    queue = env.home / "broker" / "queue"
    if queue.is_dir():
        shutil.rmtree(queue)
        queue.mkdir(mode=0o700)


def run_worker(env: Env, ids: list[uuid.UUID], concurrency: int,
               timeout: float = 300) -> dict[str, Any]:
    log = env.home / f"worker-{concurrency}.log"
    environ = {**os.environ, "GROVE_HOME": str(env.home),
               "DJANGO_SETTINGS_MODULE": "grove.settings"}
    environ.pop("REDIS_URL", None)
    started = time.time()
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "grove", "worker", f"--concurrency={concurrency}"],
            cwd=ROOT, env=environ, stdout=fh, stderr=subprocess.STDOUT)
    try:
        # Poll rarely (every 0.5 s) so the poll itself takes no noticeable CPU from the
        # worker; the end time comes from the jobs' own finished_at stamps.
        while True:
            done = ready_count(env, ids)
            if done >= len(ids):
                waiting_when_done = waiting_messages(env)
                break
            if proc.poll() is not None:
                raise RuntimeError(f"worker exited with {proc.returncode}; see {log}")
            if time.perf_counter() - t0 > timeout:
                raise TimeoutError(f"only {done}/{len(ids)} ready after {timeout} s")
            time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    stamps = finish_times(env, ids)
    first, last = stamps[0], stamps[-1]
    wall = last - started
    batch = 32
    steady = (len(stamps) - batch) / (last - first) if last > first else float("nan")
    return {"concurrency": concurrency, "notes": len(ids), "wall_seconds": round(wall, 2),
            "first_job_done_after_s": round(first - started, 2),
            "notes_per_second_from_start": round(len(ids) / wall, 1),
            "notes_per_second_steady": round(steady, 1),
            "broker_waiting_when_done": waiting_when_done}


def trigger_ab(env: Env, texts: list[str], block: int = 100) -> dict[str, Any]:
    """What the term-statistics triggers (notebooks 0011) cost a save: the same saves in
    alternating blocks with the triggers enabled and disabled (as the schema owner), so
    other load on the machine hits both alike. Afterwards the statistics are recounted
    (the disabled blocks were not counted)."""
    from grove.kernel.actor import Actor
    from notebooks.services.term_stats import term_stats_refresh

    timings: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for number, lo in enumerate(range(0, len(texts), block)):
            state = "off" if number % 2 else "on"
            verb = "DISABLE" if state == "off" else "ENABLE"
            env.owner_sql(f"ALTER TABLE notebooks_note {verb} TRIGGER term_stats_inserted",
                          f"ALTER TABLE notebooks_note {verb} TRIGGER term_stats_updated")
            timings[state] += save_all(env, texts[lo:lo + block])[0]
    finally:
        env.owner_sql("ALTER TABLE notebooks_note ENABLE TRIGGER term_stats_inserted",
                      "ALTER TABLE notebooks_note ENABLE TRIGGER term_stats_updated")
        term_stats_refresh(actor=Actor.system(env.account_id))
    return {"block": block, "triggers_on": summary_ms(timings["on"]),
            "triggers_off": summary_ms(timings["off"])}


# The brief's indexes (notebooks 0014), as that migration creates them.
BRIEF_INDEXES = {
    "note_brief_counting": "(account_id, status) INCLUDE (notebook_id, expires_at, kind, pinned)",
    "note_ranked": "(account_id, kind, importance DESC, updated_at DESC, id)",
    "note_ranked_place": "(account_id, notebook_id, kind, importance DESC, updated_at DESC, id)",
    "note_pinned": "(account_id) WHERE pinned",
}


def brief_indexes_ab(env: Env, texts: list[str], block: int = 100) -> dict[str, Any]:
    """What the brief's four indexes cost a save: the same saves in alternating blocks
    with the indexes present and dropped (as the schema owner), so other load hits both
    alike; the indexes are back afterwards."""
    timings: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for number, lo in enumerate(range(0, len(texts), block)):
            state = "off" if number % 2 else "on"
            if state == "off":
                env.owner_sql(*(f"DROP INDEX IF EXISTS {name}" for name in BRIEF_INDEXES))
            else:
                env.owner_sql(*(f"CREATE INDEX IF NOT EXISTS {name} ON notebooks_note {cols}"
                                for name, cols in BRIEF_INDEXES.items()))
            timings[state] += save_all(env, texts[lo:lo + block])[0]
    finally:
        env.owner_sql(*(f"CREATE INDEX IF NOT EXISTS {name} ON notebooks_note {cols}"
                        for name, cols in BRIEF_INDEXES.items()))
    return {"block": block, "indexes_on": summary_ms(timings["on"]),
            "indexes_off": summary_ms(timings["off"])}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--out", default="pipeline")
    parser.add_argument("--saves-only", action="store_true",
                        help="measure save latency (step 1) only")
    parser.add_argument("--worker-saves", choices=("import", "each"), default="import",
                        help="step 4: the notes imported in one transaction, or saved "
                             "one at a time")
    parser.add_argument("--brief-indexes", action="store_true",
                        help="with --saves-only: the brief's indexes on and off, alternating")
    args = parser.parse_args()
    n = args.n
    started_all = time.perf_counter()
    corpus = load("test").corpus
    texts = texts_of(corpus, n)
    warm = texts_of(corpus, 20, skip=n)
    nosend = texts_of(corpus, 300, skip=n + 20)
    worker_sets = [texts_of(corpus, n, skip=n + 320 + k * n) for k in range(2)]
    assert len(texts) == n and all(len(s) == n for s in worker_sets), "not enough long docs"

    env = Env.fresh("pipeline")
    from grove.embeddings import get_embedder
    from grove.kernel import jobs

    embedder = get_embedder()
    results: dict[str, Any] = {"profile": embedder.profile, "n": n,
                               "mean_chars": round(sum(map(len, texts)) / n)}
    tokens = [len(e.ids) for e in embedder.tokenizer.encode_batch(texts)]
    results["mean_tokens"] = round(sum(tokens) / n, 1)

    # 1. save latency
    save_all(env, warm)
    env.drain_jobs()
    seconds, ids = save_all(env, texts)
    results["save"] = summary_ms(seconds)
    print("save", results["save"], flush=True)
    saved_send = jobs.send
    jobs.send = lambda *a, **k: None
    try:
        nosend_seconds, nosend_ids = save_all(env, nosend)
    finally:
        jobs.send = saved_send
    results["save_without_wakeup"] = summary_ms(nosend_seconds)
    print("save without wake-up", results["save_without_wakeup"], flush=True)
    if args.saves_only:
        extra = texts_of(corpus, 1000, skip=n + 320)
        if args.brief_indexes:
            results["brief_indexes_ab"] = brief_indexes_ab(env, extra)
            print("brief indexes on / off", results["brief_indexes_ab"], flush=True)
        else:
            results["term_stats_triggers_ab"] = trigger_ab(env, extra)
            print("triggers on / off", results["term_stats_triggers_ab"], flush=True)
        results["seconds"] = round(time.perf_counter() - started_all, 1)
        print(f"wrote {write_result(args.out, results, env)}")
        env.close()
        return

    # 2.–4. raw model runs interleaved with the pipeline's
    contention = env.contention
    assert contention is not None
    raws: list[float] = []

    def raw() -> float:
        raws.append(raw_rate(embedder, texts))
        print(f"raw {raws[-1]:.1f} notes/s", flush=True)
        return raws[-1]

    def measured(run: Any) -> tuple[Any, dict[str, float]]:
        """Run one pipeline measurement between two raw runs; the model's rate beside
        it and the CPU other processes used meanwhile."""
        before = raws[-1] if raws else raw()
        wall0, foreign0 = contention.snapshot()
        out = run()
        wall1, foreign1 = contention.snapshot()
        after = raw()
        return out, {"raw_before": round(before, 1), "raw_after": round(after, 1),
                     "raw_beside": round((before + after) / 2, 1),
                     "other_cores_mean": round((foreign1 - foreign0) / (wall1 - wall0), 3)}

    raw()
    # The same texts in the order the pipeline claims them, in batches of 32 (no global sort).
    t = time.perf_counter()
    for lo in range(0, n, 32):
        embedder.embed(texts[lo:lo + 32])
    results["raw_model_unsorted_batches_of_32"] = {
        "notes_per_second": round(n / (time.perf_counter() - t), 1)}
    print("raw, claim order", results["raw_model_unsorted_batches_of_32"], flush=True)

    # 3. in-process pipeline (the 1,000 jobs queued by step 1, plus the 300)
    handler = jobs.handler_for("embed")
    model_seconds = [0.0]

    def timed_execute(inputs: list[Any]) -> list[Any]:
        t = time.perf_counter()
        try:
            return handler.execute(inputs)
        finally:
            model_seconds[0] += time.perf_counter() - t

    jobs.register(dataclasses.replace(handler, execute=timed_execute))
    try:
        (done, secs), beside = measured(env.drain_jobs)
    finally:
        jobs.register(handler)
    assert ready_count(env, ids) == n and ready_count(env, nosend_ids) == len(nosend_ids)
    results["pipeline_in_process"] = {
        "jobs": done, "seconds": round(secs, 2), "notes_per_second": round(done / secs, 1),
        "model_seconds": round(model_seconds[0], 2),
        "model_notes_per_second": round(done / model_seconds[0], 1),
        "db_and_overhead_seconds": round(secs - model_seconds[0], 2),
        **beside, "ratio_to_raw": round(done / secs / beside["raw_beside"], 3)}
    print("in-process", results["pipeline_in_process"], flush=True)

    # 4. real worker
    clear_broker(env)
    worker_results = []
    for concurrency, batch in zip((2, 1), worker_sets, strict=True):
        if args.worker_saves == "import":
            wids = import_all(env, batch)
        else:
            _, wids = save_all(env, batch)
        assert len(wids) == n
        sent = waiting_messages(env)
        res, beside = measured(lambda c=concurrency, w=wids: run_worker(env, w, c))
        res.update(saves=args.worker_saves, wake_ups_before_start=sent, **beside)
        res["ratio_to_raw_from_start"] = round(
            res["notes_per_second_from_start"] / beside["raw_beside"], 3)
        res["ratio_to_raw_steady"] = round(res["notes_per_second_steady"] / beside["raw_beside"], 3)
        worker_results.append(res)
        print("worker", res, flush=True)
        clear_broker(env)
    results["pipeline_worker"] = worker_results
    raw_rate_best = max(raws)
    results["raw_model"] = {"notes_per_second_each_run": [round(r, 1) for r in raws],
                            "notes_per_second": round(raw_rate_best, 1)}

    results["seconds"] = round(time.perf_counter() - started_all, 1)
    path = write_result(args.out, results, env)
    print()
    print(table(["measure", "p50 ms", "p95 ms", "p99 ms", "max ms"], [
        ["note_remember (with wake-up)",
         *(results["save"][k] for k in ("p50", "p95", "p99", "max"))],
        ["note_remember (wake-up patched out)",
         *(results["save_without_wakeup"][k] for k in ("p50", "p95", "p99", "max"))],
    ]))
    print()
    rows = [["raw model (embed over all, length-sorted), best run",
             results["raw_model"]["notes_per_second"], "1.00"],
            ["raw model (claim order, batches of 32)",
             results["raw_model_unsorted_batches_of_32"]["notes_per_second"],
             round(results["raw_model_unsorted_batches_of_32"]["notes_per_second"]
                   / raw_rate_best, 2)],
            ["pipeline in-process (run_batch loop)",
             results["pipeline_in_process"]["notes_per_second"],
             results["pipeline_in_process"]["ratio_to_raw"]]]
    for res in worker_results:
        rows.append([f"worker --concurrency={res['concurrency']} (from start)",
                     res["notes_per_second_from_start"], res["ratio_to_raw_from_start"]])
        rows.append([f"worker --concurrency={res['concurrency']} (steady)",
                     res["notes_per_second_steady"], res["ratio_to_raw_steady"]])
    print(table(["embedding path", "notes/s", "÷ raw beside it"], rows))
    print(f"\nwrote {path} in {results['seconds']} s")
    env.close()


if __name__ == "__main__":
    main()
