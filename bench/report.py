"""Markdown tables from bench/results/*.json (for docs/benchmarks.md).

    .venv/bin/python bench/report.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def read(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def md(headers: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def ms(s: dict[str, float]) -> str:
    return f"{s['p50']:,.1f} / {s['p95']:,.1f} / {s['p99']:,.1f}"


def provenance(d: dict[str, Any]) -> str:
    load = d.get("other_load", {})
    code = d.get("code_at_start", {"head": "?", "recall_py_sha256": "?"})
    return (f"code {code['head']} (recall.py {code['recall_py_sha256']}), "
            f"finished {d['finished_at']}, {d.get('seconds', '?')} s; other processes used "
            f"{load.get('foreign_cores_mean', '?')} cores on average during the run")


def quality() -> None:
    d = read("quality")
    if not d:
        return
    print("### quality —", provenance(d))
    rows = []
    for split in ("test", "train"):
        for mode in ("hybrid", "lexical", "vector"):
            r = d[f"{split}/{mode}"]
            rows.append([split, mode, f"{r['ndcg@10']:.4f}", f"{r['recall@50']:.3f}",
                         f"{r['recall@50_budget_lifted']:.3f}", r["mean_items_served"],
                         r["recall_ms"]["p50"]])
    print(md(["split", "mode", "nDCG@10", "recall@50 (as served, 50k chars)",
              "recall@50 (50 deep)", "items served", "recall() p50 ms"], rows))
    tuning = d.get("tuning")
    if tuning:
        rows = [[label, f"{v['ndcg@10']:.4f}", f"{v['recall@50']:.3f}"]
                for label, v in tuning["trials"].items()]
        tuned = d.get("tuned")
        if tuned:
            rows.append([f"combined: {tuned['label']}", f"{tuned['train']['ndcg@10']:.4f}",
                         f"{tuned['train']['recall@50']:.3f}"])
            rows.append([f"**test, once**: {tuned['label']}",
                         f"{tuned['test']['ndcg@10']:.4f}", f"{tuned['test']['recall@50']:.3f}"])
        print()
        print(md(["train trial (hybrid)", "nDCG@10", "recall@50"], rows))
    print()


def pipeline() -> None:
    d = read("pipeline")
    if not d:
        return
    print("### pipeline —", provenance(d))
    print(md(["measure", "p50 ms", "p95 ms", "p99 ms", "max ms"], [
        ["note_remember", *(d["save"][k] for k in ("p50", "p95", "p99", "max"))],
        ["note_remember, wake-up patched out",
         *(d["save_without_wakeup"][k] for k in ("p50", "p95", "p99", "max"))]]))
    raw = d["raw_model"]["notes_per_second"]
    rows = [["raw model, `embed()` over all 1,000", raw, "1.00"],
            ["raw model, claim order, batches of 32",
             d["raw_model_unsorted_batches_of_32"]["notes_per_second"],
             f"{d['raw_model_unsorted_batches_of_32']['notes_per_second'] / raw:.2f}"],
            ["pipeline, in-process `run_batch` loop", d["pipeline_in_process"]["notes_per_second"],
             f"{d['pipeline_in_process']['ratio_to_raw']:.2f}"]]
    for w in d["pipeline_worker"]:
        rows.append([f"`grove worker --concurrency={w['concurrency']}`, from start",
                     w["notes_per_second_from_start"], f"{w['ratio_to_raw_from_start']:.2f}"])
        rows.append([f"`grove worker --concurrency={w['concurrency']}`, steady state",
                     w["notes_per_second_steady"], f"{w['ratio_to_raw_steady']:.2f}"])
    print()
    print(md(["embedding path (1,000 notes, ~1 KB, 256 tokens)", "notes/s", "÷ raw"], rows))
    p = d["pipeline_in_process"]
    print(f"\nin-process: model {p['model_seconds']} s, database + overhead "
          f"{p['db_and_overhead_seconds']} s for {p['jobs']} jobs\n")


def latency() -> None:
    d = read("latency")
    if not d:
        return
    print("### latency —", provenance(d))
    labels = [("service, cached query vector (target path)", "service_cached_vector"),
              ("service, real query embedding", "service_real_model"),
              ("HTTP `POST /v1/recall`, real query embedding", "http_real_model"),
              ("service, cached vector, limit 50 / 50k chars", "service_cached_vector_limit50"),
              ("SQL replay, every statement recall sent", "sql_replay_all_statements"),
              ("SQL floor: the two arm statements", "sql_floor_two_arms"),
              ("lexical arm statement alone", "sql_lexical_arm"),
              ("semantic arm statements alone", "sql_semantic_arm")]
    rows = []
    for size, scale in d["scales"].items():
        extra = [(f"service, cached vector, DISTINCTIVE_SHARE={k.rsplit('_', 1)[1]}", k)
                 for k in scale if k.startswith("service_cached_vector_share_")]
        for label, key in labels + extra:
            if key in scale:
                rows.append([f"{int(size):,}", label, ms(scale[key])])
    print(md(["notes", "path", "p50 / p95 / p99 ms"], rows))
    for size, scale in d["scales"].items():
        m = scale["lexical_matched_notes_first_50_queries"]
        print(f"\n{size}: lexical arm matched {m['mean']:.0f} notes per query on average "
              f"({m['share_mean']:.1%}), max {m['max']}; load {scale['load']}")
    print(f"\nquery encode alone: {d['query_encode_ms']}\n")
    w = read("latency_whatif-66e9ce7-v1")
    if w:
        print("### what-if —", provenance(w))
        print(md(["variant at 100k (service, cached query vector)", "p50 / p95 / p99 ms"],
                 [[k.strip(), ms(v)] for k, v in w["variants"].items()]))
        print()


def library() -> None:
    d = read("library")
    if not d:
        return
    print("### library —", provenance(d))
    rows = [[label, ms(s)] for label, s in d["paths"].items()]
    rows += [[f"  search, {label}", ms(s)] for label, s in d.get("search_by_matches", {}).items()]
    print(md([f"path at {d['size']:,} notes (in-process request)", "p50 / p95 / p99 ms"], rows))
    if "search_matches" in d:
        print(f"\nnotes matched per search word: {d['search_matches']}; load {d['load']}\n")


def ingest_then_ask() -> None:
    rows = []
    for label, name in (("before (beat recount every 10 min)", "ingest_then_ask-before"),
                        ("now (statistics kept by the writes)", "ingest_then_ask")):
        d = read(name)
        if not d:
            continue
        print(f"### {name} —", provenance(d) if "other_load" in d and d["other_load"]
              else d.get("finished_at"))
        other = d.get("other_load_during_run", {})
        rows.append([label, d["code_at_start"]["head"],
                     f"{d['ndcg@10_right_after_indexing']:.4f}",
                     f"{d['ndcg@10_fresh_statistics']:.4f}", f"{d['difference']:+.4f}",
                     f"{d['saves_seconds']:.0f} / {d['indexed_after_seconds']:.0f}",
                     d["broker"]["peak_waiting"],
                     sum(d["broker_waiting_at_end"].values()),
                     other.get("foreign_cores_mean", "?")])
    if rows:
        print(md(["SciFact test, 5,183 notes over REST into a fresh `grove serve`", "code",
                  "nDCG@10 right after indexing", "with fresh statistics", "fresh − right after",
                  "saved / indexed after (s)", "peak broker messages",
                  "messages left at the end", "other load (cores)"], rows))
        print()


def brief() -> None:
    d = read("brief")
    if not d:
        return
    print("### brief —", provenance(d))
    rows = [[label, ms(s)] for label, s in d["paths"].items()]
    print(md([f"call at {d['size']:,} notes (in-process)", "p50 / p95 / p99 ms"], rows))
    meta = d["brief_meta"]
    print(f"\nthe default brief: {meta['returned']} in full, {meta['indexed']} indexed, "
          f"{meta['dropped']} dropped of {meta['available']}; {meta['tokens']} tokens of "
          f"{meta['budgetTokens']}; load {d['load']}\n")


def side_by_side(name: str = "side_by_side") -> None:
    d = read(name)
    if not d:
        return
    print(f"### {name} —", provenance(d))
    g, m = d["grove"], d["mem0"]
    r, rw = d["ratio_mem0_over_grove"], d["ratio_mem0_round_trip_over_grove"]
    rows = [
        ["Grove: HTTP `POST /v1/recall` (default budget)", ms(g["http_ms"]),
         f"{g['ndcg@10']:.4f}", g["mean_items"]],
        [f"mem0 {m['versions']['mem0ai']}: `Memory.search`, in-process", ms(m["search_ms"]),
         f"{m['ndcg@10']:.4f} ({m['ndcg@10_at_grove_depth']:.4f} at Grove's depth)",
         m["mean_items"]],
        ["mem0: round trip through the driver's pipe", ms(m["round_trip_ms"]), "", ""],
        ["**ratio mem0 ÷ Grove** (in-process search)",
         f"**{r['p50']} / {r['p95']} / {r['p99']}**", "", ""],
        ["ratio mem0 ÷ Grove (round trip)", f"{rw['p50']} / {rw['p95']} / {rw['p99']}", "", ""],
    ]
    print(md(["path", "p50 / p95 / p99 ms", "nDCG@10", "items"], rows))
    print(f"{d['queries']} queries over {d['corpus_docs']} documents, alternating; per-query "
          f"ratio median {d['per_query_ratio_median']}; loads: Grove {g['load']}, "
          f"mem0 {m['load']}\n")


def main() -> None:
    ingest_then_ask()
    quality()
    pipeline()
    latency()
    library()
    brief()
    side_by_side()


if __name__ == "__main__":
    main()
