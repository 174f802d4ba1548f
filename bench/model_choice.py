"""Which local model variant to ship: dense-only SciFact quality and speed of the fp32
and int8 ONNX graphs (the raw model, no database). Choose on the train split; the test
split is reported, never used to choose.

    .venv/bin/python bench/model_choice.py  [--out bench/results/model_choice.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.scifact import evaluate, load  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench/results/model_choice.json")
    args = parser.parse_args()
    from django.conf import settings

    settings.configure()  # the embedder reads no settings when built directly
    from grove.embeddings.local import LocalEmbedder

    results = {}
    for variant in ("all-MiniLM-L6-v2-fp32", "all-MiniLM-L6-v2-int8"):
        model = LocalEmbedder(variant=variant, threads=2)
        train, test = load("train"), load("test")
        ids = list(train.corpus)
        started = time.perf_counter()
        docs = model.embed([train.corpus[i] for i in ids])
        seconds = time.perf_counter() - started
        row = {"docs_per_second": round(len(ids) / seconds, 1), "profile": model.profile}
        for name, split in (("train", train), ("test", test)):
            qids = list(split.queries)
            queries = model.embed([split.queries[q] for q in qids])
            scores = queries @ docs.T
            top = np.argsort(-scores, axis=1)[:, :100]
            runs = {q: [ids[j] for j in top[i]] for i, q in enumerate(qids)}
            row[name] = {k: round(v, 4) for k, v in evaluate(runs, split).items()}
        results[variant] = row
        print(variant, row, flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
