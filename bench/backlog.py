"""A backlog must shrink, never feed itself (issue 21, item 4): the wake-ups an import
leaves in the broker, counted with a real `grove serve`.

1. A fresh data folder (`/tmp/grove-bench-backlog`) and `grove serve --port N`, as the
   README says: embedded PostgreSQL, filesystem broker, the local model, one worker
   with beat (so `grove.recover` runs every 30 s, as in production).
2. The owner (`grove createsuperuser`) and an NDJSON export file of every SciFact
   document (title + text cut to 6,000 characters; 5,183 notes), imported with
   `grove import --user bench FILE` — one transaction.
3. Every 0.5 s until every `embed` job is finished: the messages waiting in the broker
   folder, the job counts, and the worker's CPU time. Then — the moment the last job
   finished — the messages still waiting, and for `--after` seconds more (default 60)
   how many remain and how much CPU the worker still uses with nothing left to do.

    .venv/bin/python bench/backlog.py [--out backlog] [--limit-docs N] [--after 60]
"""

from __future__ import annotations

import argparse
import json
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
from bench.common import ROOT, Contention, truncate_words, wait_for_quiet, write_result  # noqa: E402
from bench.ingest_then_ask import free_port, grove_env  # noqa: E402
from bench.scifact import load  # noqa: E402

HOME = Path("/tmp/grove-bench-backlog")  # noqa: S108 - private scratch folder
USER, PASSWORD = "bench", "bench passphrase long enough"  # noqa: S105
WHEN = "2026-12-01T00:00:00Z"


