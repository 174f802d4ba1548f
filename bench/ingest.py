"""Ingest throughput on a real-sized folder (issue 22 item 6).

Writes a vault of `--files` Markdown files (default 5,000, ~10 KB each: ~50 MB) from
SciFact abstracts when the data is there (else generated prose), with front matter
tags, headings and sub-folders; then runs the real `grove ingest` in a subprocess on a
fresh data folder (embedded PostgreSQL, no worker: embedding jobs are queued, not run —
the model's speed is `bench/pipeline.py`'s subject), three times:

1. the first run (every chunk a new note),
2. a rerun of the unchanged tree (every file's hash on the ledger: no writes),
3. a rerun after 1% of the files were edited.

Reports wall time, files/s and chunks/s, the ingest process's peak RSS (ru_maxrss of
the child), and what else used the CPU meanwhile (/proc/stat minus the child).

    .venv/bin/python bench/ingest.py [--files 5000] [--out ingest]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.scifact import DATA  # noqa: E402
from tests.grove.runtime.processes import (  # noqa: E402
    GROVE,
    create_user,
    grove_env,
    make_home,
    remove_home,
    run_grove,
)

CORPUS = DATA / "corpus.jsonl"


def texts() -> list[str]:
    if CORPUS.exists():
        with CORPUS.open() as handle:
            return [json.loads(line)["text"] for line in handle]
    rng = random.Random(1)  # noqa: S311 - reproducible filler, not a secret
    words = "glacier moraine sample field core ice melt season survey data".split()
    return [" ".join(rng.choice(words) for _ in range(200)) for _ in range(2000)]


def write_vault(folder: Path, files: int, rng: random.Random) -> int:
    pool, size = texts(), 0
    for i in range(files):
        area = folder / f"area-{i % 20:02}" / f"topic-{i % 7}"
        area.mkdir(parents=True, exist_ok=True)
        parts = [f"---\ntags: [bench, area-{i % 20}]\n---\n# Note {i}\n"]
        while sum(map(len, parts)) < 10_000:
            parts.append(f"\n## Section {len(parts)}\n\n{rng.choice(pool)}\n")
        text = "".join(parts)
        (area / f"note-{i:05}.md").write_text(text)
        size += len(text.encode())
    return size


def cpu_total() -> float:
    with open("/proc/stat") as handle:
        fields = [float(v) for v in handle.readline().split()[1:8]]
    return sum(fields) - fields[3] - fields[4]  # busy jiffies


def timed(home: Path, folder: Path) -> dict:
    before_cpu, before_self = cpu_total(), resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([*GROVE, "ingest", str(folder), "--notebook", "Vault", "--user",
                           "bench", "--subfolders"], env=grove_env(home),
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after_self = resource.getrusage(resource.RUSAGE_CHILDREN)
    tick = os.sysconf("SC_CLK_TCK")
    child_cpu = (after_self.ru_utime + after_self.ru_stime
                 - before_self.ru_utime - before_self.ru_stime)
    others = max(0.0, (cpu_total() - before_cpu) / tick - child_cpu) / wall
    assert done.returncode == 0, done.stderr[-2000:]
    summary = done.stdout.splitlines()[0]
    numbers = {name: int(count) for count, name in re.findall(
        r"(\d+) (?:notes )?(created|updated|retagged|unchanged|removed)", summary)}
    chunks = sum(numbers.values()) - numbers.get("removed", 0)
    files = int(summary.split()[0])
    return {"wall_s": round(wall, 2), "files": files, "chunks": chunks,
            "files_per_s": round(files / wall, 1), "chunks_per_s": round(chunks / wall, 1),
            "child_cpu_s": round(child_cpu, 1), "others_cores": round(others, 2),
            "peak_rss_mb": round(after_self.ru_maxrss / 1024, 1), "summary": summary}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--out", default="ingest")
    args = parser.parse_args()
    rng = random.Random(22)  # noqa: S311 - reproducible vault, not a secret
    work = Path(tempfile.mkdtemp(prefix="grove-ingest-bench-", dir="/tmp"))  # noqa: S108
    home = make_home()
    try:
        vault = work / "vault"
        size = write_vault(vault, args.files, rng)
        assert run_grove("migrate", "--noinput", home=home).returncode == 0
        create_user(home, "bench")
        result = {"files": args.files, "bytes": size, "cpu": os.cpu_count()}
        result["first"] = timed(home, vault)
        print(json.dumps(result["first"]), flush=True)
        result["unchanged"] = timed(home, vault)
        print(json.dumps(result["unchanged"]), flush=True)
        edited = sorted(vault.rglob("*.md"))[:: 100]
        for path in edited:
            path.write_text(path.read_text() + "\n\nEdited: one more paragraph.\n")
        result["edited_1pct"] = timed(home, vault)
        print(json.dumps(result["edited_1pct"]), flush=True)
        out = ROOT / "bench" / "results" / f"{args.out}.json"
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"written {out}")
    finally:
        remove_home(home)
        subprocess.run(["rm", "-rf", str(work)], check=False)


if __name__ == "__main__":
    main()
