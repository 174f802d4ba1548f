"""Does `/v1/openapi.json` say exactly what the server accepts? Schemathesis with every
check it has, against a live `grove serve`.

    python bench/schema_fuzz.py [--examples 100] [--workers 2] [--seed N]

A fresh data folder, `grove serve --port P` (its own PostgreSQL and worker; the rate
limits off — the fuzzer is one fast client), the owner made through the setup page, an
API key with everything from `grove key create`, and a few notebooks, notes, a
conversation and a share. Then the real CLI, twice:

    schemathesis --config-file bench/schemathesis.toml run URL/v1/openapi.json \\
        --checks all -H "Authorization: Bearer <key>" …

1. **with the key**, every operation;
2. **with the owner's website session** (cookie and CSRF header), the operations that
   take one (connections, shares, account settings, subtree lifecycle, export,
   conversations) — a key is refused there, so the first pass only reaches their 403.

`--checks all` is every check schemathesis has (server errors, status codes, content
types, headers, response schemas, negative data rejected, positive data accepted,
missing required headers, unsupported methods, ignored auth, use after free, resource
availability, …) plus `cursor_refusals_only` (bench/schemathesis_hooks.py), in every
phase (examples, coverage, fuzzing, stateful). Prints operations, cases and failures per
check; writes bench/results/schema_fuzz.json. `tests/api/test_fuzz.py` runs the same
`run_schemathesis` (bounded) in the suite.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

CONFIG = ROOT / "bench" / "schemathesis.toml"
HOOKS = "bench.schemathesis_hooks"
GROVE = [sys.executable, "-m", "grove"]
PASSWORD = "a long enough passphrase 42"  # noqa: S105 - a throwaway account
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
SETTINGS = ("GROVE_", "DATABASE_URL", "REDIS_URL", "DJANGO_")


def checks_run() -> list[str]:
    """Every check `--checks all` enables: schemathesis' own and Grove's hook."""
    import importlib

    from schemathesis.checks import CHECKS, load_all_checks

    load_all_checks()
    importlib.import_module(HOOKS)
    return sorted(CHECKS.get_all_names())


@dataclass(frozen=True)
class Caller:
    """Credentials for a run, given to schemathesis as the document's security schemes
    (so it knows them: `ignored_auth` takes them away to see they are needed, and it
    makes up none for the other scheme), and headers sent with every request."""

    auth: dict[str, dict[str, str]]
    headers: dict[str, str]
    http_headers: dict[str, str]  # the same credentials for a plain HTTP client

    def config(self) -> str:
        tables = [f"[auth.openapi.{scheme}]\n" + "".join(
            f"{name} = {json.dumps(value)}\n" for name, value in fields.items())
            for scheme, fields in self.auth.items()]
        return CONFIG.read_text() + "\n" + "\n".join(tables)


def key_auth(key: str) -> Caller:
    """An API key, as the document's `KeyAuth` scheme."""
    return Caller(auth={"KeyAuth": {"bearer": key}}, headers={},
                  http_headers={"Authorization": f"Bearer {key}"})


def session_auth(session_id: str, csrf: str) -> Caller:
    """The owner's website session, as the document's `OwnerSession` scheme (the
    `sessionid` cookie). Django's CSRF check also wants its `csrftoken` cookie beside the
    header: it rides in the same Cookie header, after the session's value."""
    return Caller(auth={"OwnerSession": {"api_key": f"{session_id}; csrftoken={csrf}"}},
                  headers={"X-CSRFToken": csrf},
                  http_headers={"Cookie": f"sessionid={session_id}; csrftoken={csrf}",
                                "X-CSRFToken": csrf})


