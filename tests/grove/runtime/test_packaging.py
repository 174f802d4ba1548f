"""`pip install .` must give a working Grove: templates and static files travel inside
the wheel (pyproject's force-include), not only in the source checkout."""

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.grove.runtime.processes import Serve

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]


def test_installed_wheel_serves_pages_and_static_files(home, tmp_path):
    target = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
         str(target), str(REPO)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert built.returncode == 0, built.stderr
    assert (target / "grove" / "_site" / "templates" / "base.html").is_file()
    assert (target / "grove" / "_site" / "static" / "grove" / "grove.css").is_file()
    assert (target / "grove" / "embedding_model" / "model.int8.onnx").is_file()
    assert (target / "grove" / "embedding_model" / "LICENSE").is_file()

    # Run from an unrelated folder with the installed copy first on the path.
    from tests.grove.runtime.processes import grove_env

    where = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.SITE_DIR)"],
        env=grove_env(home, PYTHONPATH=str(target), DJANGO_SETTINGS_MODULE="grove.settings"),
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )
    assert where.stdout.strip() == str(target / "grove" / "_site"), where.stderr
    serve = Serve(home, env={"PYTHONPATH": str(target)}, cwd=tmp_path)
    try:
        serve.wait_ready()
        page = serve.get("/", follow_redirects=True)
        assert page.status_code == 200 and "Create owner account" in page.text
        assert serve.get("/static/grove/grove.css").status_code == 200
    finally:
        assert serve.stop(signal.SIGTERM) == 0, serve.output()
