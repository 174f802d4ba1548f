"""Rolling upgrades (README, "Upgrading"): the previous release's web process and worker
keep serving the main read and write paths on the new schema, and what they wrote is
whole for the new release. The previous release is the commit named in
`previous_release` (moved forward when a release lands), taken from this clone's
history with `git archive` and run with the same interpreter and dependencies."""

from __future__ import annotations

import io
import signal
import subprocess
import tarfile
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.grove.runtime.processes import Serve, create_user, make_home, remove_home, run_grove

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
PREVIOUS_RELEASE = (Path(__file__).with_name("previous_release")).read_text().split()[0]


@pytest.fixture(scope="module")
def previous_release(tmp_path_factory) -> Path:
    tree = tmp_path_factory.mktemp("previous-release")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar",
                              PREVIOUS_RELEASE], capture_output=True, check=False)
    assert archive.returncode == 0, (
        f"the previous release {PREVIOUS_RELEASE} is not in this clone's history: "
        f"{archive.stderr.decode(errors='replace')}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tree, filter="data")
    tree.chmod(0o755)
    return tree


def old_code(tree: Path) -> dict[str, str]:
    """The previous release's package first on the path (before the installed one). The
    process also starts in that tree: `python -m` puts the working folder first."""
    return {"PYTHONPATH": str(tree), "GROVE_METRICS_TOKEN": METRICS_TOKEN}


METRICS_TOKEN = "t" * 40  # /metrics came after the previous release


def runs_code_of(serve: Serve, tree: Path) -> bool:
    """Which code the process imported: the package's folder, from /proc, and what the
    release answers (only the new one has /metrics)."""
    cwd = Path(f"/proc/{serve.proc.pid}/cwd").resolve()
    metrics = httpx.get(serve.url + "/metrics", timeout=10,
                        headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).status_code
    return cwd == tree.resolve() and metrics == 404


def wait_indexed(api: httpx.Client, note_id: str, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        note = api.get(f"/v1/notes/{note_id}").json()["data"]
        if note["indexing"] == "ready" or time.monotonic() > deadline:
            return note
        time.sleep(0.5)


def test_the_previous_release_serves_the_new_schema(previous_release: Path):
    home = make_home()
    try:
        migrated = run_grove("migrate", "--noinput", home=home)  # the new release's schema
        assert migrated.returncode == 0, migrated.stderr
        create_user(home, "owner")
        made = run_grove("key", "create", "--user", "owner", "--name", "upgrade", "--all",
                         "--personal", home=home)
        assert made.returncode == 0, made.stderr
        headers = {"Authorization": f"Bearer {made.stdout.strip()}"}

        # Written by the new release before the old web process takes over.
        new = Serve(home, args=("--no-migrate",))
        try:
            new.wait_ready()
            with httpx.Client(base_url=new.url, headers=headers, timeout=30) as api:
                before = api.post("/v1/notes", json={
                    "content": "Compost needs turning every week.", "kind": "fact"})
                assert before.status_code == 201, before.text
                before_id = before.json()["data"]["id"]
        finally:
            new.stop(signal.SIGTERM)

        old = Serve(home, env=old_code(previous_release), args=("--no-migrate",),
                    cwd=previous_release)
        try:
            old.wait_ready()
            assert runs_code_of(old, previous_release)
            with httpx.Client(base_url=old.url, headers=headers, timeout=30) as api:
                assert api.get("/login/").status_code == 200
                notebook = api.post("/v1/notebooks", json={"name": "Garden"})
                assert notebook.status_code == 201, notebook.text
                saved = api.post("/v1/notes", json={
                    "content": "Tomatoes want eight hours of sun.", "kind": "fact",
                    "notebookId": notebook.json()["data"]["id"],
                    "operationId": str(uuid.uuid4())})
                assert saved.status_code == 201, saved.text
                old_id = saved.json()["data"]["id"]
                read = api.get(f"/v1/notes/{before_id}")
                assert read.status_code == 200 and "Compost" in read.json()["data"]["content"]
                corrected = api.patch(f"/v1/notes/{before_id}", json={
                    "content": "Compost needs turning twice a week.", "expectedVersion": 1})
                assert corrected.status_code == 200, corrected.text
                assert api.get("/v1/notes", params={"query": "tomatoes"}).status_code == 200
                assert api.get("/v1/notebooks").status_code == 200
                # The old worker embeds on the new schema; recall finds by meaning.
                assert wait_indexed(api, old_id)["indexing"] == "ready"
                recalled = api.post("/v1/recall", json={"query": "how much sun for tomatoes"})
                assert recalled.status_code == 200, recalled.text
                assert old_id in {item["note"]["id"] for item in recalled.json()["data"]}
                revisions = api.get(f"/v1/notes/{before_id}/revisions")
                assert revisions.status_code == 200
                assert len(revisions.json()["data"]) == 2
        finally:
            old.stop(signal.SIGTERM)
        assert "Traceback" not in old.output(), old.output()

        # The new release carries on with what the old one wrote.
        new = Serve(home, env={"GROVE_METRICS_TOKEN": METRICS_TOKEN})
        try:
            new.wait_ready()
            assert new.get("/metrics", headers={
                "Authorization": f"Bearer {METRICS_TOKEN}"}).status_code == 200
            with httpx.Client(base_url=new.url, headers=headers, timeout=30) as api:
                note = api.get(f"/v1/notes/{old_id}").json()["data"]
                assert note["content"] == "Tomatoes want eight hours of sun."
                assert note["version"] == 1 and note["indexing"] == "ready"
                assert api.get(f"/v1/notes/{before_id}").json()["data"]["version"] == 2
        finally:
            new.stop(signal.SIGTERM)
    finally:
        remove_home(home)
