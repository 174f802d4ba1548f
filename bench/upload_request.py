"""How long the website's upload holds its request (issue 36 item 2.6).

Writes the vault of `bench/ingest.py` (`--files`, default 5,000 Markdown files of ~10 KB),
zips it (deflated), starts the real `grove serve` on a fresh data folder (embedded
PostgreSQL, its worker; embeddings disabled, so the worker's time is the upload's and not
the model's), signs in as a person does and posts the zip to `/ingest/` `--runs` times.
For each: the request's wall time (until the answer, the redirect to the progress page),
the state the progress page first shows, and the time until it says done. The first run
makes every note; later runs upload the same zip (every file unchanged: a hash each).

    .venv/bin/python bench/upload_request.py [--files 5000] [--runs 2] [--out upload_request]

Run it from an older checkout (copy the script there) to measure that code: `grove` is
started as `python -m grove` from the current folder.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import httpx

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT))

from tests.grove.runtime.processes import (  # noqa: E402
    OWNER_PASSWORD,
    Serve,
    create_user,
    make_home,
    remove_home,
    run_grove,
)

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
STATE = re.compile(r'id="progress" data-state="(\w+)"')
ENV = {"GROVE_EMBEDDINGS": "disabled"}


def write_vault(folder: Path, files: int) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ingest import write_vault as vault  # bench/ingest.py's vault, the same files

    return vault(folder, files, random.Random(22))  # noqa: S311 - reproducible, not a secret


def zipped(folder: Path, out: Path) -> int:
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*.md")):
            archive.write(path, path.relative_to(folder).as_posix())
    return out.stat().st_size


def csrf(web: httpx.Client, path: str) -> str:
    found = CSRF.search(web.get(path).text)
    assert found, f"no CSRF token on {path}"
    return found.group(1)


def upload(web: httpx.Client, bundle: Path) -> dict:
    token = csrf(web, "/ingest/")
    data = bundle.read_bytes()
    start = time.perf_counter()
    answer = web.post("/ingest/", data={"csrfmiddlewaretoken": token, "notebook": "Vault",
                                        "kind": "fact", "subfolders": "on"},
                      files={"archive": ("vault.zip", io.BytesIO(data), "application/zip")})
    request_s = time.perf_counter() - start
    assert answer.status_code == 302, (answer.status_code, answer.text[:500])
    progress = answer.headers["location"]
    first_page = web.get(progress).text
    while True:
        state = STATE.search(web.get(progress).text)
        assert state, "no progress section"
        if state.group(1) in ("done", "failed"):
            break
        time.sleep(0.5)
    done_s = time.perf_counter() - start
    return {"request_s": round(request_s, 2), "until_done_s": round(done_s, 1),
            "state": state.group(1),
            "first_page_state": STATE.search(first_page).group(1)}  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out", default="upload_request")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="grove-upload-bench-", dir="/tmp"))  # noqa: S108
    home = make_home()
    serve = None
    try:
        size = write_vault(work / "vault", args.files)
        bundle = work / "vault.zip"
        zip_size = zipped(work / "vault", bundle)
        assert run_grove("migrate", "--noinput", home=home, **ENV).returncode == 0
        create_user(home, "bench")
        serve = Serve(home, env=ENV)
        serve.wait_ready()
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=False).stdout.strip()
        result = {"files": args.files, "bytes": size, "zip_bytes": zip_size,
                  "cpu": os.cpu_count(), "commit": commit, "runs": []}
        with httpx.Client(base_url=serve.url, timeout=600, follow_redirects=False) as web:
            token = csrf(web, "/login/")
            signed = web.post("/login/", data={"csrfmiddlewaretoken": token,
                                               "username": "bench",
                                               "password": OWNER_PASSWORD})
            assert signed.status_code == 302, signed.text[:500]
            for _ in range(args.runs):
                run = upload(web, bundle)
                result["runs"].append(run)
                print(json.dumps(run), flush=True)
        out = Path(__file__).resolve().parent / "results" / f"{args.out}.json"
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"written {out}")
    finally:
        if serve is not None:
            serve.stop(15)
        remove_home(home)
        subprocess.run(["rm", "-rf", str(work)], check=False)


if __name__ == "__main__":
    main()