def grove(*args: str, **extra: str) -> str:
    env = {**grove_env(**extra), "GROVE_HOME": str(HOME)}
    result = subprocess.run([sys.executable, "-m", "grove", *args], cwd=ROOT,  # noqa: S603
                            env=env, capture_output=True, text=True, timeout=1200,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(f"grove {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


def export_file(texts: list[str]) -> Path:
    path = HOME / "scifact.ndjson"
    with open(path, "w") as out:
        out.write(json.dumps({"type": "grove-export", "format": 2, "exportedAt": WHEN}) + "\n")
        for text in texts:
            fields = {"notebookId": None, "content": text, "kind": "fact", "taskId": None,
                      "sourceAgent": None, "capture": "explicit", "pinned": False,
                      "importance": 0.5, "retentionDays": None, "expiresAt": None,
                      "status": "active", "createdAt": WHEN}
            note_id = str(uuid.uuid4())
            out.write(json.dumps({"type": "note", "id": note_id, "version": 1,
                                  "archivedAt": None, "expiredAt": None, "updatedAt": WHEN,
                                  **fields}) + "\n")
            out.write(json.dumps({"type": "revision", "noteId": note_id, "version": 1,
                                  "reason": "create", "restoredFrom": None,
                                  "operationId": None, **fields}) + "\n")
    return path


def waiting(folder: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return counts
    for name in names:
        if name.endswith(".msg") and not name.startswith("."):
            queue = name.partition(".")[2].removesuffix(".msg")
            counts[queue] = counts.get(queue, 0) + 1
    return counts


def cpu_seconds(pid: int) -> float:
    """CPU time of a process (all its threads) so far."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker_pid(serve_pid: int) -> int:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                parent = int(fh.read().rsplit(")", 1)[1].split()[1])
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if parent == serve_pid and b"worker" in cmdline:
            return int(entry)
    raise RuntimeError("no worker under grove serve")


def embed_jobs(account_id: uuid.UUID) -> dict[str, int]:
    from django.db.models import Count

    from grove.kernel.tenancy import tenant
    from grove.models import Job

    with tenant(account_id):
        return {row["status"]: row["n"] for row in
                Job.objects.filter(kind="embed").values("status").annotate(n=Count("id"))}


def main() -> None:
    import httpx

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="backlog")
    parser.add_argument("--limit-docs", type=int, default=0)
    parser.add_argument("--after", type=float, default=60.0,
                        help="seconds to keep watching once every job is finished")
    args = parser.parse_args()
    started_all = time.perf_counter()
    texts = [truncate_words(t, 6000) for t in load("test").corpus.values()]
    if args.limit_docs:
        texts = texts[:args.limit_docs]
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
    env = {**grove_env(), "GROVE_HOME": str(HOME)}
    serve = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "grove", "serve", "--port", str(port)], cwd=ROOT, env=env,
        stdout=log, stderr=subprocess.STDOUT)
    results: dict[str, Any] = {"documents": len(texts)}
    queue = HOME / "broker" / "queue"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/login/", timeout=2).status_code < 500:
                    break
            except httpx.TransportError:
                pass
            if serve.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"grove serve did not start; see {HOME / 'serve.log'}")
            time.sleep(0.2)
        grove("createsuperuser", "--noinput", DJANGO_SUPERUSER_USERNAME=USER,
              DJANGO_SUPERUSER_PASSWORD=PASSWORD, DJANGO_SUPERUSER_EMAIL="bench@example.org")
        path = export_file(texts)

        os.environ.update(GROVE_HOME=str(HOME), DJANGO_SETTINGS_MODULE="grove.settings")
        for name in ("DATABASE_URL", "REDIS_URL"):
            os.environ.pop(name, None)
        from grove.runtime.embedded import EmbeddedPostgres

        server = EmbeddedPostgres(HOME)
        server.ensure_running()
        import django

        django.setup()
        from django.db import connections

        from grove.models import Account

        account_id = Account.objects.get(username=USER).id
        contention = Contention(server.server_pid)
        worker = worker_pid(serve.pid)

        t0 = time.perf_counter()
        print(grove("import", "--user", USER, str(path)).strip(), flush=True)
        results["import_seconds"] = round(time.perf_counter() - t0, 1)
        results["waiting_after_import"] = waiting(queue)
        print(f"imported in {results['import_seconds']} s; broker holds "
              f"{results['waiting_after_import']}", flush=True)
        samples = []
        while True:
            counts = embed_jobs(account_id)
            connections.close_all()
            now = round(time.perf_counter() - t0, 1)
            held = waiting(queue)
            samples.append([now, counts, held, round(cpu_seconds(worker), 1)])
            if not counts.get("queued") and not counts.get("running"):
                break
            if time.perf_counter() - t0 > 1800:
                raise TimeoutError(f"jobs not done after 30 minutes: {counts}")
            time.sleep(0.5)
        done_at, cpu_at_done = time.perf_counter(), cpu_seconds(worker)
        results["jobs_when_done"] = samples[-1][1]
        results["embedding_seconds"] = samples[-1][0]
        results["waiting_when_done"] = samples[-1][2]
        results["peak_waiting"] = max(sum(s[2].values()) for s in samples)
        print(f"every job finished after {samples[-1][0]} s: {samples[-1][1]}; broker holds "
              f"{samples[-1][2]} (peak {results['peak_waiting']})", flush=True)
        emptied = None
        while time.perf_counter() - done_at < args.after:
            if emptied is None and not waiting(queue).get("celery"):
                emptied = round(time.perf_counter() - done_at, 1)
            time.sleep(0.5)
        results["queue_empty_after_done_seconds"] = emptied
        results["waiting_after_more_seconds"] = {"seconds": args.after,
                                                 "waiting": waiting(queue)}
        results["worker_cpu_seconds_after_done"] = round(cpu_seconds(worker) - cpu_at_done, 1)
        results["worker_cpu_seconds_total"] = round(cpu_seconds(worker), 1)
        results["samples_every_5s"] = samples[::10]
        print(f"{args.after:.0f} s later: broker holds {waiting(queue)}; the worker used "
              f"{results['worker_cpu_seconds_after_done']} CPU s after the work was done "
              f"(queue empty after {emptied} s)", flush=True)
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
    out = write_result(args.out, {"quiet_at_start": quiet, **results})
    print(f"wrote {out}")
    from django.db import connections

    connections.close_all()
    server.release()


if __name__ == "__main__":
    main()
