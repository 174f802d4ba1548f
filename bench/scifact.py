"""BEIR SciFact loading and scoring shared by the quality benchmarks.

nDCG@10 and recall@100 as BEIR computes them (graded gains, log2 discounts, ideal DCG
from the judged documents)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
# Where the BEIR SciFact files are: $GROVE_SCIFACT_DIR, a path relative to the checkout
# (or absolute); by default `shared/data/scifact` beside the checkout.
DATA_SETTING = "GROVE_SCIFACT_DIR"
DATA_DEFAULT = "../shared/data/scifact"


def data_folder() -> Path:
    return (CHECKOUT / os.environ.get(DATA_SETTING, DATA_DEFAULT)).resolve()


DATA = data_folder()


@dataclass(frozen=True)
class SciFact:
    corpus: dict[str, str]  # doc id → "title. text"
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]  # query id → {doc id: relevance}


def load(split: str, data: Path = DATA) -> SciFact:
    corpus = {}
    with open(data / "corpus.jsonl") as fh:
        for line in fh:
            doc = json.loads(line)
            title = doc.get("title", "").strip()
            corpus[doc["_id"]] = f"{title}\n\n{doc['text'].strip()}" if title else doc["text"]
    qrels: dict[str, dict[str, int]] = {}
    with open(data / "qrels" / f"{split}.tsv") as fh:
        next(fh)
        for line in fh:
            qid, did, score = line.split()
            qrels.setdefault(qid, {})[did] = int(score)
    queries = {}
    with open(data / "queries.jsonl") as fh:
        for line in fh:
            q = json.loads(line)
            if q["_id"] in qrels:
                queries[q["_id"]] = q["text"]
    return SciFact(corpus=corpus, queries=queries, qrels=qrels)


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(gain / math.log2(i + 2) for i, gain in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int = 100) -> float:
    hits = {doc for doc in ranked[:k] if relevant.get(doc, 0) > 0}
    total = sum(1 for gain in relevant.values() if gain > 0)
    return len(hits) / total if total else 0.0


def evaluate(runs: dict[str, list[str]], dataset: SciFact) -> dict[str, float]:
    ndcg = [ndcg_at(runs.get(q, []), rel) for q, rel in dataset.qrels.items()]
    recall = [recall_at(runs.get(q, []), rel) for q, rel in dataset.qrels.items()]
    return {"ndcg@10": sum(ndcg) / len(ndcg), "recall@100": sum(recall) / len(recall),
            "queries": len(ndcg)}
