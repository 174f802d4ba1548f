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

from grove.kernel import tenancy
from grove.runtime.config import ConfigError

PGVECTOR_MIN = (0, 8, 0)
# History is never rewritten: the runtime role may add revisions, not change them.
APPEND_ONLY_TABLES = ("notebooks_revision", "notebooks_visionrevision")
# Security-definer functions (each applies the account rule itself); EXECUTE is revoked
# from PUBLIC by their migration and granted to the runtime role only.
DEFINER_FUNCTIONS = (
    "grove_lexical_matches(tsquery[], float8[], text[], float8[], uuid[], boolean, integer,"
    " integer, integer, text, daterange, tstzrange, boolean, float8, float8, float8)",
    # Recall's lexical arm over passages (passages 0002).
    "grove_passage_matches(tsquery[], float8[], text[], float8[], uuid[], boolean, integer,"
    " integer, integer, text, daterange, tstzrange, boolean, float8, float8, float8)",
    "grove_search_matches(tsquery)",
    "grove_search_matches(tsquery, integer)",
    # Library search's words (notebooks 0030).
    "grove_lookup_matches(tsquery)",
    "grove_lookup_matches(tsquery, integer)",
    "grove_search_variants(text, text, float8, integer)",
    "grove_tagged(text)",
    "grove_tag_counts(integer)",
    # The public read path of share links (sharing 0003: they take the link's token).
    "grove_share_open(text)",
    "grove_share_notes(text, uuid, timestamptz, uuid, integer)",
    "grove_share_viewed(text)",
    # How many notes a notebook share holds (sharing 0004).
    "grove_share_count(text)",
    # The links of a shared note, resolved only within the share (sharing 0005).
    "grove_share_links(text, uuid)",
    # Which account's ready job a stale wake-up takes (grove 0008).
    "grove_job_oldest_ready(text[], timestamptz)",
    # An API key's connection, and its last contact, in one statement (grove 0011).
    "grove_key_connection(uuid, text, interval)",
    # The same with the connection's home notebook (grove 0017).
    "grove_key_connection_home(uuid, text, interval)",
)
# The keys the database checks tenant contexts and share links with (grove 0009): the
# runtime role may not even read them.
SECRET_TABLES = ("grove_secret",)
# The account table: the runtime role may change only what the app changes — sign-in
# (`last_login`, and `password` when Django re-hashes with stronger parameters), the
# capture pause, the time zone the website shows times in, and deactivation
# (`is_active`, the operator's `grove shell`) and deletion by the owner (`deleted_at`,
# `deletion_requested_at`, `grove.identity.deletion`). Name, e-mail, staff and superuser flags,
# join date and id are the owner role's to change.
ACCOUNT_TABLE = "grove_account"
ACCOUNT_UPDATABLE_COLUMNS = ("last_login", "password", "capture_paused_at", "time_zone",
                             "is_active", "secrets_on_ingest", "secrets_on_automatic",
                             "secrets_on_explicit", "secret_patterns", "deleted_at",
                             "deletion_requested_at")


def grant_runtime_role(sender: Any = None, using: str = "owner", **kwargs: Any) -> None:
    """After every migrate: store the database's keys and give the runtime role exactly
    the rights it needs."""
    runtime = settings.DATABASES["default"]["USER"]
    owner_conn = connections[using]
    with owner_conn.cursor() as cursor:
        raw = cursor.cursor if hasattr(cursor, "cursor") else cursor
        raw.execute("SELECT to_regclass('grove_secret') IS NOT NULL")
        if raw.fetchone()[0]:  # migrated that far
            tenancy.store_database_keys(raw)
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
            raw.execute("SELECT to_regclass(%s) IS NOT NULL", [table])
            if not raw.fetchone()[0]:  # not migrated that far
                continue
            raw.execute(
                sql.SQL("REVOKE UPDATE, DELETE, TRUNCATE ON {} FROM {}").format(
                    sql.Identifier(table), role
                )
            )
        for table in SECRET_TABLES:
            raw.execute("SELECT to_regclass(%s) IS NOT NULL", [table])
            if raw.fetchone()[0]:
                raw.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(
                    sql.Identifier(table), role))
        raw.execute(sql.SQL("REVOKE UPDATE ON {} FROM {}").format(
            sql.Identifier(ACCOUNT_TABLE), role))
        # Only the columns there are (a column added by a later migration is granted
        # by the migrate that adds it).
        raw.execute("SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = 'public' AND table_name = %s",
                    [ACCOUNT_TABLE])
        present = {row[0] for row in raw.fetchall()}
        columns = [c for c in ACCOUNT_UPDATABLE_COLUMNS if c in present]
        if columns:
            raw.execute(sql.SQL("GRANT UPDATE ({}) ON {} TO {}").format(
                sql.SQL(", ").join(map(sql.Identifier, columns)),
                sql.Identifier(ACCOUNT_TABLE), role))


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


def _check_unprivileged(alias: str) -> None:
    problems = runtime_role_problems(alias)
    if problems:
        raise ConfigError(
            f"DATABASE_URL: refusing to run with privileged credentials ({'; '.join(problems)}); "
            "row-level security would not protect accounts from each other. Use a separate "
            "runtime role (see README, 'External PostgreSQL')"
        )


def tenant_key_problem(alias: str = "default") -> str | None:
    """Why the database would refuse this process's tenant contexts (None = it accepts
    them, or the schema is not migrated that far yet)."""
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT to_regclass('grove_secret') IS NOT NULL")
        if not cursor.fetchone()[0]:
            return None
    if tenancy.context_works(alias):
        return None
    return (
        f"{describe(alias)}: the database's tenant key was not derived from this process's "
        "SECRET_KEY (GROVE_SECRET_KEY), so every account would look empty. Run `grove "
        "migrate` (or `grove serve` without --no-migrate) with this SECRET_KEY: it stores "
        "the key as the schema owner role"
    )


def check_runtime_role(alias: str = "default") -> None:
    """Before serving: the runtime credentials are unprivileged, and the database accepts
    the tenant contexts this process makes."""
    _check_unprivileged(alias)
    problem = tenant_key_problem(alias)
    if problem:
        raise ConfigError(problem)


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
    # Not the tenant key: migrating is what stores it.
    _check_unprivileged("default")
