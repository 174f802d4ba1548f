"""Links between notes (issue 38): what a save with links costs, and what following
them does for a question whose answer sits one link away.

**Save.** 1,000 notes titled "Topic 0" … "Topic 999" are made first. Then two document
notes of the same length are corrected in turn, `--saves` times each (ABAB…, so both
see the same machine): one whose text holds 50 wiki-links to topics (`[[Topic 17]]`, …,
each resolved on every save), one whose text is the same words without the brackets.
Each save changes one word, so it is a real new revision (passages cut, links and
names written, an embed job queued — the job is not run). A third note, "relinked",
also has 50 links, and each save points one of them at another topic, so all of its
links are written and resolved anew (the worst case; the linked note's words move but
its links stay, the common case). Reported: the median and p95 of `note_update`
through the service, and the ratios linked ÷ plain and relinked ÷ plain.

**One link away.** A generated corpus (seeded, `--teams` teams): each team is a note
"# Team <Bird>" naming who leads it and where it sits; each team owns two services,
each a note "# <Service>" saying what the service does and that it "is owned by
[[Team <Bird>]]"; and a third of the services have a changelog note that mentions the
service by name. The question for each service is "Who leads the team that owns the
<service>?" — its answer is the team's note (the lead's name), which shares no word
with the question but "team"; the note that matches is the service's, one link away.
Every note is embedded by the local model (the worker's own batches, run in-process).
Reported: how often the answer note is in recall's top 10 (and top 3) without and with
`expand: "links"`, and recall's median time both ways.

    .venv/bin/python bench/links.py [--saves 200] [--teams 60]
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

BIRDS = ("Kestrel Heron Plover Avocet Bittern Curlew Dunlin Egret Fulmar Gannet Harrier "
         "Ibis Jacana Kittiwake Lapwing Merlin Nightjar Osprey Puffin Quail Redshank "
         "Shrike Tern Upupa Vireo Wagtail Xenops Yellowhammer Zitting Bunting Chiffchaff "
         "Dipper Eider Firecrest Goldcrest Hobby Jay Knot Linnet Martin Nuthatch Oriel "
         "Pipit Rook Siskin Twite Whimbrel Wren Crake Stint Scaup Smew Garganey Teal "
         "Wigeon Pochard Shoveler Gadwall Pintail Shelduck").split()
FIRST = ("Priya Tomas Ines Kwame Mei Lars Amara Diego Sofia Yusuf Hana Oskar Leila Mateo "
         "Noor Felix Zara Ivan Aiko Bruno").split()
LAST = ("Raman Ek Duarte Mensah Chen Holm Okafor Ruiz Rossi Kaya Sato Berg Haddad Silva "
        "Malik Vogel Nkosi Petrov Tanaka Costa").split()
CITIES = ("Lisbon Oslo Accra Osaka Lyon Quito Tunis Riga Perth Cork Graz Porto Bergen "
          "Dakar Kyoto Turin").split()
SERVICES = ("billing invoicing search indexing checkout payments notifications email "
            "scheduling reporting analytics exports imports sync backup storage upload "
            "thumbnails pricing discounts refunds ledger audit login sessions permissions "
            "onboarding recommendations feeds comments moderation translation geocoding "
            "routing tracking inventory catalog reviews ratings subscriptions receipts "
            "webhooks throttling caching metrics alerting logging tracing deployment "
            "provisioning licensing consent archiving retention printing labels shipping "
            "returns loyalty vouchers gifting wishlist bundling tax currency fraud "
            "chargebacks payouts settlement reconciliation forecasting budgeting "
            "procurement contracts signatures").split()
DOES = ("keeps the records straight", "answers within a second", "runs every night",
        "talks to the bank", "feeds the dashboards", "was rewritten last spring")


def corpus(teams: int, seed: int = 38) -> tuple[list[str], list[tuple[str, str]]]:
    """The notes, and (question, the answer note's title) per service."""
    rng = random.Random(seed)  # noqa: S311 - a seeded corpus, not a secret
    birds = BIRDS[:teams]
    services = SERVICES[:teams * 2]
    notes, questions = [], []
    for index, bird in enumerate(birds):
        lead = f"{FIRST[index % len(FIRST)]} {LAST[(index * 7) % len(LAST)]}"
        notes.append(f"# Team {bird}\n\nLed by {lead} since {2019 + index % 6}; sits in "
                     f"{CITIES[index % len(CITIES)]}. Weekly sync on "
                     f"{('Mondays', 'Tuesdays', 'Thursdays')[index % 3]}.")
    for index, service in enumerate(services):
        owner = birds[index // 2]
        name = f"{service.capitalize()} service"
        notes.append(f"# {name}\n\nThe {service} service {rng.choice(DOES)}. It is owned by "
                     f"[[Team {owner}]]; page them when it breaks.")
        if index % 3 == 0:
            notes.append(f"# Changelog {index}\n\nThe {service} service moved to the new "
                         "cluster; no downtime.")
        questions.append((f"Who leads the team that owns the {service} service?",
                          f"Team {owner}"))
    return notes, questions


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def saves(env: Env, count: int) -> dict[str, Any]:
    from grove.kernel.tenancy import tenant
    from notebooks.services import note_remember, note_update
    from notebooks.services.notes_many import NewNote, notes_create_many

    with tenant(env.actor):
        notes_create_many(actor=env.actor, notebook_id=None, kind="note", items=[
            NewNote(content=f"# Topic {i}\n\nAbout topic {i}.", tags=[]) for i in range(1000)])
    rng = random.Random(7)  # noqa: S311 - a seeded choice, not a secret
    chosen = rng.sample(range(1000), 50)
    linked_body = " ".join(f"See [[Topic {i}]] for the {i}th part." for i in chosen)
    plain_body = " ".join(f"See Topic {i}xx for the {i}th part." for i in chosen)

    ids = {}
    for name, body in (("linked", linked_body), ("plain", plain_body),
                       ("relinked", linked_body)):
        ids[name] = note_remember(actor=env.actor, operation_id=uuid.uuid4(),
                                  content=f"# {name} hub\n\n{body}", kind="note").note.id
    times: dict[str, list[float]] = {"linked": [], "plain": [], "relinked": []}
    bodies = {"linked": linked_body, "plain": plain_body}
    orders = [("linked", "plain", "relinked"), ("plain", "relinked", "linked"),
              ("relinked", "linked", "plain")]
    for round_ in range(count):
        # relinked: one of its 50 links points elsewhere each save, so all are written
        # and resolved anew (the other two keep their links: only the words around move).
        bodies["relinked"] = linked_body.replace(f"[[Topic {chosen[round_ % 50]}]]",
                                                 f"[[Topic {1000 - 1 - round_ % 50}]]")
        for name in orders[round_ % 3]:
            text = f"# {name} hub\n\nRevision {round_}. {bodies[name]}"
            t0 = time.perf_counter()
            note_update(actor=env.actor, operation_id=uuid.uuid4(), note_id=ids[name],
                        content=text)
            times[name].append((time.perf_counter() - t0) * 1000)
    out = {name: {"median_ms": round(statistics.median(values), 2),
                  "p95_ms": round(percentile(values, 0.95), 2), "saves": len(values)}
           for name, values in times.items()}
    out["p95_ratio"] = round(out["linked"]["p95_ms"] / out["plain"]["p95_ms"], 3)
    out["median_ratio"] = round(out["linked"]["median_ms"] / out["plain"]["median_ms"], 3)
    out["relinked_p95_ratio"] = round(out["relinked"]["p95_ms"] / out["plain"]["p95_ms"], 3)
    return out


def one_link_away(env: Env, teams: int) -> dict[str, Any]:
    from grove.interfaces.rendering import note_title
    from grove.kernel import jobs
    from grove.kernel.tenancy import tenant
    from notebooks.models import Note
    from notebooks.selectors.recall import recall
    from notebooks.services.notebooks import notebook_create
    from notebooks.services.notes_many import NewNote, notes_create_many

    notebook = notebook_create(actor=env.actor, operation_id=uuid.uuid4(),
                               name="One link away").id
    notes, questions = corpus(teams)
    with tenant(env.actor):
        notes_create_many(actor=env.actor, notebook_id=notebook, kind="note",
                          items=[NewNote(content=text, tags=[]) for text in notes])
    while jobs.run_batch(account_id=env.account_id, kind="embed"):
        pass
    with tenant(env.actor):
        titles = {note_title(n.content): n.id for n in
                  Note.objects.filter(notebook_id=notebook) if note_title(n.content)}
    found: dict[str, dict[str, int]] = {"plain": {"top3": 0, "top10": 0},
                                        "links": {"top3": 0, "top10": 0}}
    timing: dict[str, list[float]] = {"plain": [], "links": []}
    for question, answer in questions:
        want = titles[answer]
        for name, expand in (("plain", None), ("links", "links")):
            t0 = time.perf_counter()
            got = recall(actor=env.actor, query=question, place=notebook, limit=10,
                         max_chars=50_000, expand=expand)
            timing[name].append((time.perf_counter() - t0) * 1000)
            ranked = [item.note.id for item in got.data]
            if want in ranked[:3]:
                found[name]["top3"] += 1
            if want in ranked[:10]:
                found[name]["top10"] += 1
    total = len(questions)
    return {"questions": total, "notes": len(notes),
            **{name: {"top3": round(v["top3"] / total, 3), "top10": round(v["top10"] / total, 3),
                      "median_ms": round(statistics.median(timing[name]), 1)}
               for name, v in found.items()}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--saves", type=int, default=200)
    parser.add_argument("--teams", type=int, default=45)
    parser.add_argument("--out", default="links")
    args = parser.parse_args()
    started = time.perf_counter()
    env = Env.fresh("links")
    saved = saves(env, args.saves)
    print("saves", saved, flush=True)
    away = one_link_away(env, args.teams)
    print("one link away", away, flush=True)
    results = {"saves": saved, "one_link_away": away,
               "seconds": round(time.perf_counter() - started, 1)}
    path = write_result(args.out, results, env)
    print()
    print(table(["note", "saves", "median ms", "p95 ms"],
                [[name, saved[name]["saves"], saved[name]["median_ms"], saved[name]["p95_ms"]]
                 for name in ("plain", "linked", "relinked")]))
    print(f"p95 ratio linked ÷ plain: {saved['p95_ratio']} "
          f"(median {saved['median_ratio']}); relinked ÷ plain: "
          f"{saved['relinked_p95_ratio']}")
    print(table(["recall", "answer in top 3", "answer in top 10", "median ms"],
                [[name, away[name]["top3"], away[name]["top10"], away[name]["median_ms"]]
                 for name in ("plain", "links")]))
    print(f"\nwrote {path} in {results['seconds']} s")
    env.close()


if __name__ == "__main__":
    main()
