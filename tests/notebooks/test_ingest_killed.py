"""A killed ingest, resumed (issue 22 item 6): the real `grove ingest` in a subprocess on
a fresh data folder, SIGKILLed mid-run, then run again. Each file is one transaction, so
the kill leaves every file done or untouched; the second run finishes the work and a
third writes nothing."""

from __future__ import annotations

import signal
import subprocess
import time

import psycopg
import pytest

from tests.grove.runtime.processes import GROVE, create_user, grove_env, run_grove

pytestmark = pytest.mark.slow

FILES = 400


def _db(home):
    from grove.runtime.embedded import SUPERUSER, database_settings

    # The cluster's superuser: row-level security is forced on every other role.
    db = database_settings(home, role=SUPERUSER)
    return psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"],
                           dbname=db["NAME"], autocommit=True)


def _state(home) -> tuple[int, int, int]:
    """(ledger rows, live notes, files on the ledger), across the one account."""
    with _db(home) as conn:
        ledger = conn.execute("SELECT count(*) FROM notebooks_ingestedchunk").fetchone()[0]
        notes = conn.execute(
            "SELECT count(*) FROM notebooks_note WHERE status = 'active'").fetchone()[0]
        files = conn.execute(
            "SELECT count(DISTINCT path) FROM notebooks_ingestedchunk").fetchone()[0]
    return ledger, notes, files


def _inserted(home) -> int:
    with _db(home) as conn:
        row = conn.execute("SELECT n_tup_ins FROM pg_stat_user_tables "
                           "WHERE relname = 'notebooks_ingestedchunk'").fetchone()
    return row[0] if row else 0


@pytest.fixture
def server(home):
    """The data folder's database kept up for the whole test, so it can be read while
    the ingest runs and after it is killed (the commands share it)."""
    from grove.runtime.embedded import EmbeddedPostgres

    running = EmbeddedPostgres(home)
    running.ensure_running()
    yield running
    running.release()


def test_a_killed_ingest_finishes_on_the_next_run(home, server, tmp_path):
    vault = tmp_path / "vault"
    for i in range(FILES):
        folder = vault / f"area-{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(f"Paragraph {p} of note {i}: " + "moraine samples " * 30
                           for p in range(4))
        (folder / f"note-{i:04}.md").write_text(f"# Note {i}\n\n{body}\n")
    assert run_grove("migrate", "--noinput", home=home).returncode == 0
    create_user(home, "alice")
    command = [*GROVE, "ingest", str(vault), "--notebook", "Vault", "--user", "alice",
               "--subfolders"]
    first = subprocess.Popen(command, env=grove_env(home), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while _inserted(home) < 60 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert first.poll() is None, "the ingest ended before it could be killed"
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    ledger, notes, files = _state(home)
    assert 0 < files < FILES
    # Every file on the ledger is whole: its notes all exist, none is half-written.
    assert notes == ledger

    second = run_grove(*command[3:], home=home, timeout=600)
    assert second.returncode == 0, second.stderr
    assert f"{FILES} files into 'Vault'" in second.stdout
    ledger_after, notes_after, files_after = _state(home)
    assert files_after == FILES and notes_after == ledger_after
    assert f"{ledger} unchanged" in second.stdout  # the killed run's files: no writes

    third = run_grove(*command[3:], home=home, timeout=600)
    assert third.returncode == 0, third.stderr
    assert "0 notes created, 0 updated, 0 retagged" in third.stdout
    assert f"{ledger_after} unchanged" in third.stdout
    assert _state(home) == (ledger_after, notes_after, FILES)
