"""`grove serve`: database (embedded or external), migrations, then the ASGI server.

Only one `grove serve` may run per data folder (an exclusive lock on
`$GROVE_HOME/run/serve.lock`); a second one exits with a clear message. Ctrl-C or
SIGTERM shuts the web server down gracefully and then stops the embedded database if
this process started (or adopted) it.

On the embedded default a supervisor thread watches what `grove serve` started — the
database server and the worker — and restarts either when it dies, with a growing
delay. A part that fails more than `MAX_RESTARTS` times within `RESTART_WINDOW`
seconds is given up on: `grove serve` says what failed, stops everything and exits
with status 1, so a service manager (or a human) sees the failure instead of a site
that answers 503 or never runs its background jobs.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING

from grove.runtime.config import Config, ConfigError

if TYPE_CHECKING:
    from grove.runtime.embedded import EmbeddedPostgres


class _Stop(Exception):
    pass


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="grove serve", description="Run Grove.")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on")
    parser.add_argument(
        "--no-migrate", action="store_true", help="do not apply migrations at start"
    )
    args = parser.parse_args(argv)
    if not 0 < args.port < 65536:
        parser.error(f"--port {args.port} is not a TCP port")
    return args


WILDCARD_HOSTS = {"0.0.0.0", "::", ""}  # noqa: S104 - names, not a bind


def served_url(host: str, port: int) -> str:
    """The URL of the address `grove serve` listens on (a wildcard address is reached
    through the loopback one on this machine)."""
    if host in WILDCARD_HOSTS:
        host = "::1" if host == "::" else "127.0.0.1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def public_url(config: Config, host: str, port: int) -> tuple[str, str | None]:
    """(the base URL to run with, a one-line notice for the terminal or None).

    Unset, `GROVE_BASE_URL` follows the address served, so the 401 challenge, the OAuth
    metadata, approval and share links and the MCP Origin check all name the server a
    client actually reaches. Set, it wins (a proxy in front knows the public name) and
    the terminal is told when it is not the address served."""
    served = served_url(host, port)
    if "GROVE_BASE_URL" not in config.sources:
        notice = None
        if host in WILDCARD_HOSTS:
            notice = (f"grove: listening on every address; links name {served} — set "
                      "GROVE_BASE_URL to the address people and agents use")
        return served, notice
    if config.base_url.rstrip("/") == served:
        return config.base_url, None
    return config.base_url, (f"grove: GROVE_BASE_URL is {config.base_url}, this server "
                             f"listens on {served}; links and OAuth name the base URL")


def _take_serve_lock(config: Config) -> int:
    run_dir = config.home / "run"
    run_dir.mkdir(mode=0o700, exist_ok=True)
    path = run_dir / "serve.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise ConfigError(
            f"another `grove serve` (pid {holder}) is already using {config.home}; "
            "stop it first, or set GROVE_HOME to another data folder"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


MAX_CONNECTIONS = 1024


def close_connections() -> None:
    """Close this process's database connections, the pooled ones included (closing a
    connection only hands it back to the pool)."""
    from django.db import connections

    connections.close_all()
    for connection in connections.all(initialized_only=True):
        close_pool = getattr(connection, "close_pool", None)
        if close_pool is not None:
            close_pool()


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop()


PARENT_ENV = "GROVE_SERVE_PID"  # set in the worker's environment: the `grove serve` to die with
# The kernel's word that `grove serve` died: a signal of its own, so the worker can tell
# it from the SIGTERM of a normal stop.
PARENT_DIED = signal.SIGUSR2
_orphaned: dict[str, int] = {}  # in the worker, once told: {"parent": pid of `grove serve`}


def die_with_parent() -> None:
    """In the worker, first thing: be told when `grove serve` dies, even by SIGKILL, and
    stop, so no orphaned worker keeps the database busy (Linux prctl PR_SET_PDEATHSIG).
    Set by the worker itself — no code runs between fork and exec in a threaded parent —
    and checked against a parent that died before it was set."""
    parent = os.environ.pop(PARENT_ENV, "")
    if not parent.isdigit():
        return

    def orphaned(signum: int, frame: FrameType | None) -> None:
        if "parent" in _orphaned:
            return  # told again as each thread left of `grove serve` exits
        _orphaned["parent"] = int(parent)
        os.kill(os.getpid(), signal.SIGTERM)  # the normal way out: jobs finish first

    signal.signal(PARENT_DIED, orphaned)
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, PARENT_DIED)
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):
        orphaned(PARENT_DIED, None)


def outlive_parent(seconds: float = 15) -> None:
    """In a worker leaving because `grove serve` died: wait until it is gone. The kernel
    tells the worker as soon as the thread that started it exits, while the rest of
    `grove serve` may still be dying; released before that, the database would still
    seem to have a live owner, and be left running with nobody to stop it."""
    parent = _orphaned.get("parent")
    if parent is None:
        return  # stopped by `grove serve` itself, which then stops the database
    from grove.runtime.pg_host import process_alive

    deadline = time.monotonic() + seconds
    while process_alive(parent) and time.monotonic() < deadline:
        time.sleep(0.05)


def _start_worker(config: Config) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "grove", "worker", "--with-beat"],
        env={**os.environ, "GROVE_HOME": str(config.home), PARENT_ENV: str(os.getpid())},
        # Its own process group (with the scheduler process it forks): Ctrl-C in the
        # terminal reaches only `grove serve`, which then stops the worker in order (jobs
        # first, database last), and whatever the worker leaves is found by its group.
        start_new_session=True,
    )


def _kill_group(worker: subprocess.Popen[bytes]) -> None:
    """What is left of a stopped worker's process group (the periodic scheduler it
    forked outlives a worker killed with SIGKILL, and would schedule twice)."""
    try:
        os.killpg(worker.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_worker(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)  # Celery's warm shutdown: finish current jobs
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    _kill_group(worker)


def _why(worker: subprocess.Popen[bytes]) -> str:
    code = worker.returncode
    if code is not None and code < 0:
        return f"signal {-code}"
    return f"exit code {code}"


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


RESTART_WINDOW = 60.0  # seconds in which the failures of one part are counted
MAX_RESTARTS = 3  # restarts allowed within the window; one failure more gives up
MAX_DELAY = 8  # seconds; the delay before a restart doubles from 1 s up to this
CHECK_EVERY = 0.25  # seconds between looks


class Supervisor(threading.Thread):
    """Starts the worker, watches it and the embedded database, and restarts whichever
    dies: after 1 s, then 2 s, 4 s … while failures of that part (deaths, failed
    starts) accumulate within RESTART_WINDOW. One failure more than MAX_RESTARTS in the
    window gives up: the failure is said and `give_up` is called (`grove serve` then
    stops everything and exits with status 1).

    The worker is started, restarted and stopped from this thread only: the kernel's
    parent-death signal follows the thread that started a process."""

    def __init__(self, config: Config, server: EmbeddedPostgres | None,
                 give_up: Callable[[], None]):
        super().__init__(name="grove-supervisor", daemon=True)
        self.config = config
        self.server = server
        self.worker: subprocess.Popen[bytes] | None = None
        self.failure: str | None = None
        self._give_up = give_up
        self._stopping = threading.Event()
        self._started = threading.Event()
        self._failures: dict[str, deque[float]] = {"database": deque(), "worker": deque()}
        self._postmaster = server.server_pid() if server is not None else None

    def start_worker(self) -> None:
        """Start the thread and wait until the first worker runs."""
        self.start()
        self._started.wait()

    def stop(self) -> None:
        """Stop watching, then stop the worker (jobs finish first); returns when done."""
        self._stopping.set()
        if self.is_alive():
            self.join()

    def run(self) -> None:
        try:
            self._new_worker()
        except OSError as exc:  # not even started: nothing to watch over
            self.failure = f"the worker did not start: {exc}"
            _say(f"grove: error: {self.failure}; stopping Grove")
            self._give_up()
            return
        finally:
            self._started.set()
        try:
            while not self._stopping.wait(CHECK_EVERY):
                try:
                    self._check()
                except Exception as exc:  # noqa: BLE001 - the watch must go on
                    _say(f"grove: the supervisor met an error: {exc!r}")
        finally:
            if self.worker is not None:
                _stop_worker(self.worker)

    def _new_worker(self) -> str:
        self.worker = _start_worker(self.config)
        if self.server is not None:
            self.server.own_pids.add(self.worker.pid)
        return f"pid {self.worker.pid}"

    def _restart_database(self) -> str:
        assert self.server is not None
        self.server.ensure_running(take_over=True)
        return f"pid {self.server.server_pid()}"

    def _check(self) -> None:
        if self.server is not None and not self.server.is_running():
            # Database first: a worker started meanwhile would start it on its own.
            if not self._heal("database", f"its server process {self._postmaster} is gone",
                              self._restart_database):
                return
        if self.server is not None:
            self._postmaster = self.server.server_pid()
        worker = self.worker
        if worker is not None and worker.poll() is not None:
            _kill_group(worker)
            self._heal("worker", _why(worker), self._new_worker)

    def _count_failure(self, part: str) -> int:
        failures = self._failures[part]
        now = time.monotonic()
        failures.append(now)
        while now - failures[0] > RESTART_WINDOW:
            failures.popleft()
        return len(failures)

    def _heal(self, part: str, why: str, restart: Callable[[], str]) -> bool:
        """Restart a part that died; False if given up on or stopping meanwhile. A start
        that fails counts as another failure."""
        line = f"grove: the {part} stopped ({why})"
        while True:
            failures = self._count_failure(part)
            if failures > MAX_RESTARTS:
                self.failure = (f"the {part} failed {failures} times within "
                                f"{RESTART_WINDOW:.0f} s (last: {why})")
                _say(f"grove: error: {self.failure}; giving up, stopping Grove")
                self._stopping.set()
                self._give_up()
                return False
            delay = min(2 ** (failures - 1), MAX_DELAY)
            _say(f"{line}; restarting it in {delay} s")
            if self._stopping.wait(delay):
                return False
            try:
                running = restart()
            except (ConfigError, OSError) as exc:
                why = f"it did not start: {exc}"
                line = f"grove: the {part} did not start again ({exc})"
                continue
            _say(f"grove: the {part} is running again ({running})")
            return True


def _release_database(server: EmbeddedPostgres) -> None:
    """Stop the embedded server — after giving other grove commands still connected to
    it (a `grove shell`, a migration) a few seconds to finish; if they do not, leave it
    to them: the last grove command to exit stops it."""
    deadline = time.monotonic() + 10
    while server._client_backends() and time.monotonic() < deadline:
        time.sleep(0.2)
    server.release()
    if server.is_running():
        print("grove: the database keeps running for other grove commands still "
              "connected; the last of them stops it", file=sys.stderr, flush=True)


def serve(config: Config, argv: list[str]) -> int:
    args = _parse(argv)
    base_url, notice = public_url(config, args.host, args.port)
    # Read by Django's settings (loaded below) and inherited by the worker.
    os.environ["GROVE_BASE_URL"] = base_url
    try:
        lock_fd = _take_serve_lock(config)
    except ConfigError as exc:
        print(f"grove: error: {exc}", file=sys.stderr)
        return 1

    # uvicorn installs its own handlers while it runs and re-raises the signal through
    # the previous handler afterwards: make that previous handler ours, not the default
    # (which would kill the process before the database is stopped).
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)

    server = None
    supervisor: Supervisor | None = None
    try:
        if config.embedded:
            from grove.runtime.embedded import EmbeddedPostgres

            server = EmbeddedPostgres(config.home)
            server.ensure_running(take_over=True, restart_stale=True)

        import django

        django.setup()
        from django.core.management import call_command

        from grove.runtime import dbroles

        dbroles.check_reachable("default")
        dbroles.check_pgvector("default")
        if not args.no_migrate:
            dbroles.check_migration_roles()
            dbroles.check_reachable("owner")
            call_command("migrate", database="owner", interactive=False, verbosity=0)
        dbroles.check_runtime_role("default")
        from grove.embeddings.profile import check_embedding_profile

        check_embedding_profile()

        close_connections()  # the checks' connections; requests open their own

        import uvicorn

        url = served_url(args.host, args.port) + "/"

        class Server(uvicorn.Server):
            async def startup(self, sockets: list | None = None) -> None:
                await super().startup(sockets=sockets)
                if self.started:  # listening: only now is the URL true
                    if supervisor is not None:  # and only now is a worker wanted
                        supervisor.start_worker()
                    print(f"Grove is running at {url}  (data: {config.home})", flush=True)
                    if notice:
                        print(notice, flush=True)
                    print("Press Ctrl-C to stop.", flush=True)

        web = Server(uvicorn.Config(
            "grove.asgi:application", host=args.host, port=args.port, lifespan="off",
            log_level="warning", access_log=False, timeout_graceful_shutdown=10,
            # The scope's client stays the peer: whose forwarded header to believe is
            # Grove's one rule (GROVE_TRUSTED_PROXIES, grove.kernel.addresses), not
            # uvicorn's, which would believe X-Forwarded-For from any local process.
            proxy_headers=False,
            # A hard cap on open connections (beyond it: 503 at once); requests inside
            # it are bounded and queued by grove.interfaces.limits.
            limit_concurrency=MAX_CONNECTIONS,
        ))
        if config.embedded:
            # The embedded default runs its background jobs too: one worker process
            # with the periodic scheduler built in (the filesystem broker needs no Redis),
            # watched with the database by the supervisor.
            def give_up() -> None:
                web.should_exit = True

            supervisor = Supervisor(config, server, give_up)  # started once listening
        try:
            web.run()
        except SystemExit:
            pass  # uvicorn exits this way when it cannot bind; reported below
        if not web.started:
            bind = f"[{args.host}]" if ":" in args.host else args.host
            print(f"grove: error: cannot listen on {bind}:{args.port} (address in use?)",
                  file=sys.stderr)
            return 1
        return 1 if supervisor is not None and supervisor.failure else 0
    except ConfigError as exc:
        print(f"grove: error: {exc}", file=sys.stderr)
        return 2
    except (_Stop, KeyboardInterrupt):
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if supervisor is not None:
            supervisor.stop()
        if server is not None:
            close_connections()
            _release_database(server)
        print("Grove stopped.", flush=True)
        os.close(lock_fd)
