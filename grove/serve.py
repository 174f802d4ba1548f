"""`grove serve`: database (embedded or external), migrations, then the ASGI server.

Only one `grove serve` may run per data folder (an exclusive lock on
`$GROVE_HOME/run/serve.lock`); a second one exits with a clear message. Ctrl-C or
SIGTERM shuts the web server down gracefully and then stops the embedded database if
this process started (or adopted) it.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import subprocess
import sys
import time
from types import FrameType
from typing import TYPE_CHECKING

from grove.config import Config, ConfigError

if TYPE_CHECKING:
    from grove.embedded import EmbeddedPostgres


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


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop()


def _die_with_parent() -> None:
    """In the worker, before exec: get SIGTERM if `grove serve` dies, even by SIGKILL,
    so no orphaned worker keeps the database busy (Linux prctl PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def _start_worker(config: Config) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "grove", "worker", "--with-beat"],
        env={**os.environ, "GROVE_HOME": str(config.home)},
        # Its own process group: Ctrl-C in the terminal reaches only `grove serve`,
        # which then stops the worker in order (jobs first, database last).
        start_new_session=True,
        preexec_fn=_die_with_parent,  # noqa: PLW1509 - no threads exist yet at this point
    )


def _stop_worker(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)  # Celery's warm shutdown: finish current jobs
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


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
    worker: subprocess.Popen[bytes] | None = None
    try:
        if config.embedded:
            from grove.embedded import EmbeddedPostgres

            server = EmbeddedPostgres(config.home)
            server.ensure_running(take_over=True, restart_stale=True)

        import django

        django.setup()
        from django.core.management import call_command

        from grove import dbroles

        dbroles.check_reachable("default")
        dbroles.check_pgvector("default")
        if not args.no_migrate:
            dbroles.check_migration_roles()
            dbroles.check_reachable("owner")
            call_command("migrate", database="owner", interactive=False, verbosity=0)
        dbroles.check_runtime_role("default")
        from grove.embeddings.profile import check_embedding_profile

        check_embedding_profile()
        if config.embedded:
            # The embedded default runs its background jobs too: one worker process
            # with the periodic scheduler built in (the filesystem broker needs no Redis).
            worker = _start_worker(config)

        import uvicorn

        url = served_url(args.host, args.port) + "/"

        class Server(uvicorn.Server):
            async def startup(self, sockets: list | None = None) -> None:
                await super().startup(sockets=sockets)
                if self.started:  # listening: only now is the URL true
                    print(f"Grove is running at {url}  (data: {config.home})", flush=True)
                    if notice:
                        print(notice, flush=True)
                    print("Press Ctrl-C to stop.", flush=True)

        web = Server(uvicorn.Config(
            "grove.asgi:application", host=args.host, port=args.port, lifespan="off",
            log_level="warning", access_log=False, timeout_graceful_shutdown=10,
        ))
        try:
            web.run()
        except SystemExit:
            pass  # uvicorn exits this way when it cannot bind; reported below
        if not web.started:
            bind = f"[{args.host}]" if ":" in args.host else args.host
            print(f"grove: error: cannot listen on {bind}:{args.port} (address in use?)",
                  file=sys.stderr)
            return 1
        return 0
    except ConfigError as exc:
        print(f"grove: error: {exc}", file=sys.stderr)
        return 2
    except (_Stop, KeyboardInterrupt):
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if worker is not None:
            _stop_worker(worker)
        if server is not None:
            from django.db import connections

            connections.close_all()
            _release_database(server)
        print("Grove stopped.", flush=True)
        os.close(lock_fd)
