"""`grove doctor` (issue 23 item 3): everything an operator checks when Grove misbehaves,
one line each, with the fix — the readiness checks (`grove.runtime.readiness`) and:

* PostgreSQL and pgvector versions;
* the runtime role: no superuser, no BYPASSRLS, the tenant keys in place
  (`dbroles.check_runtime_role`), and row-level security forced on every account table;
* the embedding profile the configuration asks for is the active one (or being built);
* the embedding and answer providers answer (an OpenAI-compatible server's `/models`);
* free space where the data folder lives.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from grove.runtime import readiness

POSTGRES_MIN = 150000  # server_version_num
PGVECTOR_MIN = (0, 7)
DISK_MIN_FREE = 1024 ** 3  # bytes
DISK_MIN_FREE_SHARE = 0.05


@dataclass(frozen=True)
class Finding:
    name: str
    problem: str | None  # None: fine
    detail: str = ""


def _versions() -> Finding:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version_num')::int, "
                       "current_setting('server_version'), "
                       "(SELECT extversion FROM pg_extension WHERE extname = 'vector')")
        number, shown, vector = cursor.fetchone()
    if number < POSTGRES_MIN:
        return Finding("versions", f"PostgreSQL {shown} is older than 15: upgrade the server")
    if vector is None:
        return Finding("versions", "the vector extension is not installed: run `grove migrate` "
                                   "as the schema owner (pgvector must be available)")
    parts = tuple(int(p) for p in str(vector).split(".")[:2] if p.isdigit())
    if parts < PGVECTOR_MIN:
        return Finding("versions", f"pgvector {vector} is older than 0.7: upgrade it "
                                   "(`ALTER EXTENSION vector UPDATE`)")
    return Finding("versions", None, f"PostgreSQL {shown}, pgvector {vector}")


def _roles() -> Finding:
    from django.db import connection

    from grove.runtime.config import ConfigError
    from grove.runtime.dbroles import check_runtime_role

    try:
        check_runtime_role("default")
    except ConfigError as exc:
        return Finding("roles", str(exc))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = 'r' AND EXISTS (SELECT 1 FROM "
            "pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'account_id' AND NOT "
            "a.attisdropped) AND NOT (c.relrowsecurity AND c.relforcerowsecurity) "
            "AND c.relname NOT IN ('grove_account_groups', 'grove_account_user_permissions')")
        open_tables = [row[0] for row in cursor.fetchall()]
    if open_tables:
        return Finding("roles", f"row-level security is not forced on {', '.join(open_tables)}:"
                                " run `grove migrate` as the schema owner")
    return Finding("roles", None, "runtime role unprivileged; every account table under RLS")


def _profile() -> Finding:
    """As `grove serve` checks it at start (`check_embedding_profile`), without writing."""
    from grove.embeddings import configured_profile
    from grove.models import EmbeddingProfile

    wanted = configured_profile()
    if wanted is None:
        return Finding("embeddings", None, "off (keyword search only)")
    active = EmbeddingProfile.objects.filter(status=EmbeddingProfile.Status.ACTIVE).first()
    if active is None:
        return Finding("embeddings", None, f"{wanted[0]} (recorded at the first start)")
    if active.name == wanted[0]:
        return Finding("embeddings", None, wanted[0])
    if EmbeddingProfile.objects.filter(name=wanted[0],
                                       status=EmbeddingProfile.Status.BUILDING).exists():
        return Finding("embeddings", None, f"{wanted[0]} (being built by `grove reindex`; "
                                           f"recall uses {active.name} meanwhile)")
    return Finding("embeddings", f"the stored vectors were made with {active.name} but the "
                                 f"configuration asks for {wanted[0]}: run `grove reindex`")


def _reachable(what: str, base_url: str | None, key: str, note: str = "") -> Finding:
    if not base_url:
        return Finding(what, None, "not configured")
    import httpx

    try:
        answer = httpx.get(base_url.rstrip("/") + "/models", timeout=3,
                           headers={"Authorization": f"Bearer {key}"} if key else {})
    except httpx.HTTPError as exc:
        return Finding(what, f"{base_url} does not answer ({exc.__class__.__name__}): check "
                             "the URL and that the server is up")
    if answer.status_code in (401, 403):
        return Finding(what, f"{base_url} refuses the API key ({answer.status_code}): "
                             "check the key setting")
    if answer.status_code >= 500:
        return Finding(what, f"{base_url} fails ({answer.status_code}): check the server")
    return Finding(what, None, f"{base_url}{note}")


def _disk() -> Finding:
    home = settings.GROVE_HOME
    folder = home if home.exists() else home.parent
    usage = shutil.disk_usage(folder)
    shown = f"{usage.free / 1024 ** 3:.1f} GB free of {usage.total / 1024 ** 3:.1f} GB"
    if usage.free < DISK_MIN_FREE or usage.free < DISK_MIN_FREE_SHARE * usage.total:
        return Finding("disk", f"only {shown} where {home} lives: free space, or move the "
                               "data folder (GROVE_HOME)")
    return Finding("disk", None, shown)


def findings() -> list[Finding]:
    """Every check, the database first; the checks that need it are skipped (and say
    so) when it does not answer."""
    ready = readiness.readiness()
    found = [Finding(name, problem) for name, problem in ready.items()]
    database_up = ready["database"] is None
    checks: list[Callable[[], Finding]] = [_disk]
    if database_up:
        checks = [_versions, _roles, _profile, *checks]
    for check in checks:
        try:
            found.append(check())
        except Exception as exc:  # noqa: BLE001 - a check that breaks is itself a finding
            found.append(Finding(check.__name__.strip("_"), f"could not check "
                                 f"({exc.__class__.__name__}: {str(exc)[:200]})"))
    found.append(_reachable("embedding provider", settings.GROVE_EMBEDDINGS_BASE_URL
                            if settings.GROVE_EMBEDDINGS == "openai" else "",
                            settings.GROVE_EMBEDDINGS_API_KEY or ""))
    found.append(_reachable("answer provider", settings.GROVE_LLM_BASE_URL,
                            settings.GROVE_LLM_API_KEY or "",
                            f" (a try times out after {settings.GROVE_LLM_TIMEOUT:g} s, "
                            "GROVE_LLM_TIMEOUT)"))
    return found