def run_schemathesis(url: str, caller: Caller, *, max_examples: int, workers: int = 2,
                     seed: int | None = None, include: list[str] | None = None,
                     phases: str | None = None, report_dir: Path | None = None,
                     timeout: float = 3600) -> dict[str, Any]:
    """The schemathesis CLI with `--checks all` over `url`'s OpenAPI document, as
    `caller`; the run's figures from its JSON report (operations, cases, failures by
    code and check)."""
    own_dir = report_dir is None
    report_dir = report_dir or Path(tempfile.mkdtemp(prefix="grove-schemathesis-"))
    config = report_dir / "schemathesis.toml"  # bench/schemathesis.toml and the caller
    config.write_text(caller.config())
    command = [str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(config),
               "run", f"{url}/v1/openapi.json", "--checks", "all",
               "--max-examples", str(max_examples), "--workers", str(workers),
               "--report", "json", "--report-dir", str(report_dir), "--no-color"]
    for name, value in caller.headers.items():
        command += ["-H", f"{name}: {value}"]
    for name in include or ():
        command += ["--include-name", name]
    if seed is not None:
        command += ["--seed", str(seed)]
    if phases:
        command += ["--phases", phases]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": HOOKS,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    seconds = time.monotonic() - started
    reports = sorted(glob.glob(str(report_dir / "json-*.json")))
    if not reports:
        raise RuntimeError(f"schemathesis wrote no report:\n{done.stdout[-3000:]}\n"
                           f"{done.stderr[-3000:]}")
    report = json.loads(Path(reports[-1]).read_text())
    if own_dir:
        shutil.rmtree(report_dir, ignore_errors=True)
    failures = [{"code": f["code"], "check": f["title"], "count": f["count"],
                 "operations": f["operations"]} for f in report["failures"]]
    return {
        "exit_code": done.returncode,
        "seconds": round(seconds, 1),
        "seed": report["seed"],
        "operations": report["operations"],
        "phases": {name: phase["status"] for name, phase in report["phases"].items()},
        "cases": report["test_cases"]["generated"],
        "failures": failures,
        "failure_count": sum(f["count"] for f in failures),
        "errors": report["errors"],
        "warnings": {name: found for name, found in report["warnings"].items() if found},
        # The CLI's own account of each failure (what was sent, what came back).
        "output": done.stdout[-20000:] if failures or report["errors"] else "",
    }


def session_operations(url: str) -> list[str]:
    """The operations the owner's website session may call (their `security` names
    `OwnerSession`), as schemathesis names them."""
    document = httpx.get(f"{url}/v1/openapi.json", timeout=30).json()
    return sorted(f"{method.upper()} {path}" for path, item in document["paths"].items()
                  for method, operation in item.items()
                  if any("OwnerSession" in s for s in operation.get("security", ())))


def signed_in(url: str, username: str, password: str) -> Caller:
    """A website session, signed in through the login page."""
    with httpx.Client(base_url=url, timeout=30) as web:
        page = web.get("/login/")
        answer = web.post("/login/", data={"csrfmiddlewaretoken": CSRF.search(page.text)[1],
                                           "username": username, "password": password})
        if answer.status_code != 302:
            raise RuntimeError(f"sign-in failed: {answer.status_code}")
        return session_auth(web.cookies["sessionid"], web.cookies["csrftoken"])


def seed(url: str, key: Caller, session: Caller) -> None:
    """Something for the operations to find: notebooks (one inside another), notes of
    several kinds, a conversation and a share."""
    with httpx.Client(base_url=url, timeout=30, headers=key.http_headers) as api:
        home = api.post("/v1/notebooks", json={"name": "Home"}).json()["data"]["id"]
        garden = api.post("/v1/notebooks", json={"name": "Garden", "parentId": home})
        garden_id = garden.json()["data"]["id"]
        for body in ({"content": "The boiler is serviced every March.", "kind": "fact",
                      "notebookId": home},
                     {"content": "Tomatoes want full sun.", "kind": "solution",
                      "notebookId": garden_id, "tags": ["garden"]},
                     {"content": "Prefers tea to coffee.", "kind": "preference"},
                     {"content": "Half way through the shed inventory.", "kind": "handoff",
                      "taskId": "shed-1", "notebookId": home}):
            saved = api.post("/v1/notes", json=body)
            if saved.status_code != 201:
                raise RuntimeError(saved.text)
    with httpx.Client(base_url=url, timeout=30, headers=session.http_headers) as web:
        for path, body in (("/v1/conversations", {"id": "3f1f1c1e-8d7a-4c55-9b2c-1c1d2e3f4a5b"}),
                           ("/v1/shares", {"notebookId": home})):
            made = web.post(path, json=body)
            if made.status_code not in (200, 201):
                raise RuntimeError(f"{path}: {made.text}")


