"""The web process's pool lends an idle connection without asking the server, and one
whose server went away is replaced (grove/runtime/dbpool.py), on the real database."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.conf import settings
from psycopg_pool import ConnectionPool

from grove.runtime.dbpool import check_idle_connection

pytestmark = pytest.mark.django_db


def runtime_params() -> dict:
    db = settings.DATABASES["default"]
    return {"host": db["HOST"], "port": db["PORT"], "user": db["USER"], "dbname": db["NAME"],
            "autocommit": True}


@pytest.fixture
def pool():
    with ConnectionPool(kwargs=runtime_params(), min_size=1, max_size=1,
                        check=check_idle_connection, timeout=10) as pool:
        pool.wait()
        yield pool


def last_state_change(pid: int):
    """When the backend last changed state (idle → active → idle: any statement, even
    an empty one, moves it), seen from another session of the same role."""
    with psycopg.connect(**runtime_params()) as other:
        row = other.execute("SELECT state_change FROM pg_stat_activity WHERE pid = %s",
                            [pid]).fetchone()
    assert row is not None and row[0] is not None
    return row[0]


def test_an_idle_healthy_connection_is_lent_without_a_round_trip(pool):
    with pool.connection() as conn:
        conn.execute("SELECT 1")
        pid = conn.info.backend_pid
    before = last_state_change(pid)
    time.sleep(0.05)
    with pool.connection() as conn:
        assert conn.info.backend_pid == pid  # the same connection, lent again
        lent = last_state_change(pid)
        conn.execute("SELECT 1")
    assert lent == before  # lending it sent the server nothing
    assert last_state_change(pid) > before  # (which a statement would have shown)


def test_a_connection_whose_server_ended_it_is_replaced(pool):
    with pool.connection() as conn:
        pid = conn.info.backend_pid
    with psycopg.connect(**runtime_params()) as other:  # (a role may end its own sessions)
        assert other.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)
        deadline = time.monotonic() + 10
        while other.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                            [pid]).fetchone() != (0,) and time.monotonic() < deadline:
            time.sleep(0.05)
    with pool.connection() as conn:
        assert conn.info.backend_pid != pid
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_closed_connection_is_refused():
    with psycopg.connect(**runtime_params()) as conn:
        pass
    with pytest.raises(psycopg.OperationalError):
        check_idle_connection(conn)
