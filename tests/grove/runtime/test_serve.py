"""`grove serve` end to end in subprocesses: embedded PostgreSQL started, migrated and
served; stopped cleanly on SIGTERM/Ctrl-C; one server per data folder; a server left
behind by a killed owner is detected and restarted (issue: core, item 2)."""

import os
import signal
import stat
import tempfile
import time
from pathlib import Path

import pytest

from grove.runtime.embedded import EmbeddedPostgres
from tests.grove.runtime.processes import Serve, alive, children, run_grove

pytestmark = pytest.mark.slow


def postgres_running(home: Path) -> bool:
    return EmbeddedPostgres(home).is_running()


def test_fresh_data_folder_serves_the_owner_setup_page(home):
    serve = Serve(home)
    try:
        serve.wait_ready()
        assert f"Grove is running at {serve.url}/" in serve.output()
        response = serve.get("/", follow_redirects=True)
        assert response.status_code == 200
        assert str(response.url).endswith("/setup/")
        assert "Create owner account" in response.text
        assert serve.get("/static/grove/grove.css").status_code == 200
        assert postgres_running(home)
        assert stat.S_IMODE((home / "secret_key").stat().st_mode) == 0o600
    finally:
        code = serve.stop(signal.SIGINT)  # Ctrl-C
    assert code == 0, serve.output()
    assert "Grove stopped." in serve.output()
    assert not postgres_running(home)
    assert "Traceback" not in serve.output()


def test_a_set_base_url_wins_and_is_reported_when_it_is_not_the_served_address(home):
    serve = Serve(home, env={"GROVE_BASE_URL": "http://grove.lan:8000"})
    try:
        serve.wait_ready()
        notice = (f"grove: GROVE_BASE_URL is http://grove.lan:8000, this server listens on "
                  f"{serve.url}; links and OAuth name the base URL")
        assert serve.output().count(notice) == 1, serve.output()
        issuer = serve.get("/.well-known/oauth-authorization-server").json()["issuer"]
        assert issuer == "http://grove.lan:8000"
    finally:
        assert serve.stop(signal.SIGTERM) == 0


@pytest.mark.parametrize(("host", "port", "served"), [
    ("127.0.0.1", 8601, "http://127.0.0.1:8601"),
    ("0.0.0.0", 8000, "http://127.0.0.1:8000"),  # noqa: S104 - a name, not a bind
    ("::", 9000, "http://[::1]:9000"), ("192.168.1.5", 80, "http://192.168.1.5:80")])
def test_the_default_base_url_is_the_address_served(host, port, served):
    from grove.runtime.config import load
    from grove.runtime.serve import public_url

    config = load(create_home=False)
    unset = type(config)(**{**config.__dict__, "sources": {}})
    url, notice = public_url(unset, host, port)
    assert url == served
    assert (notice is not None) == (host in ("0.0.0.0", "::"))  # noqa: S104 - say so
    same = type(config)(**{**config.__dict__, "base_url": served,
                           "sources": {"GROVE_BASE_URL": "GROVE_BASE_URL"}})
    assert public_url(same, host, port) == (served, None)


def test_commands_migrate_createsuperuser_and_join_a_running_server(home):
    migrated = run_grove("migrate", home=home)
    assert migrated.returncode == 0, migrated.stderr
    created = run_grove(
        "createsuperuser", "--noinput", home=home, DJANGO_SUPERUSER_USERNAME="owner",
        DJANGO_SUPERUSER_PASSWORD="a long enough passphrase",
        DJANGO_SUPERUSER_EMAIL="owner@example.org",
    )
    assert created.returncode == 0, created.stderr
    # Each command started the embedded server and stopped it again.
    assert not postgres_running(home)

    serve = Serve(home)
    try:
        serve.wait_ready()
        assert serve.get("/login/").status_code == 200
        assert serve.get("/setup/").status_code == 404  # an account exists
        # A command run meanwhile joins the running server and leaves it running.
        listed = run_grove("showmigrations", "notebooks", home=home)
        assert listed.returncode == 0 and "[X] 0002_row_level_security" in listed.stdout
        assert postgres_running(home)
        assert serve.get("/login/").status_code == 200
        # A second `grove serve` on the same folder refuses instead of corrupting it.
        second = run_grove("serve", "--port", "1", home=home, timeout=60)
        assert second.returncode == 1
        assert "already using" in second.stderr and "Traceback" not in second.stderr
    finally:
        code = serve.stop(signal.SIGTERM)
    assert code == 0, serve.output()
    assert not postgres_running(home)


