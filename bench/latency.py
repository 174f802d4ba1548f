"""Recall latency through the service at 10k and 100k notes, beside the SQL floor.

Data: notes are bulk-loaded as the runtime role inside a tenant transaction (services
would take too long at 100k; COPY cannot target a table under row-level security, so
rows are COPied into temporary tables and moved with INSERT … SELECT): note i is
SciFact document i mod 5,183 — the original for the first copy, later copies with their
sentences shuffled, one dropped and one sentence of another document appended (cut to
6,000 characters). Since issue 37 recall ranks passages: each note is loaded with the
passages `passages.services.passages_add` would make for it (`passages.rules.pieces`:
a memory record is one passage, its whole content) and one vector per passage in
`passages_passagevector`. Vectors: the real
int8 MiniLM embedding of the base document for the first copy; later copies get that
vector plus Gaussian noise (cosine ≈ 0.9 to it), renormalised — realistic clusters, but
not the embedding of the varied text. The passage vectors' HNSW index is dropped before
each load and rebuilt after it (as the owner, maintenance_work_mem 1 GB); then
term_stats_refresh (which counts passages), VACUUM ANALYZE.

`--long-share S` (issue 37): the last S of the notes are long document notes (kind
`note`, `long_document`: a title, then SciFact documents as `##` sections, uniformly
0.5–1.5 × `--long-chars` characters), cut by the passage rules; each passage gets its
section's base-document vector plus noise. The first notes are the same memory records
as without the option, so `--load-only --home A` and `--load-only --home B
--long-share 0.1` make two corpora that differ only in their last 10 %, and
`--interleave A,B` measures them in turn (A B A B, each `--kept` in its own process)
and writes the ratios B ÷ A.

Queries: 200 SciFact test claims. Per scale, a first full pass through the service
(cached vectors) is the warm-up and captures each query's statements; every other path
gets 25 warm-up runs; then `--passes` measured passes over all queries (default 1 → 200
samples per path). Budget: the default (limit 8, max_chars 6,000).

* service (cached vector): `recall()` with `notebooks.selectors.recall.get_embedder` patched so
  embed() returns the precomputed query vector — everything but query encoding;
* service (real model): `recall()` as is, query embedded by the local model;
* SQL floor (two arms): the lexical and semantic arm statements recall issued for that
  query (captured from the warm-up call: Django binds parameters client-side, so the
  captured text is exactly what was sent), replayed over a plain psycopg connection as
  the runtime role in one transaction with the tenant setting and the same SET LOCALs;
  also the semantic arm alone;
* up to `--full-up-to` notes (default 10k) also: the lexical arm alone, every statement
  recall issued replayed the same way (the gap to the service is Python/ORM/pydantic),
  and the service at limit 50 / max_chars 50,000;
* at every size also the service with MATCH_BUDGET patched (`--budget-variants`,
  default 10^9: unbounded, the candidate rule before the budget — the before of the
  lexical arm's bound, in the same run); at the largest size with DISTINCTIVE_SHARE
  patched (`--share-variants`; 1.0 = every informative term selects matches).

`--kept NAME` measures the corpus a kept bench home holds (one size, no load), e.g. the
1M corpus a finished run left in /tmp/grove-bench-latency, renamed and marked `loaded`.

    .venv/bin/python bench/latency.py [--sizes 10000,100000] [--passes 1]
        [--budget-variants 1000000000] [--share-variants 1.0] [--kept NAME]
    .venv/bin/python bench/latency.py --sizes 100000 --home lat-short --load-only
    .venv/bin/python bench/latency.py --sizes 100000 --long-share 0.1 --home lat-docs --load-only
    .venv/bin/python bench/latency.py --interleave lat-short,lat-docs --sizes 100000 \
        --rounds 2 --out latency-docs
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import CACHE, Env, summary_ms, table, truncate_words, write_result  # noqa: E402
from bench.scifact import load  # noqa: E402

NOISE_COSINE = 0.9
SENTENCE = re.compile(r"(?<=[.!?])\s+")


# -- data -------------------------------------------------------------------------------------


def doc_vectors(embedder: Any, ids: list[str], texts: list[str]) -> np.ndarray:
    digest = hashlib.sha256(("\0".join(ids) + embedder.profile).encode()).hexdigest()[:16]
    path = CACHE / f"scifact-docs-{digest}.npy"
    if path.exists():
        return np.load(path)
    started = time.perf_counter()
    vectors = embedder.embed(texts)
    print(f"embedded {len(texts)} documents in {time.perf_counter() - started:.1f} s", flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def variant_text(base: str, other: str, rng: random.Random) -> str:
    title, _, body = base.partition("\n\n")
    sentences = [s for s in SENTENCE.split(body or title) if s.strip()]
    rng.shuffle(sentences)
    if len(sentences) > 2:
        sentences.pop(rng.randrange(len(sentences)))
    extra = [s for s in SENTENCE.split(other.partition("\n\n")[2] or other) if s.strip()]
    if extra:
        sentences.append(rng.choice(extra))
    text = (title + "\n\n" + " ".join(sentences)) if body else " ".join(sentences)
    return truncate_words(text, 6000)


def noisy(vector: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    dim = vector.shape[0]
    sigma = np.sqrt((1 / NOISE_COSINE**2 - 1) / dim)
    out = vector + rng.normal(0.0, sigma, dim).astype(np.float32)
    return (out / np.linalg.norm(out)).astype(np.float32)


def vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6g}" for x in vector.tolist()) + "]"


def long_document(number: int, docs: list[str], target: int, rng: random.Random,
                  ) -> tuple[str, list[tuple[int, int]]]:
    """A long document note (issue 37): a title, then SciFact documents one after the
    other, each a `##` section (its title the heading, its abstract the body), until
    about `target` characters. Returns the text and (offset, base document) of each
    section, so each passage can be given its section's vector."""
    head = f"# Reading notes {number}"
    parts, sections, size = [head], [(0, rng.randrange(len(docs)))], len(head)
    while size < target:
        base = rng.randrange(len(docs))
        title, _, body = docs[base].partition("\n\n")
        section = f"## {title.strip()}\n\n{(body or title).strip()}"
        size += 2
        sections.append((size, base))
        parts.append(section)
        size += len(section)
    # The title's own (empty) section shares the first passage with the first one.
    sections[0] = (0, sections[1][1])
    return "\n\n".join(parts), sections


