"""What the client hooks cost a session (issue 39): the tokens `grove hook session-start`
and `grove hook prompt` add to the model's context, how often a prompt gets anything,
and how long each hook takes, as a client runs it.

One run, on a fresh data folder:

1. The first `--notes` SciFact documents are bulk-loaded as notes with their real
   embeddings (as `bench/latency.py` loads them), and an account's everyday memory on
   top, saved through the service: a vision, 6 pinned preferences, 20 decisions and
   facts about a project, a live handoff.
2. `grove serve --port N`, as the README starts Grove; an API key with everything.
3. `grove hook session-start` run `--starts` times and `grove hook prompt` once for each
   of `--prompts` SciFact *train* queries (real questions whose answer notes exist) and
   as many generic coding requests that no note answers — each a new `grove` process
   fed the hook input Claude Code documents, exactly as the client runs it. Tokens are
   counted with the brief's counter (all-MiniLM-L6-v2's WordPiece) on the
   `additionalContext` the client adds.

    .venv/bin/python bench/hooks.py [--notes 2000] [--starts 10] [--prompts 60]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import (  # noqa: E402
    Env,
    percentile,
    summary_ms,
    table,
    truncate_words,  # noqa: E402
    write_result,
)
from bench.http_overhead import Serve  # noqa: E402
from bench.latency import bulk_load, doc_vectors, rebuild_hnsw  # noqa: E402
from bench.scifact import load  # noqa: E402

GENERIC = [
    "Refactor the parser module into two smaller files and keep the tests passing.",
    "Why does the CI job fail on the lint step after my last commit?",
    "Add a --verbose flag to the command line tool and document it in the README.",
    "Rename the variable cfg to config everywhere in the project.",
    "Write a unit test for the date formatting helper with a fixed clock.",
    "Bump the dependency versions and regenerate the lock file.",
]
MEMORY = [
    ("preference", "Prefers small pull requests with one change each.", True),
    ("preference", "Write commit messages in the imperative mood.", True),
    ("preference", "Run the whole test suite before pushing.", True),
    ("preference", "Use British spelling in user-facing text.", True),
    ("preference", "Keep functions under forty lines where practical.", True),
    ("preference", "Answer with the code first, then a short explanation.", True),
] + [("decision", f"Decision {n}: the billing service uses PostgreSQL advisory locks for "
      f"job {n}, chosen over Redis locks for durability.", False) for n in range(10)] + [
    ("fact", f"Fact {n}: the staging cluster pg-stage-{n} restarts nightly at 03:{n:02d} "
     "UTC.", False) for n in range(10)]


def run_hook(event: str, stdin: dict[str, Any], url: str, key: str, home: Path
             ) -> tuple[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROVE_")}
    env.update(GROVE_URL=url, GROVE_API_KEY=key, GROVE_CLIENT_CONFIG=str(home / "client.json"))
    started = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "grove", "hook", event, "--client", "claude-code"],
        input=json.dumps(stdin), env=env, capture_output=True, text=True, timeout=120,
        check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    if not done.stdout.strip():
        return "", seconds
    return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"], seconds


def tokens_summary(values: list[int]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    return {"n": len(values), "median": percentile(values, 50), "p95": percentile(values, 95),
            "max": max(values)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--prompts", type=int, default=60)
    parser.add_argument("--out", default="hooks")
    args = parser.parse_args()
    started_all = time.perf_counter()
    data, train = load("test"), load("train")
    doc_ids = list(data.corpus)[:args.notes]
    docs = [data.corpus[d] for d in doc_ids]
    loaded_ids = set(doc_ids)
    questions = [train.queries[q] for q in train.qrels
                 if set(train.qrels[q]) & loaded_ids][:args.prompts]

    env = Env.fresh("hooks")
    from grove.embeddings import configured_profile, get_embedder
    from grove.embeddings.tokens import count_tokens
    from grove.identity.services import connection_create_key
    from notebooks import services

    vectors = doc_vectors(get_embedder(), doc_ids, [truncate_words(d, 6000) for d in docs])
    rebuild_hnsw(env, drop_only=True)
    bulk_load(env, 0, len(docs), doc_ids, docs, vectors, configured_profile()[0])
    rebuild_hnsw(env)
    env.refresh_stats()
    services.vision_update(actor=env.actor, operation_id=uuid.uuid4(), content=(
        "Ship the billing service rewrite by March without losing a payment."))
    for kind, content, pinned in MEMORY:
        services.note_remember(actor=env.actor, operation_id=uuid.uuid4(), content=content,
                               kind=kind, pinned=pinned)
    services.note_remember(actor=env.actor, operation_id=uuid.uuid4(), kind="handoff",
                           task_id="billing-locks", content=(
                               "Billing locks: advisory locks in place for jobs 0-4; next, "
                               "jobs 5-9 and the retry path."))
    key = connection_create_key(actor=env.actor, name="bench", personal=True,
                                all_notebooks=True).key
    serve = Serve(env, key, env.home / "serve.log")
    url = f"http://127.0.0.1:{serve.port}"
    results: dict[str, Any] = {"notes": len(docs) + len(MEMORY) + 1}
    try:
        cwd = str(env.home)
        start_input = {"session_id": "bench", "transcript_path": "", "cwd": cwd,
                       "hook_event_name": "SessionStart", "source": "startup"}
        run_hook("session-start", start_input, url, key, env.home)  # warm the server
        starts = [run_hook("session-start", start_input, url, key, env.home)
                  for _ in range(args.starts)]
        prompts: dict[str, list[tuple[str, float]]] = {"question": [], "generic": []}
        for kind, texts in (("question", questions),
                            ("generic", (GENERIC * 20)[:len(questions)])):
            for text in texts:
                prompts[kind].append(run_hook("prompt", {
                    "session_id": "bench", "transcript_path": "", "cwd": cwd,
                    "hook_event_name": "UserPromptSubmit", "prompt": text}, url, key,
                    env.home))
    finally:
        serve.close()
    results["session_start"] = {
        "tokens": tokens_summary([count_tokens(c) for c, _ in starts]),
        "chars": tokens_summary([len(c) for c, _ in starts]),
        "ms": summary_ms(s for _, s in starts)}
    for kind, runs in prompts.items():
        injected = [c for c, _ in runs if c]
        results[f"prompt_{kind}"] = {
            "runs": len(runs), "injected": len(injected),
            "tokens": tokens_summary([count_tokens(c) for c in injected]),
            "ms": summary_ms(s for _, s in runs)}
    rows = [["session start", f"{args.starts}/{args.starts}",
             results["session_start"]["tokens"]["median"],
             results["session_start"]["tokens"]["p95"],
             f"{results['session_start']['ms']['p50']:.0f}"]]
    for kind in ("question", "generic"):
        found = results[f"prompt_{kind}"]
        rows.append([f"prompt ({kind})", f"{found['injected']}/{found['runs']}",
                     found["tokens"].get("median", 0), found["tokens"].get("p95", 0),
                     f"{found['ms']['p50']:.0f}"])
    print(table(["hook", "injected", "median tokens", "p95 tokens", "median ms"], rows))
    results["seconds"] = round(time.perf_counter() - started_all, 1)
    print(f"wrote {write_result(args.out, results, env)}", flush=True)
    env.close()


if __name__ == "__main__":
    main()