def grove(home: Path, *args: str, **extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SETTINGS)}
    done = subprocess.run([*GROVE, *args], env={**env, "GROVE_HOME": str(home), **extra},
                          capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"grove {args[0]}: {done.stderr.strip()}")
    return done.stdout


def run(*, examples: int, workers: int, seed_value: int | None) -> dict[str, Any]:
    from bench.scaleout import free_port

    home = Path(tempfile.mkdtemp(prefix="grove-fuzz-", dir="/tmp"))  # noqa: S108
    home.chmod(0o711)
    port = free_port()
    log = home.parent / f"{home.name}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(SETTINGS)}
    env.update({"GROVE_HOME": str(home), "GROVE_ADDRESS_RATE_LIMIT": "0",
                "GROVE_API_RATE_LIMIT": "0"})
    serve = None
    try:
        with log.open("w") as out:
            serve = subprocess.Popen([*GROVE, "serve", "--port", str(port)], env=env,
                                     stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while "Grove is running" not in log.read_text():
            if serve.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(log.read_text())
            time.sleep(0.2)
        with httpx.Client(base_url=url, timeout=30) as web:
            page = web.get("/setup/")
            made = web.post("/setup/", data={
                "csrfmiddlewaretoken": CSRF.search(page.text)[1], "username": "owner",
                "password": PASSWORD, "password_again": PASSWORD})
            if made.status_code != 302:
                raise RuntimeError(made.text[:500])
        key = key_auth(grove(home, "key", "create", "--user", "owner", "--name", "fuzz",
                             "--all").strip())
        session = signed_in(url, "owner", PASSWORD)
        seed(url, key, session)
        passes = {}
        passes["key"] = run_schemathesis(url, key, max_examples=examples,
                                         workers=workers, seed=seed_value)
        show("key", passes["key"])
        passes["session"] = run_schemathesis(url, session, max_examples=examples,
                                             workers=workers, seed=seed_value,
                                             include=session_operations(url))
        show("session", passes["session"])
        logged = log.read_text()
        return {"examples_per_operation": examples, "workers": workers,
                "checks": checks_run(), "passes": passes,
                "server_tracebacks": logged.count("Traceback"),
                # What the server logged of each error (the first few), to find its cause.
                "server_errors": [block[-3000:] for block
                                  in logged.split("Traceback (most recent call last):")[1:4]]}
    finally:
        if serve is not None:
            serve.terminate()
            serve.wait(60)
        shutil.rmtree(home, ignore_errors=True)
        log.unlink(missing_ok=True)


def show(name: str, figures: dict[str, Any]) -> None:
    ops = figures["operations"]
    print(f"\n== pass: {name} — {ops['tested']}/{ops['selected']} operations tested, "
          f"{figures['cases']} cases, {figures['seconds']} s, seed {figures['seed']}")
    print(f"   phases: {figures['phases']}")
    if figures["failures"]:
        for failure in figures["failures"]:
            print(f"   {failure['code']} {failure['check']}: {failure['count']} "
                  f"({', '.join(failure['operations'])})")
        print(figures["output"])
    else:
        print("   failures: 0")
    if figures["errors"]:
        print(f"   errors: {figures['errors']}")
    if figures["warnings"]:
        print(f"   warnings: {figures['warnings']}")


def main() -> None:
    from bench.common import write_result

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=100,
                        help="test cases per operation and phase (schemathesis' default)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    figures = run(examples=args.examples, workers=args.workers, seed_value=args.seed)
    total = sum(p["failure_count"] for p in figures["passes"].values())
    print(f"\nchecks: {', '.join(figures['checks'])}")
    print(f"failures in all: {total}; server tracebacks logged: {figures['server_tracebacks']}")
    for block in figures["server_errors"]:
        print(f"--- a server error, as logged:\n{block}")
    print(f"wrote {write_result('schema_fuzz', figures)}")
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
