"""Test database: real PostgreSQL + pgvector with Grove's two roles.

The test database is created and migrated by the **owner** role; tests then run on
`default` — the runtime role that row-level security applies to — exactly as in
production. `committed` gives a test real commits (threads, subprocesses) and cleans
up afterwards with the owner role.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest
from django.db import connections

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_program(name: str, path: str | None = None) -> str:
    """Skip on a laptop without the program, fail in CI (where it must be installed)."""
    found = path if path and os.path.exists(path) else shutil.which(name)
    if not found:
        message = f"{name} is not installed"
        if IN_CI:
            pytest.fail(f"{message} (CI=true: every dependency must be present)")
        pytest.skip(message)
    return found


@pytest.fixture(scope="session")
def embedded_server():
    from django.conf import settings

    if not settings.GROVE_EMBEDDED_DB:
        yield None
        return
    from grove.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(settings.GROVE_HOME)
    server.ensure_running()
    yield server
    server.stop_if_owner()


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment, django_db_blocker, embedded_server) -> Iterator[None]:
    with django_db_blocker.unblock():
        owner = connections["owner"]
        original_name = owner.settings_dict["NAME"]
        test_name = owner.creation.create_test_db(
            verbosity=0, autoclobber=True, keepdb=False
        )
        default = connections["default"]
        default.close()
        default.settings_dict["NAME"] = test_name
    yield
    with django_db_blocker.unblock():
        connections["default"].close()
        owner.creation.destroy_test_db(original_name, verbosity=0)


def _truncate_all() -> None:
    with connections["owner"].cursor() as cursor:
        cursor.execute(
            "SELECT string_agg(format('%I', tablename), ', ') FROM pg_tables "
            "WHERE schemaname = 'public' AND tablename NOT IN "
            "('django_migrations', 'django_content_type', 'auth_permission')"
        )
        tables = cursor.fetchone()[0]
        cursor.execute(f"TRUNCATE {tables} CASCADE")


@pytest.fixture
def committed(django_db_setup, django_db_blocker) -> Iterator[None]:
    """Real commits (for threads and subprocesses); every table emptied afterwards."""
    with django_db_blocker.unblock():
        yield
        connections.close_all()
        _truncate_all()
        connections["owner"].close()
