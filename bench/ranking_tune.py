"""Ranking experiments on SciFact **train** (issue 21): BM25 in the lexical arm, title
weighting, and score fusion beyond reciprocal rank — tuned offline, on cached arm
outputs, so a sweep of hundreds of settings takes seconds.

The corpus is saved once through `note_remember` and embedded by the job pipeline, as
bench/quality.py does, into a kept home (/tmp/grove-bench-ranking). Per train query the
script records, through Grove's own code: the query's term weights (`term_weights`), the
notes containing each informative term (the lexical candidates, from the notes'
`search` vectors), and the semantic arm's 50 nearest with distances
(`recall_query.semantic_arm`). Scoring and fusion are then replayed in Python:

* `idf-sum`: today's lexical score (the idf sum of the kept terms a note contains),
  over the notes holding a distinctive term — checked against recall's own answers;
* `bm25`: Σ idf · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl)), over the same candidates,
  with dl the note's distinct lexemes; `title` counts a term in the first line `w` times;
* fusion: reciprocal rank (k), or a convex combination of normalised scores
  (α · lexical + (1 − α) · (1 − distance)), each arm min-max normalised per query or
  divided by its best.

The test split is never read here. `bench/quality.py` runs the chosen setting through
the public recall path, on test once.

    .venv/bin/python bench/ranking_tune.py [--reload]
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, write_result  # noqa: E402
from bench.quality import load_corpus  # noqa: E402
from bench.scifact import load, ndcg_at  # noqa: E402

LEXEME = re.compile(r"'((?:[^']|'')*)':([0-9A-D,]+)")


def parse_tsvector(text: str) -> dict[str, int]:
    """lexeme → number of positions (the tsvector's text form)."""
    return {m.group(1).replace("''", "'"): len(m.group(2).split(","))
            for m in LEXEME.finditer(text)}


def gather(env: Env, queries: dict[str, str]) -> dict[str, Any]:
    from django.db import connection

    import notebooks.selectors.recall as r
    from grove.embeddings import get_embedder
    from grove.embeddings.profile import active_profile_name
    from grove.kernel.tenancy import tenant
    from notebooks.selectors import access
    from notebooks.selectors.recall_query import SEMANTIC_SETTINGS, semantic_arm

    embedder = get_embedder()
    profile = active_profile_name()
    vectors = dict(zip(queries, embedder.embed(list(queries.values())), strict=True))
    out: dict[str, Any] = {"queries": {}}
    with tenant(env.actor, local=SEMANTIC_SETTINGS), connection.cursor() as cursor:
        cursor.execute("SELECT id, search::text, to_tsvector('english', "
                       "split_part(content, E'\\n', 1))::text FROM notebooks_note "
                       "WHERE status = 'active'")
        docs = {str(i): (parse_tsvector(full), parse_tsvector(title))
                for i, full, title in cursor.fetchall()}
        scope = r.Searched(access.Scope(actor=env.actor, notebook_ids=None, personal=True))
        for qid, text in queries.items():
            weights = r.term_weights(text)
            sql, params = semantic_arm(scope, vectors[qid].tolist(), 384, profile,
                                       candidates=50)
            cursor.execute(sql, params)
            nearest = [(str(n), float(d)) for n, d, made, cur, _ in cursor.fetchall()
                       if made == cur and d <= r.DEFAULT_MAX_DISTANCE]
            out["queries"][qid] = {"terms": weights.terms,
                                   "clauses": [list(c) for c in weights.selecting()],
                                   "nearest": nearest}
    out["docs"] = docs
    return out


def pools(data: dict[str, Any]) -> dict[str, list[tuple[str, dict, dict, int, float]]]:
    """Per query, its lexical candidates (notes holding a selecting clause), each with
    the query terms' counts in the note and in its first line, the note's distinct
    lexemes, and its score by the idf sums of the clauses it holds (the SQL pre-rank)."""
    out = {}
    for qid, q in data["queries"].items():
        terms, clauses = q["terms"], [set(c) for c in q["clauses"]]
        pool = []
        for doc_id, (full, head) in data["docs"].items():
            held = [c for c in clauses if c <= full.keys()]
            if not held:
                continue
            pool.append((doc_id, {t: full[t] for t in terms if t in full},
                         {t: head[t] for t in terms if t in head}, len(full),
                         sum(terms[t] for c in held for t in c)))
        out[qid] = pool
    return out


def lexical_ranking(q: dict[str, Any], pool: list[tuple[str, dict, dict, int, float]],
                    scorer: str, k1: float, b: float, title: float, avgdl: float,
                    rescore: int | None = None) -> list[tuple[str, float]]:
    """`rescore`: BM25 only for the best `rescore` candidates by the distinctive terms'
    idf sum (as SQL can afford: each scored note's vector is read)."""
    terms = q["terms"]
    if rescore is not None:
        pool = sorted(pool, key=lambda item: (-item[4], item[0]))[:rescore]
    scored = []
    for doc_id, tfs, heads, dl, _ in pool:
        if scorer == "idf-sum":
            score = sum(terms[t] for t in tfs)
        else:
            norm = k1 * (1 - b + b * dl / avgdl)
            score = 0.0
            for t, tf in tfs.items():
                tf = tf + (title - 1) * heads.get(t, 0)
                score += terms[t] * tf * (k1 + 1) / (tf + norm)
        scored.append((doc_id, score))
    scored.sort(key=lambda s: (-s[1], s[0]))
    return scored[:50]


def fuse(lexical: list[tuple[str, float]], nearest: list[tuple[str, float]], how: str,
         k: int, alpha: float, norm_kind: str = "minmax") -> list[str]:
    fused: dict[str, float] = {}
    if how == "rrf":
        for hits in ([d for d, _ in lexical], [d for d, _ in nearest]):
            for rank, doc in enumerate(hits):
                fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank + 1)
    else:
        def norm(pairs: list[tuple[str, float]]) -> dict[str, float]:
            if not pairs:
                return {}
            lo, hi = min(s for _, s in pairs), max(s for _, s in pairs)
            if norm_kind == "max":
                return {d: s / hi for d, s in pairs}
            return {d: (s - lo) / (hi - lo) if hi > lo else 1.0 for d, s in pairs}

        lex = norm(lexical)
        sem = norm([(d, 1 - dist) for d, dist in nearest])
        for doc in set(lex) | set(sem):
            fused[doc] = alpha * lex.get(doc, 0.0) + (1 - alpha) * sem.get(doc, 0.0)
    return sorted(fused, key=lambda d: (-fused[d], d))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reload", action="store_true")
    parser.add_argument("--regather", action="store_true",
                        help="read the arms again (after a change to recall)")
    parser.add_argument("--out", default="ranking-tune")
    args = parser.parse_args()
    if args.reload:
        shutil.rmtree("/tmp/grove-bench-ranking", ignore_errors=True)  # noqa: S108
    train = load("train")
    env, loaded = Env.kept("ranking")
    mapping_file = env.home / "note_to_doc.json"
    if not loaded:
        note_to_doc, info = load_corpus(env, train.corpus)
        mapping_file.write_text(json.dumps({str(k): v for k, v in note_to_doc.items()}))
        env.mark_loaded()
        print(info, flush=True)
    note_to_doc = {str(uuid.UUID(k)): v for k, v in json.loads(mapping_file.read_text()).items()}
    cache = env.home / "gathered.json"
    if cache.exists() and not args.regather:
        data = json.loads(cache.read_text())
    else:
        data = gather(env, train.queries)
        cache.write_text(json.dumps(data))
    avgdl = sum(len(full) for full, _ in data["docs"].values()) / len(data["docs"])
    candidates = pools(data)

    def evaluate(scorer: str, k1: float, b: float, title: float, how: str, k: int,
                 alpha: float, arms: str = "hybrid", rescore: int | None = None,
                 norm: str = "minmax") -> float:
        total = 0.0
        for qid, rel in train.qrels.items():
            q = data["queries"][qid]
            lexical = (lexical_ranking(q, candidates[qid], scorer, k1, b, title, avgdl, rescore)
                       if arms != "vector" else [])
            nearest = q["nearest"] if arms != "lexical" else []
            ranked = fuse(lexical, nearest, how, k, alpha, norm)
            total += ndcg_at([note_to_doc[d] for d in ranked], rel, 10)
        return round(total / len(train.qrels), 4)

    results: list[dict[str, Any]] = []

    def trial(**setting: Any) -> None:
        score = evaluate(**setting)
        results.append({**setting, "ndcg@10": score})
        print(json.dumps(results[-1]), flush=True)

    base = {"scorer": "idf-sum", "k1": 1.2, "b": 0.75, "title": 1.0, "how": "rrf", "k": 10,
            "alpha": 0.5}
    trial(**base)  # today's recall, replayed
    trial(**{**base, "arms": "lexical"})
    for k1, b in itertools.product((0.6, 0.9, 1.2), (0.3, 0.5, 0.75)):
        trial(**{**base, "scorer": "bm25", "k1": k1, "b": b, "arms": "lexical"})
    best = max((r for r in results if r.get("arms") == "lexical" and r["scorer"] == "bm25"),
               key=lambda r: r["ndcg@10"])
    bm25 = {"scorer": "bm25", "k1": best["k1"], "b": best["b"]}
    for title in (2.0, 5.0):
        trial(**{**base, **bm25, "title": title, "arms": "lexical"})
    for rescore in (100, 200):
        trial(**{**base, **bm25, "arms": "lexical", "rescore": rescore})
    for scorer in ({"scorer": "idf-sum"}, bm25, {**bm25, "rescore": 200},
                   {**bm25, "title": 5.0, "rescore": 200}):
        for k in (5, 10):
            trial(**{**base, **scorer, "k": k})
        for norm in ("minmax", "max"):
            for alpha in (0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9):
                trial(**{**base, **scorer, "how": "convex", "alpha": alpha, "norm": norm})
    best = max(results, key=lambda r: r["ndcg@10"] if r.get("arms", "hybrid") == "hybrid" else 0)
    print("best (train):", json.dumps(best))
    path = write_result(args.out, {"split": "train", "avgdl": round(avgdl, 1),
                                   "trials": results, "best": best}, env)
    print("wrote", path)
    env.close()


if __name__ == "__main__":
    main()
