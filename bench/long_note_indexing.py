"""Save to indexed for a long document note, and for a one-section edit of it (issue 37).

A document note (kind `note`) of about 150,000 characters — SciFact documents one after
the other, each a `##` section under a title (`bench.latency.long_document`, the text
the 100k-notes latency corpus uses) — is saved with `note_remember`, then the `embed`
jobs are run in-process by `grove.kernel.jobs.run_batch` (the worker's own code path:
claim, load, one model call per batch of up to `PASSAGES_PER_BATCH` passages, store,
queue again what is left) until the note is `indexing: ready`. The clock runs from
just before the save to the moment the note is ready; the save alone is timed too.

Then one section of that note is edited (its abstract replaced by another document's,
the rest of the text byte for byte the same) with `note_update`, and timed the same way.
Each run is a new note with the same text; the model is loaded and warmed before the
first. Reported: per run and the median, the save's time, save-to-ready, the passages
embedded (vectors written) and the model calls (`embed()` calls).

    .venv/bin/python bench/long_note_indexing.py [--runs 5] [--chars 150000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, table, write_result  # noqa: E402
from bench.latency import long_document  # noqa: E402
from bench.scifact import load  # noqa: E402


def document(docs: list[str], chars: int) -> tuple[str, list[tuple[int, int]]]:
    """A `long_document` cut back to at most `chars` characters at a section start."""
    text, sections = long_document(1, docs, chars + 5_000, random.Random(37))  # noqa: S311
    keep = [s for s in sections if s[0] <= chars]
    # The last section that still ends within `chars`.
    while len(keep) > 1 and len(text[:keep[-1][0]].rstrip()) > chars:
        keep.pop()
    end = keep[-1][0] if len(keep) > 1 else len(text)
    return text[:end].rstrip(), keep[:-1]


def edited(text: str, sections: list[tuple[int, int]], docs: list[str]) -> str:
    """The middle section's abstract replaced by another document's; its heading and
    every other section unchanged."""
    middle = len(sections) // 2
    start = sections[middle][0]
    stop = sections[middle + 1][0] if middle + 1 < len(sections) else len(text)
    heading, _, _ = text[start:stop].partition("\n\n")
    other = docs[(sections[middle][1] + 1) % len(docs)].partition("\n\n")[2].strip()
    return text[:start] + heading + "\n\n" + other + "\n\n" + text[stop:].lstrip("\n")


class Counting:
    """The embedder's `embed` counted: calls and texts."""

    def __init__(self, embedder: Any):
        self.embedder, self.calls, self.texts = embedder, 0, 0
        self.original = embedder.embed

        def embed(texts: list[str]) -> Any:
            self.calls += 1
            self.texts += len(texts)
            return self.original(texts)

        embedder.embed = embed

    def take(self) -> tuple[int, int]:
        out = (self.calls, self.texts)
        self.calls = self.texts = 0
        return out


def until_ready(env: Env, note_id: uuid.UUID) -> int:
    """Run embed batches until the note is ready; returns the batches run."""
    from grove.kernel import jobs
    from grove.kernel.tenancy import tenant
    from notebooks.models import Indexing, Note

    batches = 0
    while True:
        done = jobs.run_batch(account_id=env.account_id, kind="embed")
        batches += bool(done)
        with tenant(env.account_id):
            state = Note.objects.filter(id=note_id).values_list("indexing", flat=True).get()
        if state == Indexing.READY:
            return batches
        if state == Indexing.FAILED:
            raise RuntimeError(f"note {note_id} failed to index")
        if not done and not env.queued_jobs():
            raise RuntimeError(f"note {note_id} is {state} with no job queued")


def counts(env: Env, note_id: uuid.UUID) -> tuple[int, int]:
    from grove.kernel.tenancy import tenant
    from passages.models import Passage, PassageVector

    with tenant(env.account_id):
        return (Passage.objects.filter(note_id=note_id).count(),
                PassageVector.objects.filter(note_id=note_id).count())


