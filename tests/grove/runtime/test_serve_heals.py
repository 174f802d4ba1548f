"""`grove serve` heals what it started: a worker or embedded database that dies is
restarted with backoff and said so on the terminal; repeated deaths give up loudly
(exit status 1, everything stopped); a stop after restarts leaves nothing running.
Real signals on real `grove serve --port N` processes started as the README says."""

from __future__ import annotations

import fcntl
import os
import re
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psycopg
import pytest
from django.conf import settings

from grove.runtime.embedded import EmbeddedPostgres
from tests.grove.runtime.processes import Serve, alive, children, owner_and_key

pytestmark = pytest.mark.slow


def _api(serve: Serve, key: str, method: str, path: str, **kwargs) -> httpx.Response:
    return httpx.request(method, serve.url + path, timeout=30,
                         headers={"Authorization": f"Bearer {key}"}, **kwargs)


def _until(condition, seconds: float, what: str, serve: Serve):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{what} within {seconds} s:\n{serve.output()}")


def _worker(serve: Serve) -> int:
    found = children(serve.proc.pid)
    assert len(found) == 1, found
    return found[0]


def _group(pid: int) -> list[int]:
    """Live processes of the process group `pid` leads (the worker and its scheduler)."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pid and alive(int(entry.name)):
                    members.append(int(entry.name))
            except ProcessLookupError:
                continue
    return members


def _new_note_is_indexed(serve: Serve, key: str, text: str) -> None:
    saved = _api(serve, key, "POST", "/v1/notes", json={"content": text, "kind": "fact"})
    assert saved.status_code == 201, saved.text
    note_id = saved.json()["data"]["id"]

    def indexed() -> bool:
        return _api(serve, key, "GET", f"/v1/notes/{note_id}").json()["data"]["indexing"] \
            == "ready"

    _until(indexed, 30, "the new note was not indexed", serve)


def _assert_nothing_left(serve: Serve, workers: list[int]) -> None:
    """No worker, none of their scheduler processes, no database server, no lock."""
    home = serve.home
    left = [pid for worker in workers for pid in [worker, *_group(worker)] if alive(pid)]
    assert not left, f"still running: {left}\n{serve.output()}"
    assert not EmbeddedPostgres(home).is_running(), serve.output()
    assert not (home / "db" / "postmaster.pid").exists(), serve.output()
    assert not (home / "run" / "db-owner.json").exists()
    with open(home / "run" / "serve.lock") as lock:  # released: another serve may start
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert "keeps running for other grove commands" not in serve.output()
    assert "Traceback" not in serve.output()


def test_a_killed_worker_is_replaced_and_jobs_still_complete(home):
    serve = Serve(home)
    seen: list[int] = []
    try:
        serve.wait_ready()
        key = owner_and_key(serve, "heal")
        first = _worker(serve)
        # Started: the worker and the periodic scheduler it forks.
        group = _until(lambda: len(_group(first)) == 2 and _group(first), 60,
                       "the worker did not start its scheduler", serve)
        seen.append(first)
        os.kill(first, signal.SIGKILL)
        _until(lambda: "grove: the worker stopped (signal 9); restarting it in 1 s"
               in serve.output(), 10, "the death was not reported", serve)
        second = _until(lambda: [p for p in children(serve.proc.pid) if p != first], 30,
                        "no new worker", serve)[0]
        seen.append(second)
        # The new child is visible a moment before serve says so: wait for the words.
        _until(lambda: f"grove: the worker is running again (pid {second})" in serve.output(),
               10, "the restart was not reported", serve)
        # The killed worker's scheduler went with it: one scheduler, not two.
        assert not any(alive(pid) for pid in group)
        _new_note_is_indexed(serve, key, "The greenhouse vents open at 24 degrees.")
    finally:
        code = serve.stop(signal.SIGTERM)
    assert code == 0, serve.output()
    _assert_nothing_left(serve, seen)


def test_a_killed_database_is_restarted_and_the_site_recovers(home):
    serve = Serve(home)
    seen: list[int] = []
    try:
        serve.wait_ready()
        key = owner_and_key(serve, "heal")
        seen.append(_worker(serve))
        assert _api(serve, key, "GET", "/v1/notes").status_code == 200
        server = EmbeddedPostgres(home)
        postmaster = server.server_pid()
        assert postmaster
        os.kill(postmaster, signal.SIGKILL)
        _until(lambda: f"grove: the database stopped (its server process {postmaster} is "
               "gone); restarting it in 1 s" in serve.output(), 10,
               "the death was not reported", serve)
        started = time.monotonic()
        _until(lambda: serve.get("/healthz").status_code == 200, 60,
               "the site did not answer again", serve)
        recovered = time.monotonic() - started
        assert server.server_pid() not in (None, postmaster)
        _until(lambda: "grove: the database is running again" in serve.output(), 10,
               "the restart was not reported", serve)
        # At the first attempt: the killed server's lock files do not stand in the way.
        assert "did not start again" not in serve.output()
        assert recovered < 15, f"the site answered again only after {recovered:.1f} s"
        # Pages and the API read the database again, and the worker's jobs run again.
        assert _api(serve, key, "GET", "/v1/notes").status_code == 200
        assert serve.get("/login/").status_code == 200
        _new_note_is_indexed(serve, key, "The rain barrel overflows after two storms.")
        seen.append(_worker(serve))
        print(f"site answered again {recovered:.1f} s after the restart began")
    finally:
        code = serve.stop(signal.SIGTERM)
    assert code == 0, serve.output()
    _assert_nothing_left(serve, seen)


def test_a_worker_that_keeps_dying_is_given_up_on_loudly(home):
    serve = Serve(home)
    seen: list[int] = []
    serve.wait_ready()
    worker = _worker(serve)
    for kill in range(4):  # three restarts are allowed within the window, not a fourth
        seen.append(worker)
        os.kill(worker, signal.SIGKILL)
        if kill < 3:
            worker = _until(lambda w=worker: [p for p in children(serve.proc.pid) if p != w],
                            30, "no new worker", serve)[0]
    code = serve.proc.wait(timeout=60)
    output = serve.output()
    assert code == 1, output
    for delay in (1, 2, 4):
        assert f"grove: the worker stopped (signal 9); restarting it in {delay} s" in output
    assert ("grove: error: the worker failed 4 times within 60 s (last: signal 9); "
            "giving up, stopping Grove") in output
    assert "Grove stopped." in output
    with pytest.raises(httpx.TransportError):
        serve.get("/login/")
    _assert_nothing_left(serve, seen)


def test_a_database_that_keeps_dying_is_given_up_on_loudly(home):
    serve = Serve(home)
    serve.wait_ready()
    workers = [_worker(serve)]
    _until(lambda: len(_group(workers[0])) == 2, 60, "the worker did not start", serve)
    server = EmbeddedPostgres(home)
    for kill in range(4):  # three restarts are allowed within the window, not a fourth
        postmaster = server.server_pid()
        assert postmaster
        os.kill(postmaster, signal.SIGKILL)
        if kill < 3:  # killed once it runs again, not while it starts
            _until(lambda n=kill + 1: serve.output().count(
                "grove: the database is running again") == n, 60,
                "the database was not restarted", serve)
    code = serve.proc.wait(timeout=90)
    output = serve.output()
    assert code == 1, output
    assert output.count("grove: the database is running again") == 3, output
    assert re.search(r"grove: error: the database failed 4 times within 60 s \(last: its "
                     r"server process \d+ is gone\); giving up, stopping Grove", output), output
    assert "Grove stopped." in output
    _assert_nothing_left(serve, workers)


def test_stop_after_activity_and_idle_leaves_nothing_even_with_a_dead_clients_query(home):
    """A grove process killed while its query runs (a job's worker killed after the
    warm-shutdown timeout, a `grove shell` killed from another terminal) leaves a backend
    that keeps running the query, named after a process that is gone: nobody can be
    using it, and it must not keep the database alive when `grove serve` stops."""
    import subprocess

    from tests.grove.runtime.processes import GROVE, grove_env

    serve = Serve(home)
    try:
        serve.wait_ready()
        key = owner_and_key(serve, "heal")
        workers = [_worker(serve)]
        _new_note_is_indexed(serve, key, "The compost heap is turned every second Sunday.")
        assert _api(serve, key, "GET", "/v1/notes").status_code == 200
        shell = subprocess.Popen(
            [*GROVE, "shell", "-c", "from django.db import connection\n"
             "connection.cursor().execute('SELECT pg_sleep(600)')"],
            env=grove_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        server = EmbeddedPostgres(home)

        def sleeping() -> bool:
            with psycopg.connect(host=str(server.socket_dir), user="postgres",
                                 dbname="postgres") as conn:
                return conn.execute(
                    "SELECT 1 FROM pg_stat_activity WHERE application_name = %s "
                    "AND query LIKE '%%pg_sleep%%'", [f"grove-{shell.pid}"]).fetchone() \
                    is not None

        _until(sleeping, 60, "the shell's query did not start", serve)
        shell.kill()
        shell.wait()
        killed_at = datetime.now(UTC)
        assert sleeping()  # its backend runs on, for a client that is gone

        # Idle: past a periodic recovery round and the worker's last job. Beat sends
        # `recover` in the same tick as the worker's heartbeat (both every 30 s since beat
        # started), so a heartbeat newer than the kill means a round was sent since...
        schedule = settings.CELERY_BEAT_SCHEDULE
        assert schedule["recover"]["schedule"] == schedule["heartbeat"]["schedule"]

        def beat_since_the_kill() -> bool:
            with psycopg.connect(host=str(server.socket_dir), user="postgres",
                                 dbname="grove") as conn:
                row = conn.execute("SELECT at FROM grove_heartbeat WHERE name = 'worker'")\
                    .fetchone()
            return row is not None and row[0] > killed_at

        def worker_idle() -> bool:
            """...and the worker has finished what it was sent: none of its database
            sessions is running a statement."""
            with psycopg.connect(host=str(server.socket_dir), user="postgres",
                                 dbname="postgres") as conn:
                return conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
                    "AND state <> 'idle'", [f"grove-{workers[0]}"]).fetchone()[0] == 0

        _until(beat_since_the_kill, 90, "no periodic round since the kill", serve)
        _until(worker_idle, 60, "the worker did not finish its periodic round", serve)
        assert serve.get("/healthz").status_code == 200
    finally:
        started = time.monotonic()
        code = serve.stop(signal.SIGTERM, timeout=90)
    took = time.monotonic() - started
    assert code == 0, serve.output()
    _assert_nothing_left(serve, workers)
    assert took < 30, f"stopping took {took:.1f} s"
