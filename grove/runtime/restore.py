"""`grove restore PATH` (issue 23): a backup (`grove.runtime.backup`) into a new or empty
data folder.

The `grove` command runs this before it loads the configuration, because loading it
creates the data folder and a secret key: the folder (`GROVE_HOME`) must not exist or
be empty, else the restore refuses and touches nothing. Then, in order:

1. the whole file is read and every checksum checked (`backup_file.read_backup`), the
   secret key the restored Grove will run with is checked against the one the backup
   was made with, and every app and migration it records must be known here — nothing
   is created before these pass. The file stays open: the dump is loaded from that one
   file descriptor, checked again as it streams (`Backup.copy_dump`);
2. the backup's `secret_key` and `grove.toml` are written into the folder (0600);
3. the database: on the embedded default a new server is made in the folder (initdb, the
   two roles, the `vector` extension) and `pg_restore` loads the dump as its superuser;
   with `DATABASE_URL` the target database's public schema must hold nothing but
   extensions, and it is loaded as GROVE_MIGRATE_DATABASE_URL's role (the schema owner)
   or `--database-url`'s.
   Always in one transaction (`--single-transaction --exit-on-error`), leaving out the
   extensions the target already has (the `vector` extension exists and only a
   superuser may comment on it);
4. `grove migrate`, so a backup made by an older Grove is brought up to date (it also
   grants the runtime role its rights and stores the tenant keys, as after any migrate).

If anything fails after step 2, what this restore made is removed again: the folder is
as empty as it was, and an external database as it was (`undo_statement`); should that
fail too, the error says what is left and the one statement that removes it. Every
failure is one line, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from grove.runtime.backup_file import (
    SECRET_KEY_FILE,
    SETTINGS_FILE,
    Backup,
    BackupError,
    read_backup,
    secret_key_check,
)
from grove.runtime.config import ConfigError, grove_home

if TYPE_CHECKING:
    from grove.runtime.backup import PgTarget

# pg_restore -l lines of an extension and of its comment ("2; 3079 16715 EXTENSION -
# vector" and "3683; 0 0 COMMENT - EXTENSION vector").
_EXTENSION_ENTRY = re.compile(r"^\d+; \d+ \d+ (?:EXTENSION - |COMMENT - EXTENSION )(\S+)")
# Index builds (HNSW over the vectors above all) want more than the default 64 MB.
RESTORE_PGOPTIONS = "-c maintenance_work_mem=256MB"
# The apps whose migrations a Grove database records, by label, and their packages (no
# settings here: loading them would create the data folder; a test keeps this equal to
# Django's list). A backup that names another app comes from a newer Grove.
MIGRATING_APPS = {"grove": "grove", "passages": "passages", "links": "links",
                  "notebooks": "notebooks",
                  "ask": "ask", "sharing": "sharing", "auth": "django.contrib.auth",
                  "contenttypes": "django.contrib.contenttypes",
                  "sessions": "django.contrib.sessions", "oauth2_provider": "oauth2_provider"}
# Every object in the public schema that belongs to no extension (an extension's own
# objects, extensions themselves, and what is part of another object — an identity
# sequence, a range type's constructors — are left out), named as DROP takes them:
# tables, views and sequences first (their indexes, constraints, triggers and policies
# go with them), then functions, types and the rest.
_OWN_OBJECTS = (
    "SELECT o.type, o.identity FROM pg_depend d, pg_identify_object(d.classid, d.objid, 0) o"
    " WHERE d.refclassid = 'pg_namespace'::regclass AND d.refobjid = 'public'::regnamespace"
    " AND d.deptype = 'n' AND d.classid <> 'pg_extension'::regclass AND NOT EXISTS (SELECT"
    " FROM pg_depend e WHERE e.classid = d.classid AND e.objid = d.objid"
    " AND e.deptype IN ('e', 'i')) ORDER BY d.classid <> 'pg_class'::regclass,"
    " o.type = 'sequence', o.identity")
# Who may do what in the public schema: 'grantee oid:privilege' (an unset ACL is its
# default, so granting something does not look like granting the owner's rights).
_SCHEMA_RIGHTS = (
    "SELECT a.grantee::oid::text || ':' || a.privilege_type, CASE a.grantee WHEN 0 THEN"
    " 'PUBLIC' ELSE a.grantee::regrole::text END, a.privilege_type FROM pg_namespace n,"
    " aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a"
    " WHERE n.nspname = 'public'")


def arguments(parser: Any) -> None:
    parser.add_argument("path", help="the backup file written by `grove backup`")
    parser.add_argument(
        "--database-url",
        help="with DATABASE_URL only: restore as this role (default: GROVE_MIGRATE_DATABASE_URL's,"
             " the schema owner)")


@dataclass(frozen=True)
class RestoreResult:
    home: Path
    database: str
    backup: Backup
    migrations_applied: int
    seconds: float
    notices: list[str]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="grove restore",
        description="Restore a `grove backup` file into a new or empty data folder "
                    "(GROVE_HOME).")
    arguments(parser)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)  # so the clean-up below runs
    try:
        result = restore(Path(args.path).expanduser().absolute(),
                         database_url=args.database_url)
    except (BackupError, ConfigError) as exc:
        print(f"grove: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("grove: restore interrupted; what it had made was removed", file=sys.stderr)
        return 130
    except Exception as exc:  # anything unforeseen: still one line, never a traceback
        print(f"grove: error: restore failed: {_why(exc)}; what it had made was removed",
              file=sys.stderr)
        return 1
    from grove.runtime.backup import counted, human_size

    manifest = result.backup.manifest
    counts = manifest.get("counts", {})
    print(f"restored {result.backup.path} ({human_size(result.backup.size)}, made "
          f"{manifest.get('created_at')} by Grove {manifest.get('grove_version')}) into "
          f"{result.home} ({result.database})")
    print(f"{counted(counts.get('notes', 0), 'note')}, "
          f"{counted(counts.get('accounts', 0), 'account')}, "
          f"{counted(manifest.get('database', {}).get('tables', 0), 'table')}; "
          f"{counted(result.migrations_applied, 'migration')} applied; "
          f"{result.seconds:.1f} s")
    for notice in result.notices:
        print(notice)
    return 0


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _why(exc: BaseException) -> str:
    from grove.runtime.pg_host import first_line

    if isinstance(exc, BackupError | ConfigError):
        return str(exc)
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        return "interrupted"
    return f"{type(exc).__name__}: {first_line(exc)}"


def require_empty(home: Path) -> None:
    if home.is_symlink() or (home.exists() and not home.is_dir()):
        raise BackupError(f"GROVE_HOME {home}: is not a folder")
    try:
        occupied = home.exists() and any(home.iterdir())
    except OSError as exc:
        raise BackupError(f"GROVE_HOME {home}: cannot be read ({exc.strerror})") from None
    if occupied:
        raise BackupError(f"GROVE_HOME {home} is not empty; a backup is restored only into a "
                          "new or empty data folder (nothing was changed)")


def check_secret_key(backup: Backup) -> None:
    """The restored Grove must run with the secret key the backup was made with: API
    keys, share links and the database's tenant keys are derived from it. It is in the
    backup unless it came from GROVE_SECRET_KEY; GROVE_SECRET_KEY, when set, wins."""
    record = backup.manifest.get("secret_key") or {}
    expected, stored_in = record.get("check"), record.get("stored_in")
    from_env = os.environ.get("GROVE_SECRET_KEY") or ""
    try:
        settings = tomllib.loads(backup.files.get(SETTINGS_FILE, b"").decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        raise BackupError(f"{backup.path}: its grove.toml is not valid TOML") from None
    in_backup = str(settings.get("secret_key") or "") or \
        backup.files.get(SECRET_KEY_FILE, b"").decode(errors="replace").strip()
    key = from_env or in_backup
    if not expected or (key and secret_key_check(key) == expected):
        return
    if stored_in == "environment" and not from_env:
        raise BackupError("this backup's secret key came from GROVE_SECRET_KEY and is not in "
                          "the backup: set GROVE_SECRET_KEY to that value to restore it")
    if stored_in == "environment":
        raise BackupError("GROVE_SECRET_KEY is not the secret key this backup was made with: "
                          "set it to that value")
    raise BackupError("GROVE_SECRET_KEY is set but is not the secret key this backup was made "
                      "with (the backup holds its own): unset it, or set it to that value")


def check_migrations_known(backup: Backup) -> None:
    """A backup made by a newer Grove holds a schema this code does not know — an app or
    a migration it has not: refuse it before anything is made (upgrade Grove first).
    Looked up in the migration packages themselves (see `MIGRATING_APPS`)."""
    import importlib.util

    folders: dict[str, Path] = {}
    newer = f"{backup.path}: made by a newer Grove ({backup.manifest.get('grove_version')}"
    for app, name in backup.manifest.get("migrations") or []:
        if app not in MIGRATING_APPS:
            raise BackupError(f"{newer}; app {app!r} is unknown here): upgrade Grove, then "
                              "restore")
        if app not in folders:
            spec = importlib.util.find_spec(f"{MIGRATING_APPS[app]}.migrations")
            assert spec is not None and spec.submodule_search_locations
            folders[app] = Path(next(iter(spec.submodule_search_locations)))
        if not (folders[app] / f"{name}.py").exists():
            raise BackupError(f"{newer}; migration {app}.{name} is unknown here): upgrade "
                              "Grove, then restore")


def restore(path: Path, *, database_url: str | None = None) -> RestoreResult:
    """See the module's docstring. Raises `BackupError` or `ConfigError`."""
    started = time.monotonic()
    home = grove_home()
    require_empty(home)
    backup = read_backup(path)
    try:
        check_secret_key(backup)
        check_migrations_known(backup)
        return _restore(home, backup, database_url, started)
    finally:
        backup.close()


