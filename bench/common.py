"""Shared plumbing for the benchmarks: a fresh private embedded PostgreSQL per run, a
Django environment on it, an account, bulk helpers and percentile/table printing.

    from bench.common import Env
    env = Env.fresh("quality")        # /tmp/grove-bench-quality, wiped first
    ...                               # Django is set up; env.actor acts as the account
    env.close()                       # also registered with atexit
"""

from __future__ import annotations

import atexit
import json
import os
import platform
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
CACHE = Path("/tmp/grove-bench-cache")  # noqa: S108 - derived data only (doc vectors)
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": cpu, "mem_gb": mem_gb,
            "python": platform.python_version(), "platform": platform.platform()}


def _stop_stale(home: Path) -> None:
    """A previous run that was killed may have left its server running in `home`."""
    from grove.runtime.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(home)
    if server.is_running():
        server._prepare()  # noqa: SLF001 - bench-only cleanup of our own scratch server
        server._stop_server()  # noqa: SLF001


@dataclass
class Env:
    home: Path
    server: Any
    account_id: uuid.UUID
    actor: Any
    closed: bool = False
    quiet: dict[str, float] = field(default_factory=dict)
    contention: Contention | None = None

    @classmethod
    def fresh(cls, name: str, *, username: str = "bench") -> Env:
        quiet = wait_for_quiet()
        home = Path(f"/tmp/grove-bench-{name}")  # noqa: S108 - private scratch folder
        if home.exists():
            _stop_stale(home)
            shutil.rmtree(home)
        home.mkdir(mode=0o711)
        home.chmod(0o711)
        os.environ["GROVE_HOME"] = str(home)
        os.environ["DJANGO_SETTINGS_MODULE"] = "grove.settings"
        os.environ.pop("REDIS_URL", None)  # the filesystem broker under GROVE_HOME
        from grove.runtime.embedded import EmbeddedPostgres

        server = EmbeddedPostgres(home)
        server.ensure_running()
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", database="owner", verbosity=0)
        from grove.embeddings.profile import check_embedding_profile

        check_embedding_profile()
        from grove.kernel.actor import Actor
        from grove.models import Account

        account = Account.objects.create_user(username=username,
                                              password=uuid.uuid4().hex)  # noqa: S106
        env = cls(home=home, server=server, account_id=account.id,
                  actor=Actor.for_session(account.id), quiet=quiet)
        env.contention = Contention(server.server_pid)
        atexit.register(env.close)
        return env

    @classmethod
    def kept(cls, name: str, *, username: str = "bench") -> tuple[Env, bool]:
        """A bench home kept between runs (for iterating on one large corpus): opened
        as it is when a run finished loading it (`mark_loaded`), else made afresh.
        Returns the env and whether its data is already there; migrations are applied
        either way."""
        home = Path(f"/tmp/grove-bench-{name}")  # noqa: S108 - private scratch folder
        if not (home / "loaded").exists():
            return cls.fresh(name, username=username), False
        quiet = wait_for_quiet()
        _stop_stale(home)
        os.environ["GROVE_HOME"] = str(home)
        os.environ["DJANGO_SETTINGS_MODULE"] = "grove.settings"
        os.environ.pop("REDIS_URL", None)
        from grove.runtime.embedded import EmbeddedPostgres

        server = EmbeddedPostgres(home)
        server.ensure_running()
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", database="owner", verbosity=0)
        from grove.kernel.actor import Actor
        from grove.models import Account

        account = Account.objects.get(username=username)
        env = cls(home=home, server=server, account_id=account.id,
                  actor=Actor.for_session(account.id), quiet=quiet)
        env.contention = Contention(server.server_pid)
        atexit.register(env.close)
        return env, True

    def mark_loaded(self) -> None:
        (self.home / "loaded").write_text(time.strftime("%Y-%m-%dT%H:%M:%S"))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        from django.db import connections

        connections.close_all()
        self.server.release()

    # -- database helpers --------------------------------------------------------------

    def owner_sql(self, *statements: str, autocommit: bool = True) -> None:
        """Run statements as the schema owner (ANALYZE, VACUUM, index builds)."""
        from django.db import connections

        conn = connections["owner"]
        conn.ensure_connection()
        raw = conn.connection
        previous = raw.autocommit
        if autocommit and not previous:
            raw.autocommit = True
        try:
            with raw.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)
        finally:
            if autocommit and not previous:
                raw.autocommit = previous

    def refresh_stats(self) -> int:
        """Lexeme statistics for recall's lexical arm, then planner statistics."""
        from grove.kernel.actor import Actor
        from notebooks.services.term_stats import term_stats_refresh

        counted = term_stats_refresh(actor=Actor.system(self.account_id))
        self.owner_sql("VACUUM ANALYZE notebooks_note", "VACUUM ANALYZE notebooks_noteembedding",
                       "VACUUM ANALYZE passages_passage", "VACUUM ANALYZE passages_passagevector",
                       "VACUUM ANALYZE notebooks_termstat", "ANALYZE")
        return counted

    def drain_jobs(self, kind: str = "embed") -> tuple[int, float]:
        """Run embedding jobs in-process until none is left: (jobs done, seconds)."""
        from grove.kernel import jobs

        started = time.perf_counter()
        done = 0
        while True:
            n = jobs.run_batch(account_id=self.account_id, kind=kind)
            if n == 0 and not self.queued_jobs(kind):
                break
            done += n
        return done, time.perf_counter() - started

    def queued_jobs(self, kind: str = "embed") -> int:
        from grove.kernel.tenancy import tenant
        from grove.models import Job

        with tenant(self.account_id):
            return Job.objects.filter(kind=kind, status=Job.Status.QUEUED).count()