def test_serve_on_an_external_database_starts_nothing_embedded(django_db_setup, tmp_path):
    from django.conf import settings

    if not settings.GROVE_EMBEDDED_DB:
        pytest.skip("uses the embedded test server as the 'external' database")
    db = settings.DATABASES["default"]

    def url(role: str) -> str:
        return f"postgresql://{role}@/{db['NAME']}?host={db['HOST']}&port={db['PORT']}"

    home = tmp_path / "home"
    # With the test database's SECRET_KEY: its migrate stores the keys derived from it.
    serve = Serve(home, env={"DATABASE_URL": url("grove"),
                             "GROVE_MIGRATE_DATABASE_URL": url("grove_owner"),
                             "GROVE_SECRET_KEY": settings.SECRET_KEY})
    try:
        serve.wait_ready()
        assert serve.get("/login/", follow_redirects=True).status_code == 200
        assert not (home / "db").exists()
    finally:
        code = serve.stop(signal.SIGTERM)
    assert code == 0, serve.output()
    assert "Traceback" not in serve.output()


def test_a_killed_serve_leaves_nothing_running(home):
    """SIGKILL gives `grove serve` no chance to clean up; its worker is told by the
    kernel (parent-death signal), finishes, and — the last grove process out — stops
    the database."""
    first = Serve(home)
    first.wait_ready()
    workers = children(first.proc.pid)
    assert workers
    _wait_until_connected(home, workers[0])  # a worker killed mid-start cleans nothing
    first.stop(signal.SIGKILL)
    deadline = time.monotonic() + 60
    while (any(alive(w) for w in workers) or postgres_running(home)) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(w) for w in workers)
    assert not postgres_running(home)


def _wait_until_connected(home: Path, pid: int, seconds: float = 60) -> None:
    """Until the process has a database connection (grove names them grove-<pid>)."""
    import psycopg

    server = EmbeddedPostgres(home)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with psycopg.connect(host=str(server.socket_dir), user="postgres",
                             dbname="postgres") as conn:
            if conn.execute("SELECT 1 FROM pg_stat_activity WHERE application_name = %s",
                            [f"grove-{pid}"]).fetchone():
                return
        time.sleep(0.1)
    raise AssertionError(f"process {pid} never connected")


def test_a_server_left_by_killed_grove_processes_is_restarted(home):
    first = Serve(home)
    first.wait_ready()
    for worker in children(first.proc.pid):
        os.kill(worker, signal.SIGKILL)
    first.stop(signal.SIGKILL)
    # Nobody cleaned up: postgres runs on with no owner ...
    assert postgres_running(home)
    second = Serve(home)
    try:
        second.wait_ready()
        assert "left running by an earlier grove process" in second.output()
        assert second.get("/", follow_redirects=True).status_code == 200
    finally:
        code = second.stop(signal.SIGTERM)
    assert code == 0, second.output()
    # ... and the new owner stops it when it ends.
    assert not postgres_running(home)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs PostgreSQL as another OS user")
def test_root_refuses_a_data_folder_behind_a_private_folder():
    private = Path(tempfile.mkdtemp(prefix="grove-private-", dir="/tmp"))  # noqa: S108
    try:
        private.chmod(0o700)
        result = run_grove("migrate", home=private / "grove", timeout=60)
        assert result.returncode == 2
        assert "cannot enter" in result.stderr and "will not loosen" in result.stderr
        assert "Traceback" not in result.stderr
        assert stat.S_IMODE(private.stat().st_mode) == 0o700  # left as it was
    finally:
        import shutil

        shutil.rmtree(private)


def test_serve_reports_a_port_in_use(home):
    import socket

    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        serve = Serve(home, port=port)
        code = serve.proc.wait(timeout=90)
    assert code == 1
    assert "cannot listen on 127.0.0.1" in serve.output()
    assert "Grove is running" not in serve.output()
    assert "Traceback" not in serve.output()
    deadline = time.monotonic() + 10
    while postgres_running(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not postgres_running(home)


def _csrf(html: str) -> str:
    import re

    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert match, html[:500]
    return match.group(1)


def test_serve_embeds_a_new_note_within_seconds(home):
    """The embedded default runs its own worker: a note saved in the browser gets its
    vector from the real local model within a couple of seconds."""
    import uuid

    import httpx

    serve = Serve(home)
    try:
        serve.wait_ready()
        with httpx.Client(base_url=serve.url, timeout=10, follow_redirects=True) as web:
            page = web.get("/setup/")
            password = "a long enough passphrase 42"
            web.post("/setup/", data={"csrfmiddlewaretoken": _csrf(page.text),
                                      "username": "owner", "password": password,
                                      "password_again": password})
            home_page = web.get("/")
            saved = web.post("/notes/new", data={
                "csrfmiddlewaretoken": _csrf(home_page.text), "operation_id": str(uuid.uuid4()),
                "content": "The staging database is rebuilt every Sunday night.",
                "kind": "fact", "notebook": "", "task_id": ""})
            assert saved.status_code == 200 and "rebuilt every Sunday" in saved.text
            started = time.monotonic()
            while 'data-indexing="ready"' not in web.get("/").text:
                assert time.monotonic() - started < 20, "the note was not embedded"
                time.sleep(0.1)
            elapsed = time.monotonic() - started
    finally:
        assert serve.stop(signal.SIGTERM) == 0, serve.output()
    assert elapsed < 5, f"embedding took {elapsed:.1f}s"