def _passage_rows(kind: str, content: str) -> list[Any]:
    """What `passages.services.passages_add` writes for a new note: the rules' pieces."""
    from passages.rules import pieces

    return pieces(kind, content)


def bulk_load(env: Env, start: int, stop: int, doc_ids: list[str], docs: list[str],
              vectors: np.ndarray, profile: str, chunk: int = 10_000, *,
              long_from: int | None = None, long_chars: int = 72_000,
              passages_per_flush: int = 20_000) -> dict[str, float]:
    """Notes start..stop-1, their passages (what `passages_add` makes: the rules'
    pieces) and the passages' vectors, with COPY + INSERT … SELECT, as the runtime role
    in a tenant transaction. Notes from `long_from` on are long documents (kind `note`,
    `long_document`, between half and 1.5 × `long_chars` characters), cut by the
    passage rules; each passage's vector is its section's base document's vector plus
    noise. Every other note is a memory record: one passage, its whole content, the
    vector as before."""
    from bisect import bisect_right

    from django.db import connection

    from grove.kernel.tenancy import tenant

    py_rng = random.Random(start)  # noqa: S311 - test data, not secrets
    long_rng = random.Random(10_000_019 + start)  # noqa: S311
    np_rng = np.random.default_rng(start)
    copy_seconds = cut_seconds = 0.0
    n_docs = len(docs)
    now = datetime.now(UTC)
    dim = vectors.shape[1]
    literal = "[" + ",".join(["%.6g"] * dim) + "]"
    counts = {"notes": 0, "long_notes": 0, "passages": 0, "long_passages": 0,
              "long_chars": 0}
    notes: list[tuple[Any, ...]] = []
    passages: list[tuple[Any, ...]] = []

    def flush() -> None:
        nonlocal copy_seconds
        if not notes:
            return
        started = time.perf_counter()
        with tenant(env.actor):
            raw = connection.connection
            with raw.cursor() as cur:
                # COPY cannot write to a table under row-level security: copy into
                # temporary tables, then INSERT … SELECT (the policy checks every row).
                cur.execute(
                    "CREATE TEMP TABLE bench_note (id uuid, account_id uuid, content text, "
                    "kind text, notebook_id uuid, capture text, pinned boolean, "
                    "importance float8, status text, version integer, content_hash text, "
                    "passages_hash text, indexing text, created_at timestamptz, "
                    "updated_at timestamptz) ON COMMIT DROP")
                cur.execute(
                    "CREATE TEMP TABLE bench_passage (account_id uuid, note_id uuid, "
                    "position integer, start integer, stop integer, headings text[], "
                    "trail text, text text, hash text, profile text, dimension integer, "
                    "embedding vector, created_at timestamptz) ON COMMIT DROP")
                with cur.copy("COPY bench_note FROM STDIN") as copy:
                    for row in notes:
                        copy.write_row(row)
                with cur.copy("COPY bench_passage FROM STDIN") as copy:
                    for row in passages:
                        copy.write_row(row)
                cur.execute(
                    "INSERT INTO notebooks_note (id, account_id, content, kind, notebook_id, "
                    "capture, pinned, importance, status, version, content_hash, "
                    "passages_hash, indexing, created_at, updated_at) "
                    "SELECT * FROM bench_note")
                cur.execute(
                    'INSERT INTO passages_passage (account_id, note_id, position, start, "end", '
                    "headings, trail, text, hash) SELECT account_id, note_id, position, start, "
                    "stop, headings, trail, text, hash FROM bench_passage")
                cur.execute(
                    "INSERT INTO passages_passagevector (account_id, passage_id, note_id, "
                    "profile, dimension, embedding, created_at) "
                    "SELECT b.account_id, p.id, b.note_id, b.profile, b.dimension, b.embedding, "
                    "b.created_at FROM bench_passage b JOIN passages_passage p "
                    "ON p.note_id = b.note_id AND p.position = b.position")
        copy_seconds += time.perf_counter() - started
        notes.clear()
        passages.clear()

    for i in range(start, stop):
        base = i % n_docs
        note_id = uuid.uuid4()
        if long_from is not None and i >= long_from:
            kind = "note"
            content, sections = long_document(
                i, docs, long_rng.randint(long_chars // 2, long_chars * 3 // 2), long_rng)
            starts = [offset for offset, _ in sections]
            t = time.perf_counter()
            pieces = _passage_rows(kind, content)
            cut_seconds += time.perf_counter() - t
            bases = [sections[bisect_right(starts, piece.start) - 1][1] for piece in pieces]
            counts["long_notes"] += 1
            counts["long_passages"] += len(pieces)
            counts["long_chars"] += len(content)
        else:
            kind = "fact"
            if i < n_docs:
                content = truncate_words(docs[base], 6000)
            else:
                content = variant_text(docs[base], docs[py_rng.randrange(n_docs)], py_rng)
            pieces = _passage_rows(kind, content)
            bases = [base]
        digest = hashlib.sha256(content.encode()).hexdigest()
        notes.append((note_id, env.account_id, content, kind, None, "explicit", False,
                      0.5, "active", 1, digest, digest, "ready", now, now))
        for piece, piece_base in zip(pieces, bases, strict=True):
            first_copy = i < n_docs and kind != "note"
            vec = vectors[piece_base] if first_copy else noisy(vectors[piece_base], np_rng)
            passages.append((env.account_id, note_id, piece.position, piece.start, piece.end,
                             list(piece.headings), piece.trail, piece.text, piece.hash,
                             profile, dim, literal % tuple(vec.tolist()), now))
        counts["notes"] += 1
        counts["passages"] += len(pieces)
        if len(notes) >= chunk or len(passages) >= passages_per_flush:
            flush()
    flush()
    return {"copy_seconds": round(copy_seconds, 1), "cut_seconds": round(cut_seconds, 1),
            **counts}


def rebuild_hnsw(env: Env, *, drop_only: bool = False) -> float:
    """The passage vectors' HNSW index (issue 37: recall walks passages)."""
    from passages.vectors import hnsw_index_sql, index_name

    started = time.perf_counter()
    env.owner_sql(f"DROP INDEX IF EXISTS {index_name(384)}")
    if not drop_only:
        env.owner_sql("SET maintenance_work_mem = '1GB'", hnsw_index_sql(384),
                      "RESET maintenance_work_mem")
    return time.perf_counter() - started


# -- measurement ------------------------------------------------------------------------------


class CachedEmbedder:
    """The real model's vectors, made once per text: a query whose time words recall
    takes out (`notebooks.selectors.time_window`) is embedded as what is left, once."""

    def __init__(self, real: Any, cache: dict[str, np.ndarray]):
        self.profile, self.dimension, self.cache = real.profile, real.dimension, cache
        self.real = real

    def embed(self, texts: list[str]) -> np.ndarray:
        for text in texts:
            if text not in self.cache:
                self.cache[text] = self.real.embed([text])[0]
        return np.stack([self.cache[t] for t in texts])


WARMUP = 25


def recall_call(env: Env, query: str, limit: int, max_chars: int) -> Any:
    from notebooks.selectors.recall import recall

    return recall(actor=env.actor, query=query, limit=limit, max_chars=max_chars)


class HttpServer:
    """`uvicorn grove.asgi:application` on a local port, on the bench's database, and an
    API key with every notebook: recall over real HTTP (keep-alive, one client)."""

    def __init__(self, env: Env):
        import socket
        import subprocess

        import httpx

        from grove.identity.services import connection_create_key

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        key = connection_create_key(actor=env.actor, name="bench", personal=True,
                                    all_notebooks=True).key
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "uvicorn", "grove.asgi:application", "--port",
             str(self.port), "--log-level", "warning", "--no-access-log"],
            env={**os.environ, "GROVE_HOME": str(env.home)})
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}",
                                   headers={"Authorization": f"Bearer {key}"}, timeout=30)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.client.get("/v1/openapi.json")
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise
                time.sleep(0.2)

    def recall(self, query: str) -> Any:
        response = self.client.post("/v1/recall", json={"query": query})
        response.raise_for_status()
        return response.json()

    def close(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(timeout=30)


def capture(env: Env, query: str, limit: int, max_chars: int) -> tuple[list[str], Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        out = recall_call(env, query, limit, max_chars)
    return [q["sql"] for q in ctx.captured_queries], out


def arm_statements(env: Env, query: str, embedder: Any) -> dict[str, list[str]]:
    """The two arms as recall builds them (`recall_query.lexical_arm`/`semantic_arm`),
    each as the standalone statement it would be without the fold, rendered with its
    parameters: the SQL floor recall's one statement is measured against."""
    from django.db import connection

    from grove.kernel.tenancy import tenant
    from notebooks.selectors.access import Scope
    from notebooks.selectors.recall import (
        BM25_B,
        BM25_K1,
        CANDIDATES,
        MATCH_BUDGET,
        RESCORE,
        Searched,
        term_weights,
    )
    from notebooks.selectors.recall_query import lexical_arm, semantic_arm
    from notebooks.selectors.time_window import time_window

    window, rest = time_window(actor=env.actor, query=query, time_zone=None)
    query = rest or query
    vector = embedder.embed([query])[0]
    with tenant(env.actor):
        weights = term_weights(query)
        scope = Searched(Scope(actor=env.actor, notebook_ids=None, personal=True), window=window)
        arms: dict[str, list[str]] = {"lexical": [], "semantic": []}
        if weights.selecting():
            sql, params = lexical_arm(scope, weights, candidates=CANDIDATES, rescore=RESCORE,
                                      cap=weights.read_cap(MATCH_BUDGET), k1=BM25_K1,
                                      b=BM25_B)
            arms["lexical"].append(connection.ops.compose_sql(sql, params))
        from grove.embeddings.profile import active_profile_name

        sql, params = semantic_arm(scope, vector.tolist(), len(vector), active_profile_name(),
                                   candidates=CANDIDATES)
        arms["semantic"] = ["SET LOCAL hnsw.ef_search = 100",
                            "SET LOCAL hnsw.iterative_scan = relaxed_order",
                            connection.ops.compose_sql(sql, params)]
    return arms


def is_lexical(sql: str) -> bool:
    """recall's lexical arm: the security-definer function (since notebooks 0007), or an
    ORM filter on the `search` column (before it)."""
    return ("grove_passage_matches(" in sql or "grove_lexical_matches(" in sql
            or '"notebooks_note"."search" @@' in sql)


def is_semantic(sql: str) -> bool:
    return sql.lstrip().startswith("SET LOCAL hnsw") or "<=>" in sql


def replay(conn: Any, account_id: uuid.UUID, statements: list[str]) -> list[Any]:
    """Run captured statements in one transaction with the tenant setting; returns the
    rows of the last statement that returned any."""
    from grove.kernel import tenancy

    last: list[Any] = []
    with conn.transaction():
        with conn.cursor() as cur:
            tenancy.enter(cur, account_id)
            for sql in statements:
                if sql in ("BEGIN", "COMMIT") or "'grove.account_id'" in sql:
                    continue
                cur.execute(sql)
                if cur.description is not None:
                    last = cur.fetchall()
    return last


def measure(fn: Any, queries: list[str], passes: int, *, warmup: bool = True) -> list[float]:
    if warmup:
        for q in queries[-WARMUP:]:
            fn(q)
    seconds = []
    for _ in range(passes):
        for q in queries:
            started = time.perf_counter()
            fn(q)
            seconds.append(time.perf_counter() - started)
    return seconds


def explain(conn: Any, account_id: uuid.UUID, statements: list[str]) -> dict[str, str]:
    from grove.kernel import tenancy

    plans = {}
    with conn.transaction():
        with conn.cursor() as cur:
            tenancy.enter(cur, account_id)
            for sql in statements:
                if sql.lstrip().startswith("SET LOCAL"):
                    cur.execute(sql)
                    continue
                name = "lexical" if is_lexical(sql) else "semantic"
                cur.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + sql)
                plans[name] = "\n".join(row[0] for row in cur.fetchall())
    return plans


def run_scale(env: Env, size: int, queries: list[str], qvecs: dict[str, np.ndarray],
              real: Any, passes: int, *, full: bool,
              variants: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """full: also the statement-replay path, each arm alone and the limit-50 budget.
    variants: (name, recall module constants) to also measure the service with."""
    import psycopg
    from django.conf import settings

    import notebooks.selectors.recall as r

    db = settings.DATABASES["default"]
    conn = psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"], dbname=db["NAME"],
                           application_name="grove-bench-floor")
    cached = CachedEmbedder(real, qvecs)
    res: dict[str, Any] = {"notes": size}
    saved = r.get_embedder
    r.get_embedder = lambda: cached
    try:
        # Warm-up: one full pass that also captures each query's statements.
        captured, available, capped = {}, [], 0
        for q in queries:
            captured[q], out = capture(env, q, 8, 6000)
            available.append(out.meta.available)
            capped += bool(out.meta.available_at_least)
        res["mean_available"] = round(sum(available) / len(available), 1)
        res["queries_with_a_capped_clause"] = capped
        res["service_cached_vector"] = summary_ms(measure(
            lambda q: recall_call(env, q, 8, 6000), queries, passes, warmup=False))
        print(size, "service (cached vector)", res["service_cached_vector"], flush=True)
        if full:
            res["service_cached_vector_limit50"] = summary_ms(measure(
                lambda q: recall_call(env, q, 50, 50_000), queries, passes))
        for name, constants in variants:
            saved_constants = {k: getattr(r, k) for k in constants}
            for k, v in constants.items():
                setattr(r, k, v)
            try:
                res[f"service_cached_vector_{name}"] = summary_ms(measure(
                    lambda q: recall_call(env, q, 8, 6000), queries, passes))
            finally:
                for k, v in saved_constants.items():
                    setattr(r, k, v)
            print(size, f"service (cached vector, {constants})",
                  res[f"service_cached_vector_{name}"], flush=True)
    finally:
        r.get_embedder = saved
    res["service_real_model"] = summary_ms(measure(
        lambda q: recall_call(env, q, 8, 6000), queries, passes))
    print(size, "service (real model)", res["service_real_model"], flush=True)
    http = HttpServer(env)
    try:
        res["http_real_model"] = summary_ms(measure(http.recall, queries, passes))
    finally:
        http.close()
    print(size, "HTTP POST /v1/recall (real model)", res["http_real_model"], flush=True)

    # Since issue 21 recall sends both arms in one statement: the floor is each arm as
    # the statement it would be alone.
    separate = {q: arm_statements(env, q, cached) for q in queries}
    lexical_sql = {q: v["lexical"] for q, v in separate.items()}
    semantic_sql = {q: v["semantic"] for q, v in separate.items()}
    arms = {q: lexical_sql[q] + semantic_sql[q] for q in queries}
    res["sql_floor_two_arms"] = summary_ms(measure(
        lambda q: replay(conn, env.account_id, arms[q]), queries, passes))
    print(size, "SQL floor (two arms)", res["sql_floor_two_arms"], flush=True)
    res["sql_semantic_arm"] = summary_ms(measure(
        lambda q: replay(conn, env.account_id, semantic_sql[q]), queries, passes))
    if full:
        res["sql_lexical_arm"] = summary_ms(measure(
            lambda q: replay(conn, env.account_id, lexical_sql[q]), queries, passes))
        res["sql_replay_all_statements"] = summary_ms(measure(
            lambda q: replay(conn, env.account_id, captured[q]), queries, passes))
    res["statements_per_recall"] = round(sum(len(v) for v in captured.values()) / len(captured), 1)
    res["explain_first_query"] = explain(conn, env.account_id, arms[queries[0]])
    # How many notes the lexical arm matched (its `total` column: the notes of the
    # passages it read), per query.
    sizes = []
    for q in queries[:50]:
        rows = replay(conn, env.account_id, lexical_sql[q]) if lexical_sql[q] else []
        sizes.append(rows[0][3] if rows else 0)
    res["lexical_matched_notes_first_50_queries"] = {
        "mean": round(sum(sizes) / len(sizes), 1), "max": max(sizes),
        "share_mean": round(sum(sizes) / len(sizes) / size, 4)}
    print(size, {k: v for k, v in res.items() if k != "explain_first_query"}, flush=True)
    conn.close()
    return res


def corpus_counts(env: Env) -> dict[str, Any]:
    """Notes, long documents and passages in the corpus."""
    from django.db import connection

    from grove.kernel.tenancy import tenant

    with tenant(env.actor), connection.cursor() as cursor:
        cursor.execute("SELECT count(*), count(*) FILTER (WHERE kind = 'note'), "
                       "coalesce(sum(length(content)) FILTER (WHERE kind = 'note'), 0) "
                       "FROM notebooks_note")
        notes, long_notes, long_chars = cursor.fetchone()
        cursor.execute("SELECT count(*), count(*) FILTER (WHERE n.kind = 'note') "
                       "FROM passages_passage p JOIN notebooks_note n ON n.id = p.note_id")
        passages, long_passages = cursor.fetchone()
        cursor.execute("SELECT count(*) FROM passages_passagevector")
        vectors = cursor.fetchone()[0]
    return {"corpus_notes": notes, "corpus_long_notes": long_notes,
            "corpus_long_chars": int(long_chars), "corpus_passages": passages,
            "corpus_long_passages": long_passages, "corpus_passage_vectors": vectors}


def interleave(args: argparse.Namespace) -> None:
    """Kept corpora A and B measured in turn (A B A B …), each by this script with
    `--kept` in its own process (Django serves one database a process); the summary
    holds each run's p50/p95 per path and the ratios B ÷ A of the runs' medians."""
    import statistics
    import subprocess

    from bench.common import RESULTS, machine, wait_for_quiet

    homes = args.interleave.split(",")
    if len(homes) != 2:
        raise SystemExit("--interleave A,B")
    started = time.perf_counter()
    quiet = wait_for_quiet()
    runs: dict[str, list[dict[str, Any]]] = {h: [] for h in homes}
    for round_number in range(1, args.rounds + 1):
        for home in homes:
            out = f"{args.out}-{home}-{round_number}"
            command = [sys.executable, __file__, "--kept", home, "--sizes", args.sizes,
                       "--passes", str(args.passes), "--queries", str(args.queries),
                       "--budget-variants", args.budget_variants, "--full-up-to",
                       str(args.full_up_to), "--out", out]
            print("$", " ".join(command), flush=True)
            subprocess.run(command, check=True, env={**os.environ,  # noqa: S603
                                                     "BENCH_QUIET_WAIT": "0"})
            result = json.loads((RESULTS / f"{out}.json").read_text())
            runs[home].append(result)
    summary: dict[str, Any] = {"homes": homes, "rounds": args.rounds, "runs": {}, "ratios": {}}
    paths = [k for k, v in runs[homes[0]][0]["scales"][args.sizes].items()
             if isinstance(v, dict) and "p95" in v]
    for home in homes:
        scale0 = runs[home][0]["scales"][args.sizes]
        summary["runs"][home] = {
            "load": scale0.get("load"),
            "other_load": [r["other_load"] for r in runs[home]],
            "lexical_matched_notes_first_50_queries": [
                r["scales"][args.sizes]["lexical_matched_notes_first_50_queries"]
                for r in runs[home]],
            "queries_with_a_capped_clause": [
                r["scales"][args.sizes]["queries_with_a_capped_clause"] for r in runs[home]],
            "paths": {path: [{"p50": r["scales"][args.sizes][path]["p50"],
                              "p95": r["scales"][args.sizes][path]["p95"]}
                             for r in runs[home]] for path in paths}}
    a, b = homes
    for path in paths:
        ratio = {}
        for q in ("p50", "p95"):
            va = statistics.median(x[q] for x in summary["runs"][a]["paths"][path])
            vb = statistics.median(x[q] for x in summary["runs"][b]["paths"][path])
            ratio[q] = {a: va, b: vb, "ratio": round(vb / va, 3)}
        summary["ratios"][path] = ratio
    summary["seconds"] = round(time.perf_counter() - started, 1)
    summary["machine"] = machine()
    summary["quiet_at_start"] = quiet
    path = RESULTS / f"{args.out}.json"
    path.write_text(json.dumps(summary, indent=2, default=str) + "\n")
    rows = [[p, r["p50"][a], r["p50"][b], r["p50"]["ratio"], r["p95"][a], r["p95"][b],
             r["p95"]["ratio"]] for p, r in summary["ratios"].items()]
    print()
    print(table(["path (median of the rounds)", f"p50 {a}", f"p50 {b}", "÷", f"p95 {a}",
                 f"p95 {b}", "÷"], rows))
    print(f"\nwrote {path} in {summary['seconds']} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", default="latency")
    parser.add_argument("--kept", default="",
                        help="measure the corpus a kept bench home already holds "
                             "(/tmp/grove-bench-NAME with a `loaded` mark): one size, "
                             "no load — a change to recall measured again without a "
                             "40-minute reload at 1M")
    parser.add_argument("--full-up-to", type=int, default=10_000,
                        help="sizes up to this also measure replay-all, each arm alone, limit 50")
    parser.add_argument("--share-variants", default="",
                        help="DISTINCTIVE_SHARE values to also try at the largest size")
    parser.add_argument("--budget-variants", default="1000000000",
                        help="MATCH_BUDGET values to also try at every size (10^9: unbounded, "
                             "the candidate rule before the budget)")
    parser.add_argument("--long-share", type=float, default=0.0,
                        help="issue 37: this share of each size's notes are long documents "
                             "(kind note, cut into passages by the passage rules), the last "
                             "ones loaded; the others are the same memory records as without")
    parser.add_argument("--long-chars", type=int, default=72_000,
                        help="a long document's mean length (uniform in 0.5–1.5 × this)")
    parser.add_argument("--home", default="latency",
                        help="the bench home of a fresh run: /tmp/grove-bench-HOME")
    parser.add_argument("--load-only", action="store_true",
                        help="load one size into --home, mark it loaded (for --kept and "
                             "--interleave) and measure nothing")
    parser.add_argument("--interleave", default="",
                        help="A,B: kept homes measured in turn, A B A B … (--rounds), each "
                             "a `--kept` run of this script in its own process; writes "
                             "each run and a summary with the ratio B ÷ A")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.interleave:
        interleave(args)
        return
    sizes = sorted(int(s) for s in args.sizes.split(","))
    started_all = time.perf_counter()

    data = load("test")
    doc_ids = list(data.corpus)
    docs = [data.corpus[d] for d in doc_ids]
    queries = list(data.queries.values())[: args.queries]

    env, kept = Env.kept(args.kept) if args.kept else (Env.fresh(args.home), False)
    if args.kept and not kept:
        raise SystemExit(f"{env.home} holds no loaded corpus")
    from grove.embeddings import configured_profile, get_embedder

    real = get_embedder()
    profile = configured_profile()[0]
    vectors = doc_vectors(real, doc_ids, [truncate_words(d, 6000) for d in docs])
    qvecs = dict(zip(queries, real.embed(queries), strict=True))
    encode = []
    for q in queries * 2:
        t = time.perf_counter()
        real.embed([q])
        encode.append(time.perf_counter() - t)

    results: dict[str, Any] = {
        "profile": profile, "queries": len(queries), "passes": args.passes,
        "query_encode_ms": summary_ms(encode[len(queries):]),
        "data": "SciFact documents with variations (see module docstring); vectors = real "
                "base-document embeddings + Gaussian noise (cosine ~0.9)",
        "scales": {},
    }
    loaded = 0
    for size in sizes:
        t0 = time.perf_counter()
        if kept:
            from django.db import connection

            from grove.kernel.tenancy import tenant

            with tenant(env.actor), connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM notebooks_note")
                there = cursor.fetchone()[0]
            if there != size:
                raise SystemExit(f"the kept corpus holds {there} notes, not {size}")
            info: dict[str, Any] = {"kept": str(env.home), **corpus_counts(env)}
        else:
            rebuild_hnsw(env, drop_only=True)
            if args.long_share and loaded:
                raise SystemExit("--long-share loads one size (its long notes are its last)")
            long_from = size - round(size * args.long_share) if args.long_share else None
            info = bulk_load(env, loaded, size, doc_ids, docs, vectors, profile,
                             long_from=long_from, long_chars=args.long_chars)
            hnsw = rebuild_hnsw(env)
            t1 = time.perf_counter()
            counted = env.refresh_stats()
            stats = time.perf_counter() - t1
            info.update({"hnsw_build_seconds": round(hnsw, 1),
                         "stats_and_vacuum_seconds": round(stats, 1),
                         "load_total_seconds": round(time.perf_counter() - t0, 1),
                         "term_stats_notes": counted})
        loaded = size
        print(size, info, flush=True)
        if args.load_only:
            info.update(corpus_counts(env))
            (env.home / "load.json").write_text(json.dumps(info, indent=2) + "\n")
            env.mark_loaded()
            print(f"loaded {env.home}: {info}", flush=True)
            env.close()
            return
        variants = [(f"budget_{int(v)}", {"MATCH_BUDGET": int(v)})
                    for v in args.budget_variants.split(",") if v]
        if size == sizes[-1]:
            variants += [(f"share_{float(v)}", {"DISTINCTIVE_SHARE": float(v)})
                         for v in args.share_variants.split(",") if v]
        scale = run_scale(env, size, queries, qvecs, real, args.passes,
                          full=size <= args.full_up_to, variants=variants)
        scale["load"] = info
        results["scales"][str(size)] = scale

    results["seconds"] = round(time.perf_counter() - started_all, 1)
    path = write_result(args.out, results, env)
    rows = []
    labels = [("service, cached query vector", "service_cached_vector"),
              ("service, real query embedding", "service_real_model"),
              ("HTTP POST /v1/recall, real query embedding", "http_real_model"),
              ("service, cached vector, limit 50 / 50k chars", "service_cached_vector_limit50"),
              ("SQL replay, all statements", "sql_replay_all_statements"),
              ("SQL floor, two arms", "sql_floor_two_arms"),
              ("  lexical arm alone", "sql_lexical_arm"),
              ("  semantic arm alone", "sql_semantic_arm")]
    for size, scale in results["scales"].items():
        extra = [(f"service, cached vector, DISTINCTIVE_SHARE={k.rsplit('_', 1)[1]}", k)
                 for k in scale if k.startswith("service_cached_vector_share_")]
        extra += [(f"service, cached vector, MATCH_BUDGET={k.rsplit('_', 1)[1]}", k)
                  for k in scale if k.startswith("service_cached_vector_budget_")]
        for label, name in labels + extra:
            if name in scale:
                s = scale[name]
                rows.append([size, label, s["p50"], s["p95"], s["p99"]])
    print()
    print(table(["notes", "path", "p50 ms", "p95 ms", "p99 ms"], rows))
    print(f"query encode alone: {results['query_encode_ms']}")
    print(f"\nwrote {path} in {results['seconds']} s")
    env.close()


if __name__ == "__main__":
    main()
