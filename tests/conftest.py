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


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Counters kept in Django's cache (API rate limit, sign-in throttle) start at zero
    in every test."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def home():
    """A fresh, empty Grove data folder (removed afterwards, its server stopped)."""
    from tests.grove.runtime.processes import make_home, remove_home

    path = make_home()
    yield path
    remove_home(path)


@pytest.fixture(scope="session")
def embedded_server():
    from django.conf import settings

    if not settings.GROVE_EMBEDDED_DB:
        yield None
        return
    from grove.runtime.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(settings.GROVE_HOME)
    server.ensure_running()
    yield server
    server.release()


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
        default.close_pool()  # a pool made before this point names the other database
        default.settings_dict["NAME"] = test_name
    yield
    with django_db_blocker.unblock():
        connections["default"].close()
        connections["default"].close_pool()
        _destroy_when_free(owner, original_name)


def _destroy_when_free(owner, original_name: str) -> None:
    """Drop the test database. A live-server request answered a moment ago may still be
    closing its connection (Django closes it after the response is sent): wait for it
    rather than fail the run."""
    import time

    from django.db import OperationalError

    for _ in range(20):
        try:
            owner.creation.destroy_test_db(original_name, verbosity=0, keepdb=False)
            return
        except OperationalError as exc:
            if "being accessed by other users" not in str(exc):
                raise
            owner.close()  # NAME still names the test database: the drop failed first
            time.sleep(0.25)
    owner.creation.destroy_test_db(original_name, verbosity=0)


@pytest.fixture
def vacuumed_vectors(django_db_setup):
    """Earlier tests roll back vector inserts; inside a test's own transaction pgvector's
    HNSW scan can then miss live rows until VACUUM repairs the graph (autovacuum does
    this in production). Start each recall test from a clean index."""
    import psycopg
    from django.conf import settings

    owner, test_db = settings.DATABASES["owner"], settings.DATABASES["default"]["NAME"]
    with psycopg.connect(host=owner["HOST"], port=owner["PORT"], user=owner["USER"],
                         password=owner["PASSWORD"] or None, dbname=test_db,
                         autocommit=True) as conn:
        conn.execute("VACUUM passages_passagevector")


def _truncate_all() -> None:
    with connections["owner"].cursor() as cursor:
        cursor.execute(
            "SELECT string_agg(format('%I', tablename), ', ') FROM pg_tables "
            "WHERE schemaname = 'public' AND tablename NOT IN "
            "('django_migrations', 'django_content_type', 'auth_permission', 'grove_secret')"
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


@pytest.fixture
def celery_worker_on(tmp_path):
    """Start a real Celery worker (threads) on the given broker for the test."""
    from celery.contrib.testing.worker import start_worker
    from kombu import pools as kombu_pools

    from grove.celery import app, ensure_broker_folders

    previous = (app.conf.broker_url, dict(app.conf.broker_transport_options or {}))

    def use_broker(url, options):
        if (app.conf.broker_url, dict(app.conf.broker_transport_options or {})) == (
                url, options):
            return  # already (reconnecting would leave kombu a closed producer pool)
        # Producers already connected keep their broker: drop them (Celery does the same
        # after a fork), and kombu's process-wide producer pools, which would otherwise
        # hand a later test of the same broker a closed pool.
        if app._pool is not None:
            app._pool.force_close_all()
        app._after_fork()
        kombu_pools.reset()
        app.conf.broker_url, app.conf.broker_transport_options = url, options
        ensure_broker_folders.cache_clear()
        ensure_broker_folders()

    def start(url, options, **worker):
        from django.conf import settings

        use_broker(url, options)
        # The queues `grove worker` consumes: job wake-ups and maintenance.
        queues = [settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_MAINTENANCE_QUEUE]
        return start_worker(app, pool="threads", concurrency=2, perform_ping_check=False,
                            shutdown_timeout=30, queues=queues, **worker)

    start.use_broker = use_broker  # to publish before the worker starts
    yield start
    use_broker(*previous)


def redis_url_or_skip(default: str) -> str:
    """REDIS_URL from the environment (or `default`); skip without Redis, fail in CI."""
    import redis

    url = os.environ.get("REDIS_URL", default)
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.exceptions.ConnectionError:
        if IN_CI:
            pytest.fail(f"CI=true: Redis must answer at {url}")
        pytest.skip(f"no Redis at {url}")
    return url


# -- browser tests: real Chromium against a real ASGI server on the test database ------

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    executable = require_program("chromium", CHROMIUM)
    return {
        **browser_type_launch_args,
        "executable_path": executable,
        "args": [
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run",
            "--disable-quic",
        ],
    }


@pytest.fixture(scope="session")
def site_url(django_db_setup, django_db_blocker) -> Iterator[str]:
    """Grove's ASGI app under uvicorn in a thread, serving the test database."""
    import threading
    import time

    import uvicorn
    from django.conf import settings

    port = settings.TEST_SITE_PORT  # the port GROVE_BASE_URL names (tests/settings.py)
    server = uvicorn.Server(uvicorn.Config(
        "grove.asgi:application", host="127.0.0.1", port=port, lifespan="off",
        log_level="warning",
    ))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test web server did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def browser_site(site_url, committed) -> str:
    """For Playwright tests (request it before `page`): real commits on the test database.

    pytest-playwright's sync API keeps an event loop marked as running in the main thread
    from the first browser test until the end of the session, and Django refuses database
    calls from a thread with a running loop. So browser tests run last (see
    `pytest_collection_modifyitems`) and relax that guard from then on.
    """
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    return site_url


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: "browser_site" in getattr(item, "fixturenames", ()))
