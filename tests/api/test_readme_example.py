"""The README's REST example works on the embedded default: the block is taken from
README.md and run with bash against a real `grove serve`; only the address (a free port
instead of 8000) and the path of the `grove` command are substituted."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.grove.runtime.processes import Serve, grove_env, run_grove

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    text = README.read_text()
    section = text[text.index("### Talk to it from a script"):]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, "the README lost its REST example"
    return match.group(1)


def start_with_owner(serve: Serve, home: Path) -> None:
    """Wait for `grove serve`, then create the owner `alice` with the real command."""
    serve.wait_ready()
    made = run_grove("createsuperuser", "--noinput", home=home,
                     DJANGO_SUPERUSER_USERNAME="alice",
                     DJANGO_SUPERUSER_PASSWORD="a long enough passphrase 42",
                     DJANGO_SUPERUSER_EMAIL="alice@example.com")
    assert made.returncode == 0, made.stderr


def test_readme_curl_example_works_verbatim(home):
    script = readme_example()
    assert "grove key create" in script and "/v1/notes" in script and "/v1/recall" in script
    assert "/v1/brief" in script
    serve = Serve(home)
    try:
        start_with_owner(serve, home)
        grove = " ".join(shlex.quote(p) for p in (sys.executable, "-m", "grove"))
        runnable = (script.replace("http://127.0.0.1:8000", serve.url)
                    .replace(".venv/bin/grove", grove))
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", runnable],
                                env=grove_env(home), capture_output=True, text=True,
                                timeout=120, check=False)
        assert result.returncode == 0, result.stderr
        first, second, brief = result.stdout.split("\n", 2)
        saved, recalled = json.loads(first), json.loads(second)
    finally:
        assert serve.stop(signal.SIGTERM) == 0, serve.output()
    assert saved["success"] is True and saved["data"]["kind"] == "fact"
    assert recalled["success"] is True
    # The brief, as markdown: the key's startup line, the date in the zone asked for,
    # and the note just saved, in full and among the recent changes.
    lines = brief.splitlines()
    assert lines[0].startswith("# Brief for laptop — ") and lines[0].endswith(
        "(Europe/Paris)"), brief
    assert "You are laptop in alice's Grove: read and write" in brief
    assert brief.count("The staging database is db-stage-2.") == 2, brief
    assert [item["note"]["id"] for item in recalled["data"]] == [saved["data"]["id"]]
    assert recalled["meta"]["available"] == 1


def test_database_down_is_503_and_nothing_is_claimed(home):
    """Stop the embedded PostgreSQL under a running `grove serve` without a connection
    pool: the API answers 503 `unavailable` with the envelope (never a fabricated
    success), and recovers by itself once `grove serve` has restarted the database."""
    import httpx

    from grove.runtime.embedded import EmbeddedPostgres

    serve = Serve(home, env={"GROVE_DB_POOL_SIZE": "0"})  # nothing waits for a connection
    try:
        start_with_owner(serve, home)
        created = run_grove("key", "create", "--user", "alice", "--name", "t", "--all",
                            home=home)
        assert created.returncode == 0, created.stderr
        key = created.stdout.strip()
        with httpx.Client(base_url=serve.url, timeout=20,
                          headers={"Authorization": f"Bearer {key}"}) as api:
            assert api.get("/v1/notes").status_code == 200
            EmbeddedPostgres(home)._stop_server()  # noqa: SLF001 - the outage under test
            down = api.post("/v1/notes", json={"content": "lost?", "kind": "fact"})
            assert down.status_code == 503, down.text
            body = down.json()
            assert body["success"] is False and body["error"]["code"] == "unavailable"
            assert body["error"]["requestId"] == down.headers["X-Request-Id"]
            deadline = time.monotonic() + 60
            while (back := api.get("/v1/notes")).status_code != 200:
                assert time.monotonic() < deadline, back.text
                time.sleep(0.5)
            assert back.json()["data"] == []  # the failed save left nothing behind
        assert "the database stopped" in serve.output()
    finally:
        serve.stop(signal.SIGTERM)


def test_a_save_during_a_database_restart_waits_and_is_stored_once(home):
    """With the pool (the default), a request that arrives while `grove serve` restarts
    a killed database waits for a connection instead of failing, and is stored once."""
    import httpx

    from grove.runtime.embedded import EmbeddedPostgres

    serve = Serve(home)
    try:
        start_with_owner(serve, home)
        created = run_grove("key", "create", "--user", "alice", "--name", "t", "--all",
                            home=home)
        assert created.returncode == 0, created.stderr
        with httpx.Client(base_url=serve.url, timeout=60, headers={
                "Authorization": f"Bearer {created.stdout.strip()}"}) as api:
            assert api.get("/v1/notes").status_code == 200
            EmbeddedPostgres(home)._stop_server()  # noqa: SLF001 - the outage under test
            saved = api.post("/v1/notes", json={"content": "kept", "kind": "fact"})
            assert saved.status_code == 201, saved.text
            notes = api.get("/v1/notes").json()["data"]
            assert [n["note"]["id"] for n in notes] == [saved.json()["data"]["id"]]
    finally:
        serve.stop(signal.SIGTERM)
