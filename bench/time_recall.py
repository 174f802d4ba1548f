"""Time-aware recall on a dated corpus of our own: recall@5 and recall@10 with and without
the time layer (`notebooks.selectors.time_window`).

The corpus (deterministic, seed 7): 8 topics × 60 notes, one event each, spread over
2021-01 … 2026-11. Each note says what was decided about its topic, in that topic's own
words. 60 % state their date in the text (ISO days, "May 3, 2023", "3 May 2023", "May
2023" — mixed); of those, a quarter were imported later (created 2026-11-01: only the
stated date tells when); the other 40 % state no date and were written on the day
(created = updated = the event day). "Now" is 2026-11-18 12:00 UTC.

Questions (gold: the notes of the topic whose **event day** falls in the window — not
the note's created date when it was imported), only those with 1–5 gold notes:

* `month`:  "what did we decide about <topic> in <Month YYYY>"
* `from`:   "<topic> notes from <Month YYYY>"
* `quarter`: "<topic> decisions in Q<n> <YYYY>"
* `before`:  "<topic> decisions before <Month YYYY>" (windows at the corpus' start)
* `since`:   "<topic> decisions since <Month YYYY>" (windows at its end)
* `relative`: "<topic> decisions last month" / "this month" / "in the last 3 weeks"

Each question is asked through `recall(limit=10)` with the layer (as shipped) and
without it (`time_window` patched to see no time words — bench only), with the real
local embedding model. Also: the grammar's cost per query on these questions and on
all 1,109 SciFact claims.

    .venv/bin/python bench/time_recall.py   # → bench/results/time_recall.json
"""

from __future__ import annotations

import json
import random
import sys
import time
import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, summary_ms, table, write_result  # noqa: E402
from bench.scifact import DATA  # noqa: E402

NOW = datetime(2026, 11, 18, 12, tzinfo=UTC)
TOPICS = {
    "billing": ("invoices", "Stripe", "refunds", "tax rates", "dunning emails", "annual plans"),
    "hiring": ("interview loop", "offer letters", "recruiter", "onboarding buddy", "referrals",
               "take-home task"),
    "database": ("Postgres upgrade", "read replicas", "vacuum settings", "backups",
                 "connection pool", "index bloat"),
    "security": ("2FA rollout", "pen test", "secrets rotation", "SSO", "audit log",
                 "phishing drill"),
    "design": ("color palette", "icon set", "typography", "onboarding screens", "dark mode",
               "empty states"),
    "marketing": ("newsletter", "launch post", "webinar", "conference booth", "ads budget",
                  "case study"),
    "support": ("ticket triage", "SLA targets", "help center", "macros", "escalation path",
                "chat widget"),
    "mobile": ("iOS release", "Android build", "push notifications", "offline mode",
               "app store listing", "crash reports"),
}
VERBS = ("we decided to change", "we agreed to drop", "we chose to keep", "we settled on",
         "the team approved", "we postponed")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
START, END = date(2021, 1, 1), date(2026, 11, 17)


def stated(day: date, rng: random.Random) -> str:
    style = rng.randrange(4)
    if style == 0:
        return day.isoformat()
    if style == 1:
        return f"{MONTHS[day.month - 1]} {day.day}, {day.year}"
    if style == 2:
        return f"{day.day} {MONTHS[day.month - 1]} {day.year}"
    return f"{MONTHS[day.month - 1]} {day.year}"


def corpus(rng: random.Random) -> list[dict[str, Any]]:
    notes = []
    span = (END - START).days
    for topic, things in TOPICS.items():
        for i in range(60):
            day = START + timedelta(days=rng.randrange(span))
            thing, verb = rng.choice(things), rng.choice(VERBS)
            detail = f"{topic.capitalize()} — {thing}: {verb} the {thing} plan (item {i})."
            says_date = rng.random() < 0.6
            imported = says_date and rng.random() < 0.25
            content = (f"{stated(day, rng)}: {detail}" if says_date else detail)
            created = (datetime(2026, 11, 1, 9, tzinfo=UTC) if imported else
                       datetime.combine(day, datetime.min.time(), tzinfo=UTC)
                       + timedelta(hours=rng.randrange(8, 19)))
            notes.append({"topic": topic, "day": day, "content": content,
                          "created": created, "says_date": says_date, "imported": imported})
    return notes


def month_window(y: int, m: int) -> tuple[date, date]:
    return date(y, m, 1), (date(y + 1, 1, 1) if m == 12 else date(y, m + 1, 1))


