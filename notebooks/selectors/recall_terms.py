"""Which of a query's terms select recall's lexical matches (SPEC §4, §12).

The lexical arm reads every match of the clauses it is given, so the clauses decide
its work. They are chosen from the term statistics before the arm runs, so that their
matches fit a budget whatever the corpus size: the query's rarest terms, each alone,
rarest first while their notes fit; when even the rarest term is in more notes than
that, pairs of the rarest few (a note must hold both — posting lists intersected in the
index, so only the notes holding both are visited). The terms that select nothing still
score the matches (BM25 over every kept term).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

Clause = tuple[str, ...]  # lexemes a note must all contain
# Reciprocal rank still orders the few declared notes among themselves and the profile,
# and a known note's passages (`passage_rank`).
RRF_K = 10


def tsquery_literal(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


@dataclass(frozen=True)
class Weights:
    """idf per informative query lexeme (rarest first), and the clauses that select
    lexical matches (`choose_clauses`); the other terms only re-rank them."""

    terms: dict[str, float]
    clauses: tuple[Clause, ...] | None = None  # None: every term alone
    avgdl: float = 1.0  # the account's mean distinct lexemes per note (BM25)

    def selecting(self) -> list[Clause]:
        if self.clauses is None:
            return [(lexeme,) for lexeme in self.terms]
        return list(self.clauses)

    def weight(self, clause: Clause) -> float:
        """A clause's part of a match's pre-rank score: its terms' idf sum."""
        return sum(self.terms[lexeme] for lexeme in clause)

    def read_cap(self, budget: int) -> int:
        """How many matches of each clause the lexical arm reads (one more, to know
        there were more): the budget — which single terms fit by the statistics — or,
        for pairs, whose matches the statistics cannot tell, an equal share of it."""
        pairs = sum(1 for clause in self.selecting() if len(clause) > 1)
        return max(1, budget // pairs) if pairs else budget

    def selects(self, contained: set[str]) -> bool:
        """Whether a note holding these lexemes is a lexical match."""
        return any(set(clause) <= contained for clause in self.selecting())


def choose_clauses(ranked: list[tuple[str, float]], *, distinctive_share: float,
                   min_distinctive: int, total: int, budget: int, pair_terms: int
                   ) -> tuple[Clause, ...]:
    """The clauses for `ranked` (the kept lexemes rarest first, with how many notes hold
    each). A term selects alone when it is distinctive (in at most `distinctive_share`
    of the `total` notes, or one of the `min_distinctive` rarest) and the notes of the
    terms taken so far, its own included, are at most `budget`. When the rarest term
    alone is in more notes than `budget`, a note must hold two of the `pair_terms`
    rarest instead; a query of one such term keeps it (the arm then reads `budget` of
    its notes and says the count is a lower bound)."""
    singles: list[Clause] = []
    spent = 0.0
    for position, (lexeme, notes) in enumerate(ranked):
        distinctive = notes / max(total, 1) <= distinctive_share or position < min_distinctive
        if not distinctive or spent + notes > budget:
            break
        singles.append((lexeme,))
        spent += notes
    if singles or not ranked:
        return tuple(singles)
    if len(ranked) == 1:
        return ((ranked[0][0],),)
    return tuple(combinations([lexeme for lexeme, _ in ranked[:pair_terms]], 2))