def vectors_written_since(env: Env, note_id: uuid.UUID, since: Any) -> int:
    from grove.kernel.tenancy import tenant
    from passages.models import PassageVector

    with tenant(env.account_id):
        return PassageVector.objects.filter(note_id=note_id, created_at__gte=since).count()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chars", type=int, default=150_000)
    parser.add_argument("--out", default="long_note_indexing")
    args = parser.parse_args()
    started_all = time.perf_counter()
    data = load("test")
    docs = list(data.corpus.values())
    text, sections = document(docs, args.chars)
    changed = edited(text, sections, docs)

    env = Env.fresh("long-note")
    from django.utils import timezone

    from grove.embeddings import get_embedder
    from notebooks.services import note_remember, note_update
    from notebooks.services.indexing import PASSAGES_PER_BATCH
    from passages.rules import pieces

    embedder = get_embedder()
    if embedder is None:
        raise SystemExit("embeddings are disabled")
    # Load and warm the model outside the clock.
    embedder.embed([p.text for p in pieces("note", text)[:64]])
    counter = Counting(embedder)
    before, after = pieces("note", text), pieces("note", changed)
    touched = len({p.hash for p in after} - {p.hash for p in before})
    runs: list[dict[str, Any]] = []

    def timed(save: Any) -> tuple[uuid.UUID, dict[str, Any]]:
        """Run `save` (it returns the note's id), then wait until the note is ready."""
        t0 = time.perf_counter()
        note_id = save()
        t_saved = time.perf_counter()
        batches = until_ready(env, note_id)
        t_ready = time.perf_counter()
        calls, texts = counter.take()
        passages, vectors = counts(env, note_id)
        return note_id, {"save_ms": round((t_saved - t0) * 1000, 1),
                         "save_to_ready_s": round(t_ready - t0, 2), "batches": batches,
                         "model_calls": calls, "texts_embedded": texts,
                         "passages": passages, "vectors": vectors}

    for run in range(1, args.runs + 1):
        counter.take()
        note_id, new = timed(lambda: uuid.UUID(str(note_remember(
            actor=env.actor, operation_id=uuid.uuid4(), content=text,
            kind="note").note.id).removeprefix("note:")))
        since = timezone.now()
        _, edit = timed(lambda made=note_id: note_update(
            actor=env.actor, operation_id=uuid.uuid4(),
            note_id=made, content=changed).id)
        edit["vectors_written"] = vectors_written_since(env, note_id, since)
        runs.append({"run": run, "new": new, "edit": edit})
        print(run, runs[-1], flush=True)

    def median(phase: str, key: str) -> float:
        return statistics.median(r[phase][key] for r in runs)

    results: dict[str, Any] = {
        "chars": len(text), "edited_chars": len(changed), "sections": len(sections),
        "passages_before": len(before), "passages_after": len(after),
        "passages_the_edit_touched": touched, "passages_per_batch": PASSAGES_PER_BATCH,
        "profile": embedder.profile, "runs": runs,
        "median": {phase: {key: median(phase, key) for key in
                           ("save_ms", "save_to_ready_s", "texts_embedded", "model_calls")}
                   for phase in ("new", "edit")},
    }
    results["seconds"] = round(time.perf_counter() - started_all, 1)
    path = write_result(args.out, results, env)
    rows = [[phase, len(text) if phase == "new" else len(changed),
             results["median"][phase]["save_ms"], results["median"][phase]["save_to_ready_s"],
             results["median"][phase]["texts_embedded"], results["median"][phase]["model_calls"]]
            for phase in ("new", "edit")]
    print()
    print(table(["save", "characters", "save ms (median)", "save → ready s (median)",
                 "passages embedded", "model calls"], rows))
    print(f"{len(runs)} runs; {len(before)} passages, the edit touched {touched}")
    print(f"\nwrote {path} in {results['seconds']} s")
    env.close()


if __name__ == "__main__":
    main()
