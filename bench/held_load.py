"""The mixed load held against the embedded default, started the way the README says.

    python bench/held_load.py [--seconds 600] [--clients 50] [--rate 1.0] [--name held-load]
    python bench/held_load.py --sweep 0.5,1,2,3 --seconds 60   # where p95 passes 100 ms

`grove serve --port P` on a fresh data folder (its own PostgreSQL, worker and file
broker), an owner, one API key per client, 300 notes; then `bench/load.py`'s mix from
`--clients` clients for `--seconds`, each sending `--rate` requests per second (an
agent between steps; `--rate 0`: as fast as answers come). Reported: requests, errors
(a 5xx or a request without an answer), p50/p95/p99 per kind, and CPU seconds per part
(web, worker, PostgreSQL, the load itself) — what saturates first.

All clients come from 127.0.0.1 here, so the per-address limit (1,200 requests a minute,
meant for many addresses) is turned off; each client has its own key under the default
per-key limit (600 a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.common import write_result  # noqa: E402
from bench.load import Load, sentence  # noqa: E402
from bench.scaleout import GROVE, free_port  # noqa: E402

KEYS_SCRIPT = """
from grove.identity.services import connection_create_key
from grove.kernel.actor import Actor
from grove.models import Account
owner = Actor.for_session(Account.objects.get(username="owner").id)
for i in range({n}):
    print(connection_create_key(actor=owner, name=f"client {{i}}", personal=True,
                                all_notebooks=True).key)
"""


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GROVE_", "DATABASE_URL", "REDIS_URL", "DJANGO_"))}
    env.update({"GROVE_HOME": str(home), "GROVE_ADDRESS_RATE_LIMIT": "0"})
    return env


def grove(home: Path, *args: str, **extra: str) -> str:
    done = subprocess.run([*GROVE, *args], env={**env_for(home), **extra}, capture_output=True,
                          text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"grove {args[0]}: {done.stderr.strip()}")
    return done.stdout


def cpu_seconds(home: Path, serve_pid: int) -> dict[str, float]:
    """CPU time so far of each part: `grove serve` itself (the web process), what it
    started (the worker and the scheduler it forks), and the data folder's PostgreSQL
    (the postmaster named in postmaster.pid and its backends)."""
    tick = os.sysconf("SC_CLK_TCK")
    postmaster = int((home / "db" / "postmaster.pid").read_text().split()[0])
    parent: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick

    def under(pid: int, root: int) -> bool:
        while pid > 1:
            if pid == root:
                return True
            pid = parent.get(pid, 0)
        return False

    parts = {"web": used.get(serve_pid, 0.0), "worker": 0.0, "postgres": 0.0}
    for pid, seconds in used.items():
        if under(pid, postmaster):
            parts["postgres"] += seconds
        elif pid != serve_pid and under(pid, serve_pid):
            parts["worker"] += seconds
    return {part: round(value, 2) for part, value in parts.items()}


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent busy (all cores), from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def drained(home: Path, timeout: float = 600) -> float:
    import psycopg

    from grove.runtime.embedded import PORT, SUPERUSER, socket_dir

    started = time.monotonic()
    with psycopg.connect(host=str(socket_dir(home)), port=PORT, user=SUPERUSER,
                         dbname="grove", autocommit=True) as conn:
        while time.monotonic() - started < timeout:
            left = conn.execute("SELECT count(*) FROM grove_job "
                                "WHERE status IN ('queued', 'running')").fetchone()[0]
            if left == 0:
                return round(time.monotonic() - started, 1)
            time.sleep(1)
    return float("nan")


def run(*, seconds: float, clients: int, rates: list[float]) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="grove-held-", dir="/tmp"))  # noqa: S108
    home.chmod(0o711)
    port = free_port()
    log = home.parent / f"{home.name}.log"
    serve = None
    try:
        grove(home, "migrate", "--noinput")
        grove(home, "createsuperuser", "--noinput", DJANGO_SUPERUSER_USERNAME="owner",
              DJANGO_SUPERUSER_PASSWORD="a long enough passphrase 42",  # noqa: S106
              DJANGO_SUPERUSER_EMAIL="owner@example.com")
        keys = [word for word in grove(home, "shell", "-c", KEYS_SCRIPT.format(n=clients)).split()
                if word.startswith("grv_")]
        assert len(keys) == clients, keys
        with log.open("w") as out:
            serve = subprocess.Popen([*GROVE, "serve", "--port", str(port)], env=env_for(home),
                                     stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while "Grove is running" not in log.read_text():
            if serve.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(log.read_text())
            time.sleep(0.2)
        import random

        rng = random.Random(3)  # noqa: S311 - made-up note text
        with httpx.Client(base_url=url, timeout=30,
                          headers={"Authorization": f"Bearer {keys[0]}"}) as http:
            for _ in range(300):
                saved = http.post("/v1/notes", json={"content": sentence(rng), "kind": "fact"})
                assert saved.status_code == 201, saved.text
        drained(home)
        rounds = []
        for rate in rates:
            cpu_before = cpu_seconds(home, serve.pid)
            own_before = resource.getrusage(resource.RUSAGE_SELF)
            busy_before = machine_busy_seconds()
            result = Load(url, keys, clients=clients, seconds=seconds,
                          rate=rate or None).run()
            cpu_after = cpu_seconds(home, serve.pid)
            own_after = resource.getrusage(resource.RUSAGE_SELF)
            cpu = {part: round(cpu_after[part] - cpu_before[part], 1) for part in cpu_after}
            cpu["load_clients"] = round(own_after.ru_utime + own_after.ru_stime
                                        - own_before.ru_utime - own_before.ru_stime, 1)
            # Whatever else ran on the machine meanwhile (other sessions' tests, say).
            cpu["everything_else"] = round(machine_busy_seconds() - busy_before
                                           - sum(cpu.values()), 1)
            rounds.append({"rate_per_client": rate, "load": result.summary(),
                           "cpu_seconds": cpu,
                           "cpu_share_of_2_cores": {part: round(value / (2 * result.seconds), 3)
                                                    for part, value in cpu.items()},
                           "backlog_drained_after_s": drained(home)})
            print(json.dumps(rounds[-1], indent=2), flush=True)
        return {"clients": clients, "seconds": seconds, "rounds": rounds,
                "serve_exited": serve.poll()}
    finally:
        if serve is not None:
            serve.terminate()
            serve.wait(60)
        shutil.rmtree(home, ignore_errors=True)
        log.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rate", type=float, default=1.0)
    parser.add_argument("--sweep", default="", help="rates per client, e.g. 0.5,1,2,4")
    parser.add_argument("--name", default="held-load")
    args = parser.parse_args()
    rates = [float(r) for r in args.sweep.split(",")] if args.sweep else [args.rate]
    figures = run(seconds=args.seconds, clients=args.clients, rates=rates)
    print(f"wrote {write_result(args.name, figures)}")


if __name__ == "__main__":
    main()
