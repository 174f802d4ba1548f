"""The two database roles (SPEC §5) and the checks that keep them apart.

* The **owner** role (`DATABASES["owner"]`) owns the schema and runs migrations.
* The **runtime** role (`DATABASES["default"]`) is what the web, API and workers use:
  not a superuser, no BYPASSRLS, owns no table — so row-level security always applies.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connections
from psycopg import sql

from grove.config import ConfigError

PGVECTOR_MIN = (0, 8, 0)
# History is never rewritten: the runtime role may add revisions, not change them.
APPEND_ONLY_TABLES = ("notebooks_revision",)
# Security-definer functions (each applies the account rule itself); EXECUTE is revoked
# from PUBLIC by their migration and granted to the runtime role only.
DEFINER_FUNCTIONS = (
    "grove_lexical_matches(tsquery[], float8[], tsquery[], float8[], uuid[], boolean, integer,"
    " integer)",
    "grove_search_matches(tsquery)",
    # The public read path of share links (sharing 0002).
    "grove_share_open(uuid)",
    "grove_share_notes(uuid, uuid, timestamptz, uuid, integer)",
    "grove_share_viewed(uuid)",
    # Which account's ready job a stale wake-up takes (grove 0008).
    "grove_job_oldest_ready(text[], timestamptz)",
)


def grant_runtime_role(sender: Any = None, using: str = "owner", **kwargs: Any) -> None:
    """After every migrate: give the runtime role exactly the rights it needs."""
    runtime = settings.DATABASES["default"]["USER"]
    owner_conn = connections[using]
    if owner_conn.settings_dict.get("USER") == runtime:
        return  # misconfigured on purpose or by accident; check_runtime_role() refuses later
    role = sql.Identifier(runtime)
    with owner_conn.cursor() as cursor:
        raw = cursor.cursor if hasattr(cursor, "cursor") else cursor
        raw.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(role))
        raw.execute(
            sql.SQL(
                "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {}"
            ).format(role)
        )
        raw.execute(
            sql.SQL("GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {}").format(
                role
            )
        )
        for signature in DEFINER_FUNCTIONS:
            raw.execute("SELECT to_regprocedure(%s)", [signature])
            if raw.fetchone()[0] is None:  # not migrated that far
                continue
            raw.execute(sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {}").format(
                sql.SQL(signature), role))
        for table in APPEND_ONLY_TABLES:
            raw.execute(
                sql.SQL("REVOKE UPDATE, DELETE, TRUNCATE ON {} FROM {}").format(
                    sql.Identifier(table), role
                )
            )


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())


def describe(alias: str) -> str:
    cfg = settings.DATABASES[alias]
    where = cfg.get("HOST") or "localhost"
    if cfg.get("PORT") and not str(where).startswith("/"):
        where = f"{where}:{cfg['PORT']}"
    return f"database {cfg.get('NAME')!r} as {cfg.get('USER')!r} at {where}"


def check_reachable(alias: str) -> None:
    from django.db import OperationalError

    setting = "DATABASE_URL" if alias == "default" else "GROVE_MIGRATE_DATABASE_URL"
    if settings.GROVE_EMBEDDED_DB:
        setting = "embedded database"
    import psycopg

    connection = connections[alias]
    try:
        # A direct connection, not one from the pool: fail at once, with the reason.
        psycopg.connect(**connection.get_connection_params(), connect_timeout=10).close()
        connection.ensure_connection()
    except (OperationalError, psycopg.OperationalError) as exc:
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"{setting}: cannot connect to {describe(alias)}: {reason}") from None


def check_pgvector(alias: str = "default") -> None:
    with connections[alias].cursor() as cursor:
        cursor.execute(
            "SELECT default_version, installed_version FROM pg_available_extensions "
            "WHERE name = 'vector'"
        )
        row = cursor.fetchone()
    if row is None:
        raise ConfigError(
            f"{describe(alias)}: the pgvector extension is not available on this PostgreSQL "
            f"server; install pgvector ≥ {'.'.join(map(str, PGVECTOR_MIN))}"
        )
    version = row[1] or row[0]
    if _version_tuple(version) < PGVECTOR_MIN:
        raise ConfigError(
            f"{describe(alias)}: pgvector {version} is too old; Grove needs ≥ "
            f"{'.'.join(map(str, PGVECTOR_MIN))}"
        )


def runtime_role_problems(alias: str = "default") -> list[str]:
    """Why the runtime credentials may not be used (empty list = fine)."""
    problems: list[str] = []
    with connections[alias].cursor() as cursor:
        cursor.execute(
            "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles "
            "WHERE rolname = current_user"
        )
        user, is_super, bypass = cursor.fetchone()
        if is_super:
            problems.append(f"role {user!r} is a superuser")
        if bypass:
            problems.append(f"role {user!r} has BYPASSRLS")
        cursor.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') "
            "AND pg_has_role(current_user, c.relowner, 'MEMBER')"
        )
        owned = cursor.fetchone()[0]
        if owned:
            problems.append(f"role {user!r} owns (or inherits ownership of) {owned} tables")
    return problems


def check_runtime_role(alias: str = "default") -> None:
    problems = runtime_role_problems(alias)
    if problems:
        raise ConfigError(
            f"DATABASE_URL: refusing to run with privileged credentials ({'; '.join(problems)}); "
            "row-level security would not protect accounts from each other. Use a separate "
            "runtime role (see README, 'External PostgreSQL')"
        )


def check_migration_roles() -> None:
    """Before migrating: an owner role is configured, it is not the runtime role, and the
    runtime role is unprivileged — otherwise the migration would hand the schema to the
    wrong role and Grove would then refuse to start."""
    if not settings.GROVE_MIGRATE_CONFIGURED:
        raise ConfigError(
            "GROVE_MIGRATE_DATABASE_URL: not set; migrations must run as the schema owner "
            "role, which is not the runtime role of DATABASE_URL (or start with --no-migrate "
            "once the schema is up to date)"
        )
    runtime, owner = settings.DATABASES["default"], settings.DATABASES["owner"]
    if (runtime.get("USER"), runtime.get("HOST"), runtime.get("NAME")) == (
        owner.get("USER"), owner.get("HOST"), owner.get("NAME")
    ):
        raise ConfigError(
            "GROVE_MIGRATE_DATABASE_URL: names the same role as DATABASE_URL; the runtime "
            "role must not own the tables"
        )
    check_runtime_role("default")
