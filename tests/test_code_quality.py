"""Lint and types are part of the suite, so CI enforces them (STYLE §11)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600, check=False, env={**os.environ, **env})


def test_ruff():
    result = run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy(tmp_path):
    # The django-stubs plugin loads Grove's settings: give it a throwaway data folder.
    result = run("mypy", "grove", "notebooks", "ask", "sharing",
                 GROVE_HOME=str(tmp_path / "home"), DJANGO_SETTINGS_MODULE="grove.settings")
    assert result.returncode == 0, result.stdout + result.stderr