def questions(notes: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    today = NOW.date()
    asked: list[dict[str, Any]] = []

    def add(kind: str, topic: str, text: str, start: date | None, end: date | None) -> None:
        gold = [n["id"] for n in notes if n["topic"] == topic
                and (start is None or n["day"] >= start) and (end is None or n["day"] < end)]
        if 1 <= len(gold) <= 5:
            asked.append({"kind": kind, "topic": topic, "query": text, "gold": gold})

    for topic in TOPICS:
        for y in range(2021, 2027):
            for m in range(1, 13):
                if date(y, m, 1) > today:
                    continue
                s, e = month_window(y, m)
                name = f"{MONTHS[m - 1]} {y}"
                if rng.random() < 0.35:
                    add("month", topic, f"what did we decide about {topic} in {name}", s, e)
                elif rng.random() < 0.3:
                    add("from", topic, f"{topic} notes from {name}", s, e)
            for q in range(1, 5):
                s = date(y, 3 * q - 2, 1)
                e = date(y + (q == 4), 1 if q == 4 else 3 * q + 1, 1)
                if s <= today and rng.random() < 0.5:
                    add("quarter", topic, f"{topic} decisions in Q{q} {y}", s, e)
        for m in (2, 3, 4):
            add("before", topic, f"{topic} decisions before {MONTHS[m - 1]} 2021", None,
                date(2021, m, 1))
        for m in (8, 9, 10):
            add("since", topic, f"{topic} decisions since {MONTHS[m - 1]} 2026",
                date(2026, m, 1), None)
        add("relative", topic, f"{topic} decisions last month", date(2026, 10, 1),
            date(2026, 11, 1))
        add("relative", topic, f"{topic} decisions this month", date(2026, 11, 1),
            date(2026, 12, 1))
        add("relative", topic, f"{topic} decisions in the last 3 weeks",
            today - timedelta(weeks=3) + timedelta(days=1), today + timedelta(days=1))
    return asked


def main() -> None:
    started = time.perf_counter()
    rng = random.Random(7)  # noqa: S311 - a reproducible corpus, not a secret
    notes = corpus(rng)
    env = Env.fresh("time_recall")
    from grove.kernel.tenancy import tenant
    from notebooks.models import Note
    from notebooks.selectors import recall as r
    from notebooks.selectors import time_window as tw
    from notebooks.services.remember import note_remember

    for n in notes:
        out = note_remember(actor=env.actor, operation_id=uuid.uuid4(), content=n["content"],
                            kind="decision")
        n["id"] = uuid.UUID(str(out.note.id).removeprefix("note:"))
    with tenant(env.actor):
        for n in notes:
            Note.objects.filter(id=n["id"]).update(created_at=n["created"],
                                                   updated_at=n["created"])
    jobs_done, embed_seconds = env.drain_jobs()
    env.refresh_stats()
    asked = questions(notes, rng)

    real_now = tw.timezone.now
    tw.timezone.now = lambda: NOW  # bench only: the questions' "now"
    real_window = tw.time_window

    def run(layer: bool) -> tuple[dict[str, Any], list[float]]:
        tw.time_window = real_window if layer else (  # type: ignore[assignment]
            lambda *, actor, query, time_zone: (None, query))
        r.tw.time_window = tw.time_window
        per_kind: dict[str, list[tuple[float, float]]] = {}
        seconds = []
        modes: dict[str, int] = {}
        for q in asked:
            t0 = time.perf_counter()
            out = r.recall(actor=env.actor, query=q["query"], limit=10, max_chars=50_000,
                           time_zone="UTC")
            seconds.append(time.perf_counter() - t0)
            got = [uuid.UUID(str(i.note.id).removeprefix("note:")) for i in out.data]
            gold = set(q["gold"])
            r5 = len(gold & set(got[:5])) / len(gold)
            r10 = len(gold & set(got[:10])) / len(gold)
            per_kind.setdefault(q["kind"], []).append((r5, r10))
            tag = out.meta.time_window.mode if out.meta.time_window else "none"
            modes[f"{out.meta.mode}/{tag}"] = modes.get(f"{out.meta.mode}/{tag}", 0) + 1
        scores: dict[str, Any] = {}
        every = [s for v in per_kind.values() for s in v]
        for kind, values in [("all", every), *sorted(per_kind.items())]:
            scores[kind] = {"questions": len(values),
                            "recall@5": round(sum(a for a, _ in values) / len(values), 4),
                            "recall@10": round(sum(b for _, b in values) / len(values), 4)}
        scores["modes"] = modes
        return scores, seconds

    without, seconds_without = run(False)
    with_layer, seconds_with = run(True)
    tw.time_window = real_window
    r.tw.time_window = real_window
    tw.timezone.now = real_now

    from notebooks.dates import time_expression

    claims = [json.loads(line)["text"] for line in
              (DATA / "queries.jsonl").read_text().splitlines()]
    cost: dict[str, Any] = {}
    for name, texts in (("bench questions", [q["query"] for q in asked]),
                        ("scifact claims", claims)):
        times = []
        for _ in range(3):
            for text in texts:
                t0 = time.perf_counter()
                time_expression(text, NOW.date())
                times.append(time.perf_counter() - t0)
        cost[name] = {"queries": len(texts), **{k: round(v * 1000, 1) for k, v in
                                                summary_ms(times).items() if k != "n"}}
        cost[name]["unit"] = "microseconds"
    cost["scifact claims"]["with a time expression"] = sum(
        1 for c in claims if time_expression(c, NOW.date()) is not None)

    rows = [[kind, with_layer[kind]["questions"], without[kind]["recall@5"],
             with_layer[kind]["recall@5"], without[kind]["recall@10"],
             with_layer[kind]["recall@10"]]
            for kind in with_layer if kind != "modes"]
    print(table(["questions", "n", "r@5 without", "r@5 with", "r@10 without", "r@10 with"],
                rows))
    print("recall ms without", summary_ms(seconds_without), "with", summary_ms(seconds_with))
    print("grammar cost", cost)
    counts = {"notes": len(notes), "stating a date": sum(n["says_date"] for n in notes),
              "imported (created later)": sum(n["imported"] for n in notes),
              "embed_jobs": jobs_done, "embed_seconds": round(embed_seconds, 1)}
    write_result("time_recall", {
        "corpus": counts, "now": NOW.isoformat(), "questions": len(asked),
        "without_time_layer": without, "with_time_layer": with_layer,
        "recall_ms": {"without": summary_ms(seconds_without), "with": summary_ms(seconds_with)},
        "grammar_cost": cost, "examples": asked[:5] and [
            {k: (str(v) if k != "gold" else [str(g) for g in v]) for k, v in q.items()}
            for q in asked[::40]],
        "seconds": round(time.perf_counter() - started, 1)}, env)


if __name__ == "__main__":
    main()
