"""Is this Grove ready to do its work — not only alive (`/healthz`), but able to
store, queue and run jobs (`/readyz`, SPEC §12; issue 23 item 3)?

Each check answers None when fine, or one line saying what is wrong and what to do:

* database — it answers;
* migrations — every migration is applied (a web process on a schema it does not know
  would fail later, one request at a time);
* broker — Redis answers a PING, or the file broker's folders are there and writable;
* worker — a worker ran the beat-scheduled heartbeat task within the last
  3 × GROVE_HEARTBEAT_SECONDS (which also proves beat and the broker carry work).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from grove.runtime.broker import ensure_folders

STALE_AFTER_BEATS = 3


def database() -> str | None:
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - any failure is "not ready"
        return f"the database does not answer ({exc.__class__.__name__}): check DATABASE_URL"
    return None


_migrated = False


def migrations() -> str | None:
    """Once all are applied, this process stops asking (it cannot un-migrate)."""
    global _migrated
    if _migrated:
        return None
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    try:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:  # noqa: BLE001
        return f"cannot read the migrations ({exc.__class__.__name__})"
    if pending:
        return f"{len(pending)} migrations are not applied: run `grove migrate`"
    _migrated = True
    return None


def broker() -> str | None:
    url = str(settings.CELERY_BROKER_URL)
    if url.startswith(("redis://", "rediss://")):
        import redis

        try:
            redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1).ping()
        except (redis.RedisError, OSError) as exc:
            return f"Redis does not answer ({exc.__class__.__name__}): check REDIS_URL"
        return None
    try:  # made on first use: a fresh data folder has none yet
        ensure_folders(settings.CELERY_BROKER_TRANSPORT_OPTIONS)
    except OSError as exc:
        return f"the file broker's folders cannot be made ({exc.strerror}): check " \
               "GROVE_HOME's permissions"
    folders = [settings.BROKER_DIR / "queue", settings.BROKER_DIR / "processed"]
    for folder in folders:
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            return f"the file broker's folder {folder} is missing or not writable"
    return None


def worker() -> str | None:
    from grove.models import Heartbeat

    beat = Heartbeat.objects.filter(name="worker").first()
    limit = timedelta(seconds=STALE_AFTER_BEATS * settings.GROVE_HEARTBEAT_SECONDS)
    if beat is None:
        return "no worker has reported yet: start `grove worker` and `grove beat` " \
               "(`grove serve` starts both)"
    age = timezone.now() - beat.at
    if age > limit:
        return f"the last worker heartbeat is {int(age.total_seconds())} s old: is " \
               "`grove worker` (and `grove beat`) running?"
    return None


CHECKS: dict[str, Callable[[], str | None]] = {
    "database": database, "migrations": migrations, "broker": broker, "worker": worker}


def readiness() -> dict[str, str | None]:
    """Every check's answer; the database first, and the checks that need it skipped
    when it does not answer."""
    found: dict[str, str | None] = {"database": database()}
    for name, check in CHECKS.items():
        if name == "database":
            continue
        if found["database"] is not None and name in ("migrations", "worker"):
            found[name] = "not checked: the database does not answer"
        else:
            found[name] = check()
    return found


def heartbeat(name: str = "worker") -> None:
    """Record that `name` is alive now (the worker's heartbeat task)."""
    from grove.models import Heartbeat

    Heartbeat.objects.update_or_create(name=name, defaults={
        "at": timezone.now(), "detail": {"host": socket.gethostname(), "pid": os.getpid()}})
