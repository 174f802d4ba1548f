"""The brief's budget (SPEC §10): one ranking of every note a brief may carry, and the
walk that puts each in exactly one tier — in full, as an index line, or dropped — within
token budgets. Pure functions over candidates; `notebooks.selectors.brief` reads the
candidates and renders the document."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grove.embeddings.tokens import count_each
from notebooks.schemas.briefs import Section


@dataclass(frozen=True)
class Candidate:
    note: Any  # a Note (its id, kind, content, …)
    section: Section
    pinned: bool = False  # guaranteed: in full whatever the budget (the first pinned notes)
    keep: bool = False  # guaranteed at least an index line whatever the budget (handoffs)


def ranked(*, pinned: Sequence[Candidate], handoffs: Sequence[Candidate],
           related: Sequence[Candidate], facts: Sequence[Candidate],
           floors: Mapping[str, int]) -> list[Candidate]:
    """Every candidate once, in delivery order: pinned, the floors' picks, handoffs,
    related, facts. A note met twice keeps its first place. Floors count the pinned notes
    of their kind and move the first notes of that kind forward; they never filter."""
    seen: set[uuid.UUID] = set()

    def fresh(candidates: Sequence[Candidate]) -> list[Candidate]:
        kept = []
        for candidate in candidates:
            if candidate.note.id not in seen:
                seen.add(candidate.note.id)
                kept.append(candidate)
        return kept

    first = fresh(pinned)
    rest = fresh(handoffs) + fresh(related) + fresh(facts)
    have = {kind: sum(1 for c in first if c.note.kind == kind) for kind in floors}
    promoted: list[Candidate] = []
    for candidate in rest:
        kind = candidate.note.kind
        if have.get(kind, 0) < floors.get(kind, 0):
            promoted.append(candidate)
            have[kind] += 1
    lifted = {c.note.id for c in promoted}
    return first + promoted + [c for c in rest if c.note.id not in lifted]


@dataclass(frozen=True)
class Allocation:
    full: list[Candidate]
    index: list[Candidate]
    dropped: list[Candidate]
    full_tokens: int
    index_tokens: int
    index_budget: int  # the index tier's budget, with what the full text left unspent


def allocate(candidates: Sequence[Candidate], full_cost: Callable[[int], int],
             index_cost: Callable[[int], int], *, full_budget: int,
             index_budget: int) -> Allocation:
    """Walk the ranking: pinned notes in full whatever they cost; the others in full
    while they fit, then — from the first that does not — as index lines while those
    fit (in the index budget and what the full text left unspent), then dropped; but a
    candidate to `keep` (a live handoff) is never dropped: past the index budget it
    still takes its index line. Each candidate lands in exactly one
    tier. Costs are asked for by position (`full_cost(i)`, `index_cost(i)`) only while a
    tier is open or a kept candidate needs its line, so a long tail of dropped notes is
    never rendered or counted."""
    full: list[Candidate] = []
    index: list[Candidate] = []
    dropped: list[Candidate] = []
    spent = spent_index = 0
    full_open = index_open = True
    for i, candidate in enumerate(candidates):
        if candidate.pinned:
            full.append(candidate)
            spent += full_cost(i)
            continue
        if full_open:
            cost = full_cost(i)
            if spent + cost <= full_budget:
                full.append(candidate)
                spent += cost
                continue
            full_open = False
            index_budget += max(0, full_budget - spent)  # nothing of the budget lies idle
        if index_open:
            line_cost = index_cost(i)
            if spent_index + line_cost <= index_budget:
                index.append(candidate)
                spent_index += line_cost
                continue
            index_open = False
        if candidate.keep:
            index.append(candidate)
            spent_index += index_cost(i)
            continue
        dropped.append(candidate)
    return Allocation(full=full, index=index, dropped=dropped, full_tokens=spent,
                      index_tokens=spent_index, index_budget=index_budget)


class Counted[T]:
    """Each candidate's rendering and its token count, made in batches as the walk asks
    for them (`allocate`), and kept for the document."""

    BATCH = 16

    def __init__(self, order: Sequence[Candidate], render: Callable[[Candidate], T],
                 text: Callable[[T], str]) -> None:
        self.order, self.render, self.text = order, render, text
        self.items: list[T] = []
        self.costs: list[int] = []

    def __call__(self, i: int) -> int:
        while len(self.costs) <= i:
            chunk = [self.render(c) for c in self.order[len(self.items):
                                                          len(self.items) + self.BATCH]]
            self.items += chunk
            self.costs += count_each([self.text(item) for item in chunk])
        return self.costs[i]

    def item(self, i: int) -> T:
        self(i)
        return self.items[i]


def share(budget: int, left: int, fraction: float, minimum: int) -> int:
    """A part's share of the budget — `fraction` of it, at least `minimum` — out of the
    `left` tokens not yet spent (never more, never negative)."""
    return min(max(0, left), max(minimum, int(budget * fraction)))


def fit_lines(costs: Sequence[int], cap: int) -> tuple[int, int]:
    """How many of these lines, in order, fit in `cap` tokens, and what they take."""
    spent = taken = 0
    for cost in costs:
        if spent + cost > cap:
            break
        spent += cost
        taken += 1
    return taken, spent