def _restore(home: Path, backup: Backup, database_url: str | None,
             started: float) -> RestoreResult:
    existed = home.exists()
    server = None
    undo: _Plan | None = None  # set while an external database holds what was loaded
    try:
        _write_home(home, backup)
        from grove.runtime.config import load

        config = load()
        from grove.runtime.backup import PgTarget

        if config.embedded:
            from grove.runtime import embedded

            if database_url:
                raise BackupError("--database-url: only with an external database "
                                  "(DATABASE_URL); the embedded one is restored as its "
                                  "superuser")
            server = embedded.EmbeddedPostgres(home)
            server.ensure_running()
            target = PgTarget.from_settings(
                embedded.database_settings(home, role=embedded.SUPERUSER), embedded=True)
        elif database_url:
            target = PgTarget.from_url(database_url)
        elif config.migrate_configured:
            target = PgTarget.from_settings(config.migrate_database, embedded=False)
        else:
            raise BackupError("GROVE_MIGRATE_DATABASE_URL: not set; it (or --database-url) "
                              "names the role that restores into the external database")
        plan = plan_load(backup, target)  # refuses a database that holds anything
        undo = None if target.embedded else plan
        try:
            load_database(backup, target, plan)
        except BackupError:
            undo = None  # pg_restore's one transaction did not commit: nothing was loaded
            raise
        applied, notices = _migrate(backup) if config.migrate_configured else (
            0, ["GROVE_MIGRATE_DATABASE_URL is not set: run `grove migrate` as the schema "
                "owner before serving"])
    except BaseException as exc:
        _close_django()
        left = _undo_load(target, undo) if undo is not None else None
        if server is not None:
            server.release()
        _remove_contents(home, keep_folder=existed)
        if left:
            raise BackupError(f"{_why(exc)}; {left}") from None
        if isinstance(exc, BackupError | ConfigError | KeyboardInterrupt | SystemExit):
            raise
        raise BackupError(_why(exc)) from None  # migrate's own errors among them
    _close_django()
    if server is not None:
        server.release()
    environment = backup.manifest.get("environment") or []
    if environment:
        notices.append("the backed-up Grove also had these settings in its environment (not "
                       f"in the backup; set them here too): {', '.join(environment)}")
    database = "the embedded database" if target.embedded else target.describe()
    return RestoreResult(home=home, database=database, backup=backup,
                         migrations_applied=applied,
                         seconds=time.monotonic() - started, notices=notices)


