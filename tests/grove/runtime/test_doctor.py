"""`grove doctor` (issue 23 item 3) on real data folders: a broken setup lists each
problem with its fix and exits 1; a running `grove serve` checks out clean."""

from __future__ import annotations

import signal
import time

import pytest

from tests.grove.runtime.processes import Serve, run_grove

pytestmark = pytest.mark.slow


def test_a_broken_setup_lists_each_problem_with_its_fix(home):
    assert run_grove("migrate", "--noinput", home=home).returncode == 0
    checked = run_grove("doctor", home=home, REDIS_URL="redis://127.0.0.1:1/0")
    assert checked.returncode == 1, checked.stderr
    lines = checked.stdout.splitlines()
    assert "FIX   broker: Redis does not answer (ConnectionError): check REDIS_URL" in lines
    assert any(line.startswith("FIX   worker: no worker has reported yet") for line in lines)
    assert any(line.startswith("ok    versions: PostgreSQL") and "pgvector" in line
               for line in lines)
    assert "ok    roles: runtime role unprivileged; every account table under RLS" in lines
    assert lines[-1] == "2 problems found"


def test_a_running_grove_checks_out_clean(home):
    serve = Serve(home)
    try:
        serve.wait_ready()
        deadline, checked = time.monotonic() + 90, None
        while time.monotonic() < deadline:
            checked = run_grove("doctor", home=home)
            if checked.returncode == 0:
                break
            time.sleep(1)
        assert checked is not None and checked.returncode == 0, (
            checked.stdout if checked else "", serve.output()[-2000:])
        assert checked.stdout.splitlines()[-1] == "0 problems found"
        assert "ok    worker" in checked.stdout and "ok    broker" in checked.stdout
    finally:
        serve.stop(signal.SIGTERM)
