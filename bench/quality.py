"""Recall quality on BEIR SciFact through the service (`notebooks.selectors.recall.recall`).

Every corpus document becomes a note (title + text, cut to 6,000 characters at a word
boundary), saved with `note_remember` and embedded by the real `embed` job pipeline with
the configured local model. Each query is asked through `recall(limit=50)` in three modes:

* hybrid: recall as it is;
* lexical: `notebooks.selectors.recall.get_embedder` patched to return None (recall's lexical mode);
* vector: `notebooks.selectors.recall.term_weights` patched to weigh no term (no lexical hits).

Scores: nDCG@10 and recall@50 (the public path caps `limit` at 50, so BEIR's recall@100
cannot be measured through it). `max_chars` is capped at 50,000, which SciFact documents
(~1.5 KB each) exhaust before 50 items, so recall is run once with the character budget
lifted (module constant `RECALL_MAX_MAX_CHARS`, bench only) and the 50,000-character answer is
derived from it by the same budget rule; a sample is checked against real 50,000 calls.

Tuning (train split only, `--tune`): FUSION_ALPHA, DISTINCTIVE_SHARE, COMMON_TERM_SHARE (module
constants) and max_distance
(a recall() argument: its default is bound at import, so patching the constant would do
nothing) are swept one at a time on train; the test split is run with the shipped
constants, and once more with the train-best combination, reported as such.

    .venv/bin/python bench/quality.py [--tune] [--out quality]   # → bench/results/quality.json
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, summary_ms, table, truncate_words, write_result  # noqa: E402
from bench.scifact import SciFact, load, ndcg_at, recall_at  # noqa: E402

SERVED_MAX_CHARS = 50_000
LIFTED_MAX_CHARS = 10_000_000
MODES = ("hybrid", "lexical", "vector")
UUID_IN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@contextlib.contextmanager
def patched(module: Any, **values: Any) -> Iterator[None]:
    saved = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


@contextlib.contextmanager
def mode(name: str) -> Iterator[None]:
    import notebooks.selectors.recall as r

    if name == "hybrid":
        yield
    elif name == "lexical":
        with patched(r, get_embedder=lambda: None):
            yield
    elif name == "vector":
        with patched(r, term_weights=lambda query: r.Weights(terms={})):
            yield
    else:
        raise ValueError(name)


def load_corpus(env: Env, corpus: dict[str, str]) -> tuple[dict[uuid.UUID, str], dict[str, Any]]:
    from notebooks.services.remember import note_remember

    note_to_doc: dict[uuid.UUID, str] = {}
    seconds = []
    truncated = 0
    for doc_id, text in corpus.items():
        content = truncate_words(text, 6000)
        truncated += content != text.strip()
        started = time.perf_counter()
        out = note_remember(actor=env.actor, operation_id=uuid.uuid4(), content=content,
                            kind="fact")
        seconds.append(time.perf_counter() - started)
        note_to_doc[uuid.UUID(str(out.note.id).removeprefix("note:"))] = doc_id
    jobs_done, embed_seconds = env.drain_jobs()
    started = time.perf_counter()
    counted = env.refresh_stats()
    stats_seconds = time.perf_counter() - started
    info = {"notes": len(note_to_doc), "truncated_to_6000": truncated,
            "save_seconds_total": round(sum(seconds), 1), "save_ms": summary_ms(seconds),
            "embed_jobs": jobs_done, "embed_seconds": round(embed_seconds, 1),
            "embed_docs_per_second": round(jobs_done / embed_seconds, 1),
            "term_stats_notes": counted, "stats_seconds": round(stats_seconds, 1)}
    return note_to_doc, info


def note_uuid(item: Any) -> uuid.UUID:
    raw = str(item.note.id)
    return uuid.UUID(raw.split(":", 1)[1] if ":" in raw else raw)


def served_prefix(items: list[Any], max_chars: int) -> list[Any]:
    """The items `recall(max_chars=…)` would have returned (recall_budget.within_budget's rule)."""
    from notebooks.selectors.recall_budget import item_chars

    kept, spent = [], 0
    for item in items:
        cost = item_chars(item.note)
        if kept and spent + cost > max_chars:
            break
        spent += cost
        kept.append(item)
    return kept


def run_split(env: Env, split: SciFact, note_to_doc: dict[uuid.UUID, str], mode_name: str,
              *, max_distance: float | None = None, constants: dict[str, Any] | None = None,
              check_served: int = 0) -> dict[str, Any]:
    import notebooks.selectors.recall as r

    kwargs: dict[str, Any] = {}
    if max_distance is not None:
        kwargs["max_distance"] = max_distance
    deep: dict[str, list[str]] = {}
    served: dict[str, list[str]] = {}
    modes: set[str] = set()
    seconds = []
    checked = mismatched = 0
    with mode(mode_name), patched(r, RECALL_MAX_MAX_CHARS=LIFTED_MAX_CHARS, **(constants or {})):
        for qid, text in split.queries.items():
            started = time.perf_counter()
            out = r.recall(actor=env.actor, query=text, limit=50, max_chars=LIFTED_MAX_CHARS,
                           **kwargs)
            seconds.append(time.perf_counter() - started)
            modes.add(out.meta.mode)
            deep[qid] = [note_to_doc[note_uuid(i)] for i in out.data]
            prefix = served_prefix(list(out.data), SERVED_MAX_CHARS)
            served[qid] = [note_to_doc[note_uuid(i)] for i in prefix]
            if checked < check_served:
                real = r.recall(actor=env.actor, query=text, limit=50,
                                max_chars=SERVED_MAX_CHARS, **kwargs)
                checked += 1
                mismatched += [note_to_doc[note_uuid(i)] for i in real.data] != served[qid]

    def scores(runs: dict[str, list[str]]) -> dict[str, float]:
        n = len(split.qrels)
        return {
            "ndcg@10": round(sum(ndcg_at(runs.get(q, []), rel, 10)
                                 for q, rel in split.qrels.items()) / n, 4),
            "recall@10": round(sum(recall_at(runs.get(q, []), rel, 10)
                                   for q, rel in split.qrels.items()) / n, 4),
            "recall@50": round(sum(recall_at(runs.get(q, []), rel, 50)
                                   for q, rel in split.qrels.items()) / n, 4),
        }

    served_scores = scores(served)
    return {
        "mode": mode_name, "meta_modes": sorted(modes), "queries": len(split.queries),
        **served_scores,
        "recall@50_budget_lifted": scores(deep)["recall@50"],
        "ndcg@10_budget_lifted": scores(deep)["ndcg@10"],
        "mean_items_served": round(sum(map(len, served.values())) / len(served), 1),
        "mean_items_lifted": round(sum(map(len, deep.values())) / len(deep), 1),
        "empty_answers": sum(1 for v in deep.values() if not v),
        "served_check": {"checked": checked, "mismatched": mismatched},
        "recall_ms": summary_ms(seconds),
        "max_distance": max_distance, "constants": constants or {},
    }


def rest_rows(env: Env, results: dict[str, Any], note_to_doc: dict[uuid.UUID, str],
              splits: list[tuple[str, SciFact]]) -> list[list[Any]]:
    """Each split's queries over REST recall (limit 10, maxChars 50,000: what a client
    asks), scored with nDCG@10; `results[split/rest]`."""
    from bench.latency import HttpServer

    rows = []
    server = HttpServer(env)
    try:
        for split_name, split in splits:
            runs: dict[str, list[str]] = {}
            seconds = []
            for qid, text in split.queries.items():
                started = time.perf_counter()
                response = server.client.post("/v1/recall", json={
                    "query": text, "limit": 10, "maxChars": SERVED_MAX_CHARS})
                seconds.append(time.perf_counter() - started)
                response.raise_for_status()
                runs[qid] = [note_to_doc[uuid.UUID(UUID_IN.search(str(item["note"]["id"]))[0])]
                             for item in response.json()["data"]]
            n = len(split.qrels)
            res = {"ndcg@10": round(sum(ndcg_at(runs.get(q, []), rel, 10)
                                        for q, rel in split.qrels.items()) / n, 4),
                   "recall@10": round(sum(recall_at(runs.get(q, []), rel, 10)
                                          for q, rel in split.qrels.items()) / n, 4),
                   "queries": len(split.queries), "http_ms": summary_ms(seconds)}
            results[f"{split_name}/rest"] = res
            rows.append([split_name, "hybrid over REST (limit 10)", res["ndcg@10"], "", "", "",
                         res["http_ms"]["p50"]])
            print(rows[-1], flush=True)
    finally:
        server.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="quality")
    parser.add_argument("--kept", default="",
                        help="a kept bench home holding the corpus (e.g. ranking)")
    parser.add_argument("--match-budget", type=int, default=0,
                        help="run every split and mode with recall.MATCH_BUDGET set to this "
                             "(the budget's quality effect at a smaller corpus: 2,000 of 1M "
                             "notes is ~10 of SciFact's 5,183)")
    parser.add_argument("--splits", default="test,train",
                        help="which splits to run (test is run once with what ships)")
    parser.add_argument("--tune", action="store_true",
                        help="also sweep recall constants on the train split (~8 more minutes)")
    parser.add_argument("--rest", action="store_true",
                        help="also ask each split's queries over REST (`POST /v1/recall`, "
                             "limit 10, maxChars 50,000, a real uvicorn on the same data, an "
                             "API key with every notebook) and score nDCG@10")
    args = parser.parse_args()
    started = time.perf_counter()
    train, test = load("train"), load("test")
    import json

    env, loaded = Env.kept(args.kept) if args.kept else (Env.fresh("quality"), False)
    import notebooks.selectors.recall as r
    from grove.embeddings import get_embedder

    embedder = get_embedder()
    mapping = env.home / "note_to_doc.json"
    if loaded:  # a corpus saved and embedded by an earlier run (bench/ranking_tune.py)
        note_to_doc = {uuid.UUID(k): v for k, v in json.loads(mapping.read_text()).items()}
        load_info: dict[str, Any] = {"kept": str(env.home), "notes": len(note_to_doc)}
    else:
        print(f"loading {len(train.corpus)} notes "
              f"(profile {embedder.profile if embedder else None})", flush=True)
        note_to_doc, load_info = load_corpus(env, train.corpus)
        mapping.write_text(json.dumps({str(k): v for k, v in note_to_doc.items()}))
        env.mark_loaded()
    print(load_info, flush=True)

    shipped = {"FUSION_ALPHA": r.FUSION_ALPHA, "BM25_K1": r.BM25_K1, "BM25_B": r.BM25_B,
               "COMMON_TERM_SHARE": r.COMMON_TERM_SHARE,
               "DISTINCTIVE_SHARE": r.DISTINCTIVE_SHARE, "RESCORE": r.RESCORE,
               "MATCH_BUDGET": r.MATCH_BUDGET, "PAIR_TERMS": r.PAIR_TERMS,
               "max_distance": r.DEFAULT_MAX_DISTANCE, "CANDIDATES": r.CANDIDATES}
    run_constants = {"MATCH_BUDGET": args.match_budget} if args.match_budget else {}
    results: dict[str, Any] = {"load": load_info, "shipped_constants": shipped,
                               "run_constants": run_constants,
                               "profile": embedder.profile if embedder else None}
    rows = []
    for split_name, split in (("test", test), ("train", train)):
        if split_name not in args.splits.split(","):
            continue
        for m in MODES:
            res = run_split(env, split, note_to_doc, m, constants=run_constants,
                            check_served=25 if split_name == "test" else 0)
            results[f"{split_name}/{m}"] = res
            rows.append([split_name, m, res["ndcg@10"], res["recall@50"],
                         res["recall@50_budget_lifted"], res["mean_items_served"],
                         res["recall_ms"]["p50"]])
            print(rows[-1], res["served_check"], flush=True)

    if args.rest:
        rows += rest_rows(env, results, note_to_doc,
                          [(n, sp) for n, sp in (("test", test), ("train", train))
                           if n in args.splits.split(",")])

    tuning_rows = []
    if args.tune:
        trials: list[tuple[str, dict[str, Any], float | None]] = [("shipped", {}, None)]
        trials += [(f"FUSION_ALPHA={a}", {"FUSION_ALPHA": a}, None) for a in (0.5, 0.7)]
        # Which terms select lexical matches (1.0: every informative term, as before).
        trials += [(f"DISTINCTIVE_SHARE={s}", {"DISTINCTIVE_SHARE": s}, None)
                   for s in (0.005, 0.01, 0.05, 1.0)]
        trials += [(f"COMMON_TERM_SHARE={s}", {"COMMON_TERM_SHARE": s}, None) for s in (0.35,)]
        trials += [(f"max_distance={d}", {}, d) for d in (0.6, 0.7)]
        tuning: dict[str, Any] = {}
        for label, constants, distance in trials:
            if label == "shipped":
                res = results["train/hybrid"]
            else:
                res = run_split(env, train, note_to_doc, "hybrid", max_distance=distance,
                                constants=constants)
            tuning[label] = {"ndcg@10": res["ndcg@10"], "recall@50": res["recall@50"],
                             "recall@50_budget_lifted": res["recall@50_budget_lifted"]}
            tuning_rows.append(["train", label, res["ndcg@10"], res["recall@50"],
                                res["recall@50_budget_lifted"]])
            print(tuning_rows[-1], flush=True)
        base = tuning["shipped"]["ndcg@10"]
        # Combine, per knob, the train-best value if it beats the shipped one.
        best_constants: dict[str, Any] = {}
        best_distance: float | None = None
        for knob in ("FUSION_ALPHA", "COMMON_TERM_SHARE", "DISTINCTIVE_SHARE", "max_distance"):
            candidates = [(v["ndcg@10"], label) for label, v in tuning.items()
                          if label.startswith(knob + "=") and v["ndcg@10"] > base]
            if not candidates:
                continue
            _, label = max(candidates)
            value = float(label.split("=", 1)[1])
            if knob == "max_distance":
                best_distance = value
            else:
                best_constants[knob] = value
        results["tuning"] = {"split": "train", "trials": tuning,
                             "chosen_on_train": {**best_constants,
                                                 "max_distance": best_distance}}
        if best_constants or best_distance is not None:
            combo_train = run_split(env, train, note_to_doc, "hybrid",
                                    max_distance=best_distance, constants=best_constants)
            combo_test = run_split(env, test, note_to_doc, "hybrid",
                                   max_distance=best_distance, constants=best_constants)
            label = ", ".join([f"{k}={v}" for k, v in best_constants.items()]
                              + ([f"max_distance={best_distance}"] if best_distance else []))
            results["tuned"] = {"label": label, "train": combo_train, "test": combo_test}
            tuning_rows.append(["train", f"combined: {label}", combo_train["ndcg@10"],
                                combo_train["recall@50"], combo_train["recall@50_budget_lifted"]])
            tuning_rows.append(["test (once)", f"combined: {label}", combo_test["ndcg@10"],
                                combo_test["recall@50"], combo_test["recall@50_budget_lifted"]])

    results["seconds"] = round(time.perf_counter() - started, 1)
    path = write_result(args.out, results, env)
    print()
    print(table(["split", "mode", "nDCG@10", "recall@50 (50k chars)", "recall@50 (depth 50)",
                 "items served", "recall p50 ms"], rows))
    if tuning_rows:
        print()
        print(table(["split", "trial (hybrid)", "nDCG@10", "recall@50 (50k chars)",
                     "recall@50 (depth 50)"], tuning_rows))
    print(f"\nwrote {path} in {results['seconds']} s")
    env.close()


if __name__ == "__main__":
    main()
