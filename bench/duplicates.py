"""The duplicate detector (`notebooks.selectors.duplicates`) on a labelled set built from
BEIR SciFact, with the real local embedding model.

The set (deterministic, seed 17): SciFact documents cut to note size (the title and the
first sentences, at most ~600 characters — well inside the model's 256 tokens, so every
edit changes the text the model sees). For each sampled document, two or three
**duplicates** by edits an agent's re-saves make:

* `case_space` — case and whitespace changed (an exact duplicate by content key);
* `reorder` — its sentences in another order;
* `truncate` — the last sentence or two dropped;
* `prefix` — "Note: " / "Reminder: " / "From the paper: " in front;
* `append` — a short remark added at the end;
* `number` — one number changed (a *contradicting* near-duplicate: tidy-up should
  surface it for an edit, so it counts as a duplicate here);

and a **hard negative**: another SciFact document on the same topic (the unsampled one
sharing the most rare words), saved as its own note. Half of the documents (and their
notes) go to a *tune* notebook, half to a *held-out* one.

Everything is saved through `note_remember` (so `similar` is computed at save time, with
the synchronous embedding) and embedded by the real `embed` job pipeline. Then, per
notebook, every pair of notes is a duplicate iff both come from the same document, and
is predicted one iff the content keys are equal or the cosine distance of the stored
vectors is ≤ the threshold. Precision and recall over pairs are swept over thresholds on
the tune notebook; the chosen threshold (the largest whose tune precision is ≥ 0.95)
is reported on the held-out notebook, with recall per edit and the hard-negative false
positive rate. The selector itself is then checked against the offline prediction on
the held-out notebook and timed (`similar_notes`, `duplicate_groups`, `remember`).

    .venv/bin/python bench/duplicates.py [--docs 300] [--out duplicates]
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, summary_ms, table, write_result  # noqa: E402
from bench.scifact import load  # noqa: E402

SEED = 17
NOTE_CHARS = 600
MIN_PRECISION = 0.95
THRESHOLDS = [round(0.01 * i, 2) for i in range(1, 41)]
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
WORD = re.compile(r"[a-z][a-z0-9-]{3,}")
PREFIXES = ("Note: ", "Reminder: ", "From the paper: ")
REMARKS = (" Worth re-reading.", " Follow up on this later.", " (saved again)")


@dataclass
class Item:
    doc: str  # the SciFact document it comes from
    edit: str  # original | an edit kind | negative
    content: str
    note_id: uuid.UUID | None = None
    topic: str | None = None  # a negative: the document it is a same-topic pair of


def note_text(title: str, text: str) -> tuple[str, list[str]] | None:
    """(title, sentences) of a note cut from a document: title + first sentences, at most
    NOTE_CHARS; None when fewer than three sentences fit."""
    sentences, size = [], len(title)
    for sentence in SENTENCE.split(text.strip()):
        if size + len(sentence) + 1 > NOTE_CHARS:
            break
        sentences.append(sentence.strip())
        size += len(sentence) + 1
    return (title, sentences) if len(sentences) >= 3 else None


def join(title: str, sentences: list[str]) -> str:
    return f"{title}\n\n{' '.join(sentences)}"


def edited(kind: str, title: str, sentences: list[str], rng: random.Random) -> str | None:
    if kind == "case_space":
        text = join(title, sentences)
        text = text.lower() if rng.random() < 0.5 else text.upper()
        return re.sub(r" ", lambda m: "  " if rng.random() < 0.2 else " ", text) + "\n"
    if kind == "reorder":
        order = sentences[:]
        while order == sentences:
            rng.shuffle(order)
        return join(title, order)
    if kind == "truncate":
        drop = 1 if len(sentences) < 5 else 2
        return join(title, sentences[:-drop])
    if kind == "prefix":
        return rng.choice(PREFIXES) + join(title, sentences)
    if kind == "append":
        return join(title, sentences) + rng.choice(REMARKS)
    if kind == "number":
        text = join(title, sentences)
        numbers = list(NUMBER.finditer(" ".join(sentences)))
        if not numbers:
            return None
        match = rng.choice(numbers)
        value = match.group()
        changed = (str(round(float(value) * rng.choice((1.5, 2, 3)), 2)) if "." in value
                   else str(int(value) + rng.choice((1, 2, 5, 10))))
        body = " ".join(sentences)
        body = body[:match.start()] + changed + body[match.end():]
        return f"{title}\n\n{body}" if body != " ".join(sentences) else text
    raise ValueError(kind)


def build_set(docs: int) -> tuple[list[Item], list[Item]]:
    """(tune items, held-out items), deterministically."""
    rng = random.Random(SEED)  # noqa: S311 - a reproducible data set, not a secret
    corpus = load("test").corpus
    cut: dict[str, tuple[str, list[str]]] = {}
    for doc_id, full in corpus.items():
        title, _, text = full.partition("\n\n")
        note = note_text(title.strip(), text)
        if note is not None:
            cut[doc_id] = note
    ids = sorted(cut)
    rng.shuffle(ids)
    sampled = ids[:docs]
    pool = set(ids[docs:])

    # Hard negatives: the unsampled note sharing the most rare words (idf-weighted).
    vocab = {doc_id: set(WORD.findall(join(*cut[doc_id]).lower())) for doc_id in ids}
    df = Counter(w for words in vocab.values() for w in words)
    idf = {w: math.log(len(ids) / n) for w, n in df.items()}
    postings: dict[str, list[str]] = {}
    for doc_id in pool:
        for w in vocab[doc_id]:
            if df[w] <= 50:
                postings.setdefault(w, []).append(doc_id)
    used: set[str] = set()
    splits: tuple[list[Item], list[Item]] = ([], [])
    kinds = ("case_space", "reorder", "truncate", "prefix", "append")
    for n, doc_id in enumerate(sampled):
        items = splits[n % 2]
        title, sentences = cut[doc_id]
        items.append(Item(doc_id, "original", join(title, sentences)))
        chosen = rng.sample(kinds, 2)
        if NUMBER.search(" ".join(sentences)) and rng.random() < 0.5:
            chosen.append("number")
        elif rng.random() < 0.3:
            chosen.append(rng.choice([k for k in kinds if k not in chosen]))
        for kind in chosen:
            text = edited(kind, title, sentences, rng)
            if text is not None and text.strip() != join(title, sentences):
                items.append(Item(doc_id, kind, text))
        scores: Counter[str] = Counter()
        for w in vocab[doc_id]:
            for other in postings.get(w, ()):
                scores[other] += idf[w]
        negative = next((d for d, _ in scores.most_common() if d not in used), None)
        if negative is not None:
            used.add(negative)
            items.append(Item(negative, "negative", join(*cut[negative]), topic=doc_id))
    return splits


# -- measuring -------------------------------------------------------------------------------


def save(env: Env, items: list[Item], notebook_id: uuid.UUID) -> list[float]:
    from notebooks.services.remember import note_remember

    seconds = []
    for item in items:
        started = time.perf_counter()
        out = note_remember(actor=env.actor, operation_id=uuid.uuid4(), content=item.content,
                            kind="fact", notebook_id=notebook_id)
        seconds.append(time.perf_counter() - started)
        item.note_id = out.note.id
    return seconds


def pairs(env: Env, items: list[Item]) -> list[tuple[float, bool, bool, str]]:
    """Every pair of the items' notes: (distance, same key, truly a duplicate, what)."""
    import numpy as np

    from grove.kernel.tenancy import tenant
    from notebooks.models import Note, NoteEmbedding

    ids = [item.note_id for item in items]
    with tenant(env.account_id):
        keys = dict(Note.objects.filter(id__in=ids).values_list("id", "content_key"))
        vectors = dict(NoteEmbedding.objects.filter(note_id__in=ids)
                       .values_list("note_id", "embedding"))
    matrix = np.asarray([vectors[i] for i in ids], dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    distances = 1.0 - matrix @ matrix.T
    out = []
    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            a, b = items[i], items[j]
            truth = a.doc == b.doc
            if truth:
                what = b.edit if a.edit == "original" else (
                    a.edit if b.edit == "original" else "edit-edit")
            elif (a.topic is not None and a.topic == b.doc) or (
                    b.topic is not None and b.topic == a.doc):
                what = "hard-negative"
            else:
                what = "other"
            out.append((float(distances[i, j]), keys[a.note_id] == keys[b.note_id], truth, what))
    return out


def score(scored: list[tuple[float, bool, bool, str]], threshold: float) -> dict[str, Any]:
    tp = fp = fn = 0
    by_what: dict[str, list[int]] = {}
    for distance, same_key, truth, what in scored:
        predicted = same_key or distance <= threshold
        tp += predicted and truth
        fp += predicted and not truth
        fn += truth and not predicted
        hit = by_what.setdefault(what, [0, 0])
        hit[0] += predicted
        hit[1] += 1
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"threshold": threshold, "precision": round(precision, 4),
            "recall": round(recall, 4), "f1": round(f1, 4), "tp": tp, "fp": fp, "fn": fn,
            "flagged_share": {w: round(h / n, 4) for w, (h, n) in sorted(by_what.items())}}


