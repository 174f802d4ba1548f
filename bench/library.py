"""Library page render time at 100k notes (SPEC §12: ≤ 150 ms).

Data: 100,000 notes bulk-loaded exactly as in latency.py (SciFact documents and
variations), spread round-robin over 20 notebooks (every 10th note stays Personal);
vectors are random (the library page never reads them; the HNSW index is not built).
Then term statistics and VACUUM ANALYZE.

Measured: the whole request through Django's test client in-process — middleware,
session, the search selector under row-level security, template rendering — i.e.
everything but the network and the ASGI server. Each path gets 10 warm-up requests,
then `--samples` measured requests (default 200):

* `GET /` — all notes, newest first (the page a person opens);
* `GET /?notebook=<id>` — one notebook;
* `GET /?q=<word>` — a keyword search (200 words drawn from SciFact claims,
  relevance-sorted, with highlighted snippets; the word as typed, so its last letters
  are a prefix too);
* `GET /?q=<prefix>` — search as you type: the first 1, 2, 3, 4 and 5 letters of 40
  of those words, as each key sends them;
* `GET /?status=archived` — a filter with few matches;
* the second page of `GET /` (signed cursor), as HTMX asks for it when scrolling.

    .venv/bin/python bench/library.py [--size 100000] [--samples 200] [--kept NAME]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, summary_ms, table, write_result  # noqa: E402
from bench.latency import bulk_load, rebuild_hnsw  # noqa: E402
from bench.scifact import load  # noqa: E402

NOTEBOOKS = 20
WARMUP = 10


def spread_over_notebooks(env: Env) -> list[str]:
    from django.db import connection

    from grove.kernel.tenancy import tenant
    from notebooks import services

    ids = [str(services.notebook_create(actor=env.actor, operation_id=_op(),
                                        name=f"Notebook {n:02d}").id)
           for n in range(NOTEBOOKS)]
    with tenant(env.actor), connection.cursor() as cursor:
        cursor.execute(
            "WITH numbered AS (SELECT id, row_number() OVER (ORDER BY id) AS n "
            "FROM notebooks_note) "
            "UPDATE notebooks_note SET notebook_id = (%s::uuid[])[1 + numbered.n %% %s] "
            "FROM numbered WHERE notebooks_note.id = numbered.id AND numbered.n %% 10 <> 0",
            [ids, NOTEBOOKS])
    return ids


def _op() -> str:
    import uuid

    return str(uuid.uuid4())


def timed_get(client: Any, path: str, samples: int) -> list[float]:
    for _ in range(WARMUP):
        assert client.get(path).status_code == 200
    seconds = []
    for _ in range(samples):
        started = time.perf_counter()
        response = client.get(path)
        seconds.append(time.perf_counter() - started)
        assert response.status_code == 200
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--out", default="library")
    parser.add_argument("--only", metavar="TEXT", default="",
                        help="measure only the paths whose label contains TEXT (\"?q=\": "
                             "the two searches)")
    parser.add_argument("--kept", metavar="NAME",
                        help="keep the loaded corpus in /tmp/grove-bench-NAME between runs "
                             "(a later run, of this or another commit, migrates and measures "
                             "the same data)")
    args = parser.parse_args()
    started_all = time.perf_counter()

    data = load("test")
    doc_ids = list(data.corpus)
    docs = [data.corpus[d] for d in doc_ids]
    env, loaded = Env.kept(args.kept) if args.kept else (Env.fresh("library"), False)
    if loaded:
        from grove.kernel.tenancy import tenant
        from notebooks.models import Notebook

        with tenant(env.actor):
            notebook_ids = [str(i) for i in Notebook.objects.order_by("name")
                            .values_list("id", flat=True)]
        env.owner_sql("VACUUM ANALYZE notebooks_note")  # a migration may have added to it
        info: dict[str, Any] = {"kept": args.kept}
    else:
        from grove.embeddings import configured_profile

        profile = configured_profile()[0]
        rng = np.random.default_rng(7)
        vectors = rng.normal(size=(len(docs), 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rebuild_hnsw(env, drop_only=True)
        t0 = time.perf_counter()
        info = bulk_load(env, 0, args.size, doc_ids, docs, vectors, profile)
        notebook_ids = spread_over_notebooks(env)
        env.refresh_stats()
        info["load_total_seconds"] = round(time.perf_counter() - t0, 1)
        if args.kept:
            env.mark_loaded()
    print(args.size, info, flush=True)

    from django.test import Client

    from grove.models import Account

    client = Client(HTTP_HOST="127.0.0.1")  # a host ALLOWED_HOSTS accepts (the base URL's)
    client.force_login(Account.objects.get(id=env.account_id))
    words = sorted({w.lower() for q in data.queries.values()
                    for w in re.findall(r"[A-Za-z]{5,}", q)})
    picked = random.Random(1).sample(words, args.samples)  # noqa: S311 - bench data

    first = client.get("/")
    assert first.status_code == 200, first.status_code
    more = re.search(r'<li class="more"><a href="([^"]+)"', first.content.decode())
    assert more is not None, "no next page on the first page"
    cursor = more.group(1)
    second_page = "/" + cursor.replace("&amp;", "&")

    paths: dict[str, Any] = {
        "GET / (all notes, newest first)": lambda: timed_get(client, "/", args.samples),
        "GET /?notebook=<id>": lambda: timed_get(client, f"/?notebook={notebook_ids[3]}",
                                                 args.samples),
        "GET /?status=archived": lambda: timed_get(client, "/?status=archived", args.samples),
        "GET / page 2 (HTMX, signed cursor)": lambda: timed_get_htmx(client, second_page,
                                                                     args.samples),
        "GET /?q=<word> (search, relevance)": lambda: SEARCH_SECONDS.extend(
            search_words(client, picked)) or SEARCH_SECONDS,
        "GET /?q=<prefix> (typing: 1–5 letters)": lambda: search_words(
            client, [w[:n] for w in picked[:40] for n in range(1, 6)], record=False),
    }
    results: dict[str, Any] = {"size": args.size, "samples": args.samples, "load": info,
                               "paths": {}}
    for label, run in paths.items():
        if args.only not in label:
            continue
        results["paths"][label] = summary_ms(run())
        print(label, results["paths"][label], flush=True)
    ranked = [m for m in MATCHED if m is not None]
    results["search_matches"] = {
        "ranked_words": len(ranked), "ranked_median_matches": int(np.median(ranked or [0])),
        "too_common_to_rank": sum(m is None for m in MATCHED)}
    by_size = list(zip(MATCHED, SEARCH_SECONDS, strict=True))
    results["search_by_matches"] = {
        label: summary_ms(times) for label, times in (
            ("ranked (≤ 1,000 matches)", [t for m, t in by_size if m is not None]),
            ("newest first (> 1,000 matches)", [t for m, t in by_size if m is None]))
        if times}
    print("search matches", results["search_matches"], results["search_by_matches"])
    results["seconds"] = round(time.perf_counter() - started_all, 1)
    path = write_result(args.out, results, env)
    rows = [[label, s["p50"], s["p95"], s["p99"]] for label, s in results["paths"].items()]
    print(table(["path", "p50 ms", "p95 ms", "p99 ms"], rows))
    print(f"wrote {path}")
    env.close()


def timed_get_htmx(client: Any, path: str, samples: int) -> list[float]:
    from functools import partial

    get = client.get
    client.get = partial(get, HTTP_HX_REQUEST="true")
    try:
        return timed_get(client, path, samples)
    finally:
        client.get = get


MATCHED: list[int | None] = []  # None: too common to rank ("1,000+")
SEARCH_SECONDS: list[float] = []


def search_words(client: Any, words: list[str], *, record: bool = True) -> list[float]:
    for word in words[:WARMUP]:
        client.get("/", {"q": word})
    seconds = []
    for word in words:
        started = time.perf_counter()
        response = client.get("/", {"q": word})
        seconds.append(time.perf_counter() - started)
        assert response.status_code == 200
        count = re.search(r"Showing \d+ of (\d+)(\+?)", response.content.decode())
        assert count is not None
        if record:
            MATCHED.append(None if count.group(2) else int(count.group(1)))
    return seconds


if __name__ == "__main__":
    main()