def _close_django() -> None:
    """`_migrate` set Django up: its connections must not linger."""
    from django.apps import apps

    if apps.ready:
        from django.db import connections

        connections.close_all()


def _write_home(home: Path, backup: Backup) -> None:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    for name in (SECRET_KEY_FILE, SETTINGS_FILE):
        if name in backup.files:
            fd = os.open(home / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(backup.files[name])


def _remove_contents(home: Path, *, keep_folder: bool) -> None:
    """Undo a failed restore: the folder was new or empty when it started."""
    if not home.exists():
        return
    if not keep_folder:
        shutil.rmtree(home, ignore_errors=True)
        return
    for child in home.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


@dataclass(frozen=True)
class _Plan:
    env: dict[str, str]
    installed: set[str]  # extensions the database has already
    undo: str  # one statement that removes the load again (`undo_statement`)
    added: list[str]  # extensions the dump makes that the database lacks


def plan_load(backup: Backup, target: PgTarget) -> _Plan:
    """Check that `target` is empty and has the dump's roles; note what it has already
    (extensions, rights on the public schema), to leave out of the load and to undo it."""
    import psycopg

    database = backup.manifest.get("database") or {}
    try:
        with target.connect(autocommit=True) as conn:
            own = conn.execute(_OWN_OBJECTS).fetchall()
            tables = [name for kind, name in own if kind == "table"]
            if own:
                what = f"{len(tables)} tables" if tables else \
                    f"{len(own)} objects ({', '.join(' '.join(o) for o in own[:3])})"
                raise BackupError(f"{target.describe()} already has {what} in its public "
                                  "schema; a backup is restored only into an empty database")
            roles = [r for r in (database.get("owner_role"), database.get("runtime_role")) if r]
            present = {row[0] for row in conn.execute(
                "SELECT rolname::text FROM pg_roles WHERE rolname = ANY(%s)", [roles])}
            installed = {row[0] for row in conn.execute("SELECT extname::text FROM pg_extension")}
            rights = [row[0] for row in conn.execute(_SCHEMA_RIGHTS)]
    except psycopg.Error as exc:
        from grove.runtime.pg_host import first_line

        raise BackupError(f"{target.describe()}: {first_line(exc)}") from None
    missing = [role for role in roles if role not in present]
    if missing:
        raise BackupError(
            f"{target.describe()}: the backup's tables belong to (and are granted to) roles "
            f"{', '.join(map(repr, roles))}; this server has no {', '.join(map(repr, missing))}"
            " — create it first (README, 'External PostgreSQL')")
    env = target.env()
    env["PGOPTIONS"] = f"{env.get('PGOPTIONS', '')} {RESTORE_PGOPTIONS}".strip()
    return _Plan(env=env, installed=installed, undo=undo_statement(sorted(installed), rights),
                 added=sorted(set(database.get("extensions") or {}) - installed))


def load_database(backup: Backup, target: PgTarget, plan: _Plan) -> None:
    """pg_restore the dump into `target` (checked by `plan_load`), in one transaction:
    a `BackupError` from here means nothing was committed."""
    with tempfile.TemporaryDirectory(prefix="grove-restore-") as scratch:
        listing = Path(scratch) / "toc.list"
        toc = _run_with_dump(backup, ["--list"], plan.env, output=True)
        keep = [line for line in toc.splitlines()
                if not ((m := _EXTENSION_ENTRY.match(line)) and m[1] in plan.installed)]
        listing.write_text("\n".join(keep) + "\n")
        _run_with_dump(backup, ["--exit-on-error", "--single-transaction", "--no-password",
                                f"--use-list={listing}", f"--dbname={target.conninfo()}"],
                       plan.env)


def undo_statement(extensions: list[str], rights: list[str]) -> str:
    """One statement (a DO block, on one line) that takes a database whose public schema
    held nothing but `extensions`' objects, with `rights` on it, back to that: it drops
    every object there of no extension, the extensions made since, and revokes the
    rights granted since. `plan_load` refused anything else there, so this removes
    exactly what the restore (and its migrate) made."""
    from psycopg import sql

    return sql.SQL(
        "DO $grove_undo$ DECLARE statement text; BEGIN "
        "FOREACH statement IN ARRAY ARRAY(SELECT format('DROP %s IF EXISTS %s CASCADE', "
        "o.type, o.identity) FROM ({objects}) o) LOOP EXECUTE statement; END LOOP; "
        "SELECT 'DROP EXTENSION ' || string_agg(quote_ident(extname), ', ') INTO statement "
        "FROM pg_extension WHERE extname <> ALL ({extensions}::text[]); "
        "IF statement IS NOT NULL THEN EXECUTE statement; END IF; "
        "FOREACH statement IN ARRAY ARRAY(SELECT format('REVOKE %s ON SCHEMA public FROM %s', "
        "r.privilege, r.grantee) FROM ({rights}) r(id, grantee, privilege) "
        "WHERE r.id <> ALL ({granted}::text[])) LOOP EXECUTE statement; END LOOP; "
        "END $grove_undo$"
    ).format(objects=sql.SQL(_OWN_OBJECTS), extensions=sql.Literal(extensions),
             rights=sql.SQL(_SCHEMA_RIGHTS), granted=sql.Literal(rights)).as_string(None)


def _undo_load(target: PgTarget, plan: _Plan) -> str | None:
    """Remove a load from an external database; None when done, else what is left and
    how to remove it (the sentence the error ends with)."""
    import psycopg

    from grove.runtime.pg_host import first_line

    try:
        with target.connect(autocommit=True) as conn:
            conn.execute(plan.undo.encode())
            left = conn.execute(_OWN_OBJECTS).fetchall()
        if not left:
            return None
        why = f"{', '.join(' '.join(o) for o in left[:3])} stayed"
    except psycopg.Error as exc:
        why = first_line(exc)
    extensions = f" and the extensions {', '.join(plan.added)} if it made them" \
        if plan.added else ""
    return (f"what it loaded could not be removed from {target.describe()} ({why}): "
            f"everything in its public schema that belongs to no extension{extensions} — "
            f"remove it as {target.params.get('user')!r}, before restoring again, with: "
            f"{plan.undo}")


def _run_with_dump(backup: Backup, args: list[str], env: dict[str, str], *,
                   output: bool = False) -> str:
    """pg_restore with the backup's dump on its standard input (no copy on disk)."""
    from grove.runtime.backup import pg_tool, tool_error

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen([pg_tool("pg_restore"), *args], stdin=subprocess.PIPE,
                                stdout=out if output else subprocess.DEVNULL, stderr=errors,
                                env=env, cwd="/")
        assert proc.stdin is not None
        try:
            # pg_restore may stop reading: it has what it needs (--list), or failed.
            backup.copy_dump(proc.stdin.write)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass
        if proc.wait() != 0:
            raise BackupError(f"pg_restore failed: {tool_error('pg_restore', errors)}")
        out.seek(0)
        return out.read().decode(errors="replace")


def _migrate(backup: Backup) -> tuple[int, list[str]]:
    """`grove migrate` in this process, with the checks the `grove` command makes first;
    returns the number of migrations applied and what the operator should know."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "grove.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import connections
    from django.db.migrations.recorder import MigrationRecorder

    from grove.embeddings import configured_profile
    from grove.runtime import dbroles

    dbroles.check_reachable("default")
    dbroles.check_pgvector("default")
    dbroles.check_migration_roles()
    dbroles.check_reachable("owner")
    before = len(MigrationRecorder(connections["owner"]).applied_migrations())
    call_command("migrate", interactive=False, verbosity=0)
    after = len(MigrationRecorder(connections["owner"]).applied_migrations())
    dbroles.check_runtime_role("default")
    notices = []
    active = [p for p in backup.manifest.get("embedding_profiles") or []
              if p.get("status") == "active"]
    configured = configured_profile()
    if active and configured and active[0]["name"] != configured[0]:
        notices.append(f"the vectors in this backup were made with {active[0]['name']}; this "
                       f"configuration asks for {configured[0]}: run `grove reindex`")
    return after - before, notices