def choose(sweep: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [row for row in sweep if row["precision"] >= MIN_PRECISION]
    if ok:
        return max(ok, key=lambda row: (row["recall"], -row["threshold"]))
    return max(sweep, key=lambda row: row["f1"])


def check_selector(env: Env, items: list[Item], threshold: float,
                   scored_index: dict[tuple[uuid.UUID, uuid.UUID], bool]) -> dict[str, Any]:
    """similar_notes at the threshold against the offline prediction; timings."""
    from notebooks.selectors.duplicates import duplicate_groups, similar_notes

    agree = differ = 0
    seconds = []
    for item in items:
        assert item.note_id is not None
        started = time.perf_counter()
        found = set(similar_notes(actor=env.actor, note_id=item.note_id, limit=20,
                                  max_distance=threshold))
        seconds.append(time.perf_counter() - started)
        expected = {other.note_id for other in items if other is not item
                    and scored_index[tuple(sorted((item.note_id, other.note_id), key=str))]}
        if found == expected:
            agree += 1
        else:
            differ += 1
    notebook_id = _notebook_of(env, items[0].note_id)
    group_seconds = []
    for _ in range(5):
        started = time.perf_counter()
        groups = duplicate_groups(actor=env.actor, notebook_id=notebook_id,
                                  max_distance=threshold)
        group_seconds.append(time.perf_counter() - started)
    lateral_seconds = []
    for _ in range(3):
        started = time.perf_counter()
        linked = lateral_links(env, notebook_id, threshold)
        lateral_seconds.append(time.perf_counter() - started)
    docs = {item.note_id: item.doc for item in items}
    pure = sum(1 for g in groups.groups if len({docs[m.id] for m in g.notes}) == 1)
    return {"similar_notes_agree": agree, "similar_notes_differ": differ,
            "similar_notes_ms": summary_ms(seconds), "duplicate_groups_ms": summary_ms(
                group_seconds), "groups": len(groups.groups), "groups_one_document": pure,
            "scanned": groups.scanned, "lateral_join_ms": summary_ms(lateral_seconds),
            "lateral_join_links": linked}


def lateral_links(env: Env, notebook_id: uuid.UUID, threshold: float) -> int:
    """The alternative to duplicate_groups' one read + matrix product: one statement that
    asks the HNSW index for each note's 10 nearest in the notebook (a lateral join),
    run as the runtime role under row-level security. Returns the links found."""
    from django.db import connection

    from grove.embeddings import configured_profile
    from grove.kernel.tenancy import tenant

    configured = configured_profile()
    assert configured is not None
    profile, dim = configured[0], int(configured[1])
    with tenant(env.account_id), connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.ef_search = 100")
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(
            f"SELECT count(*) FROM ("  # noqa: S608 - dim is an int
            f" SELECT e.note_id, e.embedding::vector({dim}) AS v FROM notebooks_noteembedding e"
            " JOIN notebooks_note n ON n.id = e.note_id AND n.content_hash = e.content_hash"
            " WHERE n.notebook_id = %s AND n.status = 'active' AND e.profile = %s) s"
            " CROSS JOIN LATERAL ("
            f" SELECT e2.note_id, e2.embedding::vector({dim}) <=> s.v AS d"
            " FROM notebooks_noteembedding e2 JOIN notebooks_note n2 ON n2.id = e2.note_id"
            f" WHERE n2.notebook_id = %s AND n2.status = 'active' AND e2.profile = %s"
            f" AND e2.dimension = {dim}"
            f" ORDER BY e2.embedding::vector({dim}) <=> s.v LIMIT 10) nb"
            " WHERE nb.d <= %s AND nb.note_id <> s.note_id",
            [notebook_id, profile, notebook_id, profile, threshold])
        return int(cursor.fetchone()[0])


def _notebook_of(env: Env, note_id: uuid.UUID | None) -> uuid.UUID:
    from grove.kernel.tenancy import tenant
    from notebooks.models import Note

    with tenant(env.account_id):
        return Note.objects.get(id=note_id).notebook_id


def save_ab(env: Env, items: list[Item], rounds: int) -> dict[str, Any]:
    """What `similar` costs a save: `note_remember` with the synchronous embedding, with it
    switched off (`duplicates.probe_of` → None: content matches only) and with no
    `similar` at all (as before), interleaved in blocks of 10 over the same texts; each
    arm's first block is left out (warm-up)."""
    import notebooks.selectors.duplicates as duplicates
    from notebooks.services.notebooks import notebook_create
    from notebooks.services.remember import note_remember

    real_probe, real_similar = duplicates.probe_of, duplicates.similar_to_text
    notebook = notebook_create(actor=env.actor, operation_id=uuid.uuid4(), name="saves")
    arms = ("with_probe", "without_probe", "no_similar")
    seconds: dict[str, list[float]] = {arm: [] for arm in arms}
    for n in range(rounds):
        arm = arms[(n // 10) % 3]
        duplicates.probe_of = real_probe if arm == "with_probe" else (  # type: ignore[assignment]
            lambda content: None)
        duplicates.similar_to_text = real_similar if arm != "no_similar" else (  # type: ignore[assignment]
            lambda **kwargs: [])
        item = items[n % len(items)]
        started = time.perf_counter()
        note_remember(actor=env.actor, operation_id=uuid.uuid4(), content=item.content,
                      kind="fact", notebook_id=notebook.id)
        seconds[arm].append(time.perf_counter() - started)
    duplicates.probe_of, duplicates.similar_to_text = real_probe, real_similar
    return {arm: summary_ms(values[10:]) for arm, values in seconds.items()}  # warm


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--out", default="duplicates")
    parser.add_argument("--saves-only", type=int, default=0,
                        help="only the save A/B (with and without the embedding), N saves")
    args = parser.parse_args()
    tune, held = build_set(args.docs)
    if args.saves_only:
        env = Env.fresh("duplicates-saves")
        result = save_ab(env, held, args.saves_only)
        print(result)
        write_result(f"{args.out}-saves", {"saves": args.saves_only, "remember_ms": result},
                     env)
        env.close()
        return
    env = Env.fresh("duplicates")
    from notebooks.services.notebooks import notebook_create

    save_seconds: list[float] = []
    for name, items in (("tune", tune), ("held-out", held)):
        notebook = notebook_create(actor=env.actor, operation_id=uuid.uuid4(), name=name)
        save_seconds += save(env, items, notebook.id)
    jobs_done, embed_seconds = env.drain_jobs()
    env.refresh_stats()
    scored_tune, scored_held = pairs(env, tune), pairs(env, held)
    sweep = [score(scored_tune, t) for t in THRESHOLDS]
    chosen = choose(sweep)
    threshold = chosen["threshold"]
    held_at = score(scored_held, threshold)
    held_sweep = [score(scored_held, t) for t in THRESHOLDS]

    index: dict[tuple[uuid.UUID, uuid.UUID], bool] = {}
    flat = iter(scored_held)
    for i, a in enumerate(held):
        for b in held[i + 1:]:
            distance, same_key, _, _ = next(flat)
            key = tuple(sorted((a.note_id, b.note_id), key=str))
            index[key] = same_key or distance <= threshold  # type: ignore[index]
    selector = check_selector(env, held, threshold, index)
    # What remember's synchronous embedding costs: one probe per save.
    from notebooks.selectors.duplicates import probe_of

    probe_seconds = []
    for item in held[:200]:
        started = time.perf_counter()
        probe_of(item.content)
        probe_seconds.append(time.perf_counter() - started)

    def counts(items: list[Item]) -> dict[str, int]:
        return dict(sorted(Counter(item.edit for item in items).items()))

    rows = [[r["threshold"], r["precision"], r["recall"], r["f1"],
             h["precision"], h["recall"]] for r, h in zip(sweep, held_sweep, strict=True)
            if r["threshold"] in (0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2,
                                  0.25, 0.3, 0.35, 0.4) or r is chosen]
    print(table(["threshold", "tune P", "tune R", "tune F1", "held P", "held R"], rows))
    print(f"chosen {threshold}: held-out {held_at}")
    print(selector)
    print("remember", summary_ms(save_seconds), "probe", summary_ms(probe_seconds))
    write_result(args.out, {
        "set": {"seed": SEED, "docs": args.docs, "note_chars": NOTE_CHARS,
                "tune": {"notes": len(tune), "items": counts(tune),
                         "pairs": len(scored_tune),
                         "duplicate_pairs": sum(1 for s in scored_tune if s[2])},
                "held_out": {"notes": len(held), "items": counts(held),
                             "pairs": len(scored_held),
                             "duplicate_pairs": sum(1 for s in scored_held if s[2])}},
        "rule": f"largest recall with tune precision >= {MIN_PRECISION}",
        "chosen": chosen, "held_out": held_at, "sweep_tune": sweep, "sweep_held_out": held_sweep,
        "selector": selector, "remember_ms": summary_ms(save_seconds),
        "probe_ms": summary_ms(probe_seconds),
        "embed_jobs": jobs_done, "embed_seconds": round(embed_seconds, 1),
    }, env)
    env.close()


if __name__ == "__main__":
    main()