# -- other load on the machine ---------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, float]]:
    """pid → (parent pid, CPU seconds used so far)."""
    tick = os.sysconf("SC_CLK_TCK")
    table: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        table[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    return table


def _cpu_busy(seconds: float = 2.0) -> float:
    def snap() -> tuple[int, int]:
        with open("/proc/stat") as fh:
            values = [int(v) for v in fh.readline().split()[1:]]
        idle = values[3] + values[4]
        return sum(values) - idle, sum(values)

    busy0, total0 = snap()
    time.sleep(seconds)
    busy1, total1 = snap()
    return (busy1 - busy0) / max(total1 - total0, 1)


class Contention:
    """CPU time used during a run by processes that are neither this process (and its
    children, e.g. a worker) nor the benchmark's PostgreSQL server and its backends —
    other work sharing the cores, which the numbers then include."""

    def __init__(self, server_pid: Callable[[], int | None]):
        import threading

        self._server_pid = server_pid
        self._seen: dict[int, float] = {}
        self._first: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.started = time.perf_counter()
        self._sample()
        self._thread.start()

    def _ours(self, pid: int, table: dict[int, tuple[int, float]], roots: set[int]) -> bool:
        for _ in range(64):
            if pid in roots:
                return True
            if pid not in table or pid <= 1:
                return False
            pid = table[pid][0]
        return False

    def _sample(self) -> None:
        table = _proc_table()
        roots = {os.getpid()}
        server = self._server_pid()
        if server:
            roots.add(server)
        initial = not self._first
        for pid, (_, cpu) in table.items():
            if self._ours(pid, table, roots):
                continue
            # Present at the start: count from now on; started later: count all of it.
            self._first.setdefault(pid, cpu if initial else 0.0)
            self._seen[pid] = cpu
        if initial and not self._first:
            self._first[-1] = 0.0  # nothing foreign at the start: mark the first sample
            self._seen[-1] = 0.0

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            self._sample()

    def snapshot(self) -> tuple[float, float]:
        """(seconds since the start, foreign CPU seconds so far), without stopping: the
        load during one phase of a run is the difference of two snapshots."""
        self._sample()
        foreign = sum(max(self._seen[p] - self._first[p], 0.0) for p in self._seen)
        return time.perf_counter() - self.started, foreign

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        self._sample()
        wall = time.perf_counter() - self.started
        foreign = sum(max(self._seen[p] - self._first[p], 0.0) for p in self._seen)
        return {"wall_seconds": round(wall, 1), "foreign_cpu_seconds": round(foreign, 1),
                "foreign_cores_mean": round(foreign / wall, 3) if wall else 0.0}


def wait_for_quiet(*, threshold: float = 0.15, max_wait: float | None = None) -> dict[str, float]:
    """Wait (up to max_wait, default $BENCH_QUIET_WAIT or 600 s) until the machine's CPUs
    are mostly idle; report what we saw."""
    if max_wait is None:
        max_wait = float(os.environ.get("BENCH_QUIET_WAIT", "600"))
    started = time.perf_counter()
    busy = _cpu_busy()
    while busy > threshold and time.perf_counter() - started < max_wait:
        print(f"waiting for a quiet machine: CPUs {busy:.0%} busy", flush=True)
        time.sleep(10)
        busy = _cpu_busy()
    return {"cpu_busy_at_start": round(busy, 3),
            "waited_seconds": round(time.perf_counter() - started, 1)}


# -- text ------------------------------------------------------------------------------------


def truncate_words(text: str, limit: int = 6000) -> str:
    """At most `limit` characters, cut at a word boundary, trimmed (note content rules)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.strip()


# -- statistics and output -------------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (numpy's default), values in any order."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary_ms(seconds: Iterable[float]) -> dict[str, float]:
    ms = [s * 1000 for s in seconds]
    return {"n": len(ms), "p50": round(percentile(ms, 50), 2), "p95": round(percentile(ms, 95), 2),
            "p99": round(percentile(ms, 99), 2), "mean": round(statistics.fmean(ms), 2),
            "max": round(max(ms), 2)}


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"
            for r in cells]
    return "\n".join([line, rule, *body])


def code_version() -> dict[str, Any]:
    """Which Grove code was measured: HEAD, uncommitted changes, the recall module's hash."""
    import hashlib
    import subprocess

    def git(*args: str) -> str:
        result = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,  # noqa: S603,S607
                                check=False)
        return result.stdout.strip()

    recall = ROOT / "notebooks" / "selectors" / "recall.py"
    return {
        "head": git("rev-parse", "--short", "HEAD"),
        "uncommitted": [line for line in git("status", "--porcelain", "--", "grove",
                                             "notebooks").splitlines() if line],
        "recall_py_sha256": hashlib.sha256(recall.read_bytes()).hexdigest()[:12],
    }


CODE_AT_START = code_version()


def write_result(name: str, payload: dict[str, Any], env: Env | None = None) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"benchmark": name, "machine": machine(), "code_at_start": CODE_AT_START,
               "code_at_end": code_version(),
               "other_load": {**(env.quiet if env else {}),
                              **(env.contention.stop() if env and env.contention else {})},
               "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **payload}
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path
