"""Recall (SPEC §4): what an agent asks Grove to remember, within a budget.

Two ranked lists over the caller's live, granted notes, fused by their scaled scores:

* **lexical**: PostgreSQL full text. Natural-language questions rarely match with AND
  semantics, and OR over every word matches half the corpus, so the query's lexemes are
  weighted by rarity (BM25's idf from the account's term statistics), the most common
  ones are dropped, the notes holding the rarest ones are the matches (`recall_terms`:
  as many terms as fit a budget of notes, so the arm's work does not grow with the
  corpus), and the best of them are scored with BM25 over all the query terms they
  contain.
* **semantic**: pgvector cosine distance over the HNSW index of the active embedding
  profile (iterative scan, so grant filters still fill the list); hits farther than a
  threshold are dropped, so an unrelated query returns nothing rather than filler.

Grant scoping happens inside both queries, before ranking. With embeddings disabled
recall is lexical and `meta.mode` says so.

A query is answered in few round trips (`recall_query.gather`): the tenant context
(made with the HNSW settings), the scope's known-false claims, the query's lexemes with
their counts, then one statement holding both arms, their fusion, the head's rows and
the counts.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.db import connection
from django.db.models import F, Q, QuerySet, Window
from django.db.models.functions import RowNumber

from grove.embeddings import get_embedder
from grove.embeddings.profile import active_profile_name
from grove.kernel.actor import READ, Actor
from grove.kernel.errors import Invalid
from grove.kernel.metrics import RECALL_STAGE_SECONDS, stage, timed
from grove.kernel.tenancy import tenant
from grove.kernel.validation import clean_text
from notebooks.models import SEARCH_CONFIG, Indexing, Kind, Note
from notebooks.rules import (
    EVERYWHERE,
    LENGTH_LEXEME,
    RECALL_DEFAULT_LIMIT,
    RECALL_DEFAULT_MAX_CHARS,
    RECALL_MAX_LIMIT,
    RECALL_MAX_MAX_CHARS,
    RECALL_MIN_MAX_CHARS,
    RECALL_QUERY_MAX_CHARS,
    UNRESTRICTED_KINDS,
    clean_tag,
    clean_task_id,
)
from notebooks.schemas.notes import RecallMeta, RecallOut
from notebooks.schemas.truth import Coverage
from notebooks.selectors import recall_budget, recall_links
from notebooks.selectors import time_window as tw
from notebooks.selectors.access import Scope, resolve_scope
from notebooks.selectors.as_of import clean_as_of
from notebooks.selectors.as_of_reads import recall_at
from notebooks.selectors.passage_rank import (
    PassageHits,
    QueryArms,
    best_passages,
    passage_hits,
)
from notebooks.selectors.recall_query import (
    SEMANTIC_SETTINGS,
    gather,
    lexical_arm,
)
from notebooks.selectors.recall_terms import RRF_K, Weights, choose_clauses
from notebooks.selectors.truth import Truth, scoped_truth
from passages.chunking import CHUNK_CHARS

CANDIDATES = 50  # per arm
# Fusion: a convex combination of the arms' scores, each min-max normalised over its
# list (the lexical weight FUSION_ALPHA); BM25's k1 and b. Chosen on SciFact train
# (bench/ranking_tune.py: 0.7108 → 0.7275 nDCG@10 against reciprocal rank over idf
# sums), the test split run once through this path (bench/quality.py).
FUSION_ALPHA = 0.6
BM25_K1 = 0.9
BM25_B = 0.5
# Cosine distance beyond which a semantic hit is unrelated (similarity below 0.3).
DEFAULT_MAX_DISTANCE = 0.7
# Lexemes in more than this share of notes carry no signal for recall.
COMMON_TERM_SHARE = 0.2
MAX_TERMS = 12
# Lexical matches are notes holding a distinctive term: one in at most this share of
# notes, or one of the query's two rarest — rarest first, while their notes number at
# most MATCH_BUDGET; when the rarest alone is in more, notes holding two of the
# PAIR_TERMS rarest (`recall_terms.choose_clauses`). Each match costs a row visit: a
# share alone grew with the corpus (16,678 visits per query at 1M notes). The arm reads
# at most MATCH_BUDGET + 1 matches of a single term, and pairs share the budget
# (`Weights.read_cap`). The best RESCORE matches by their
# clauses' idf sum are scored with BM25 over every kept term (each scored note's
# vector is read: the bound keeps that cheap).
DISTINCTIVE_SHARE = 0.01
MIN_DISTINCTIVE = 2
MATCH_BUDGET = 2000
PAIR_TERMS = 4
RESCORE = 200
PROFILE_KINDS = (Kind.PREFERENCE, Kind.FACT, Kind.DECISION)


# -- term statistics -------------------------------------------------------------------------


def _lexeme_counts(query: str) -> tuple[list[str], dict[str, int], int, int]:
    """The query's lexemes, how many active notes contain each, how many active notes
    there are and their distinct lexemes in all (`LENGTH_LEXEME`) — one statement (one
    snapshot, as `term_counts`)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT q.lexeme, (SELECT sum(ndoc) FROM ("
            " SELECT ndoc FROM notebooks_termstat t WHERE t.lexeme = q.lexeme"
            " UNION ALL SELECT ndoc FROM notebooks_termdelta d WHERE d.lexeme = q.lexeme) c)"
            " FROM (SELECT lexeme, ord FROM unnest(tsvector_to_array("
            "to_tsvector(%s::regconfig, %s))) WITH ORDINALITY AS l(lexeme, ord)"
            " UNION ALL SELECT '', 0 UNION ALL SELECT %s, 0) q ORDER BY q.ord",
            [SEARCH_CONFIG, query, LENGTH_LEXEME])
        rows = cursor.fetchall()
    counts = {lexeme: int(n) for lexeme, n in rows if n}
    lexemes = [lexeme for lexeme, _ in rows if lexeme and lexeme != LENGTH_LEXEME]
    return lexemes, counts, counts.pop("", 0), counts.pop(LENGTH_LEXEME, 0)


def term_weights(query: str) -> Weights:
    """idf for each informative lexeme of the query, from the account's term statistics
    (`notebooks.services.term_stats`: kept current by the writes themselves, so a note counts as
    soon as its save commits); the most common lexemes are dropped. Lexemes no note
    contains count as rare. Caller holds a tenant transaction."""
    lexemes, counts, total, lengths = _lexeme_counts(query)
    if not lexemes:
        return Weights(terms={})
    if total < 1:
        return Weights(terms={lex: 1.0 for lex in lexemes})
    avgdl = max(lengths / total, 1.0)
    shares = {lex: max(counts.get(lex, 0), 0.5) / total for lex in lexemes}
    kept = {lex: f for lex, f in shares.items() if f <= COMMON_TERM_SHARE}
    if not kept:  # only common words: keep the rarest two rather than nothing
        kept = dict(sorted(shares.items(), key=lambda item: item[1])[:2])
    # The rarest terms carry the signal; more terms only cost posting-list reads.
    kept = dict(sorted(kept.items(), key=lambda item: item[1])[:MAX_TERMS])
    clauses = choose_clauses([(lex, f * total) for lex, f in kept.items()],
                             distinctive_share=DISTINCTIVE_SHARE,
                             min_distinctive=MIN_DISTINCTIVE, total=total,
                             budget=MATCH_BUDGET, pair_terms=PAIR_TERMS)
    return Weights(terms={lex: math.log(1 + (1 - min(f, 0.999)) / f)
                          for lex, f in kept.items()}, clauses=clauses, avgdl=avgdl)


# -- the two arms ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Searched:
    """Which notes recall may return: the scope's live notes (`access.Scope`), narrowed
    to a tag and the query's time window, applied through whichever table a query
    starts from."""

    scope: Scope
    tag: str | None = None
    window: tw.TimeWindow | None = None  # the query's time window

    def q(self, prefix: str = "") -> Q:
        condition = self.scope.q(prefix)
        if self.tag is not None:
            condition &= Q(**{f"{prefix}tags__contains": [self.tag]})
        return condition & tw.filtering(self.window, prefix)

    def notes(self) -> QuerySet[Note]:
        return Note.objects.filter(self.q())


def _lexical(weights: Weights, scope: Searched) -> tuple[list[tuple[uuid.UUID, float]], int]:
    """The lexical arm alone (`recall_query.lexical_arm`, which `gather` folds into
    recall's one statement): top notes by the idf sum of the informative query terms
    they contain, among the notes containing a distinctive one, and how many notes that
    is. In `grove_lexical_matches`: a security-definer function, because under row-level
    security the runtime role cannot use the GIN index for `@@` at all; it applies the
    account rule and the live-note conditions itself, and the selectors decide which
    notebooks are in scope."""
    selecting = weights.selecting()
    if not selecting:
        return [], 0
    sql, params = lexical_arm(scope, weights, candidates=CANDIDATES, rescore=RESCORE,
                              cap=weights.read_cap(MATCH_BUDGET), k1=BM25_K1, b=BM25_B)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    total = rows[0][3] if rows else 0
    return [(row[0], float(row[2])) for row in rows], total


# -- the service -----------------------------------------------------------------------------


def clean_budget(limit: Any, max_chars: Any) -> tuple[int, int]:
    limit = RECALL_DEFAULT_LIMIT if limit is None else limit
    max_chars = RECALL_DEFAULT_MAX_CHARS if max_chars is None else max_chars
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= RECALL_MAX_LIMIT:
        raise Invalid(f"limit must be a whole number from 1 to {RECALL_MAX_LIMIT}.",
                      code="invalid_limit")
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) \
            or not RECALL_MIN_MAX_CHARS <= max_chars <= RECALL_MAX_MAX_CHARS:
        raise Invalid(f"maxChars must be a whole number from {RECALL_MIN_MAX_CHARS} to "
                      f"{RECALL_MAX_MAX_CHARS}.", code="invalid_max_chars")
    return limit, max_chars


@timed(RECALL_STAGE_SECONDS, report=RecallOut.with_timings)
def recall(
    *,
    actor: Actor,
    query: str | None = None,
    place: Any = EVERYWHERE,
    include_personal: bool = True,
    task_id: str | None = None,
    tag: str | None = None,
    limit: int | None = None,
    max_chars: int | None = None,
    max_distance: float = DEFAULT_MAX_DISTANCE, time_zone: str | None = None,
    timings: bool = False, expand: str | None = None, as_of: str | None = None,
) -> RecallOut:
    """Notes relevant to `query` within the budget (default 8 items / 6,000 characters).

    `place` and `include_personal` are read by `resolve_scope`: every granted notebook
    (and Personal when `include_personal`), Personal alone (None), a notebook or a list
    of them (each must be granted: NotFound otherwise). Without a query, returns the
    compact profile: pinned and important preferences, facts and decisions, plus the
    handoff of `task_id` when given. `tag`: only notes with that tag (declared ground
    truth included). Time words ("last week") window the notes' dates (`tw.time_window`).
    Stages (`grove_recall_arm_duration_seconds`; `meta.timings` with `timings`): embed,
    terms, search (both arms and their fusion: one statement), declared, items, profile,
    window, total. `expand="links"`: the notes linked to and from the notes found join
    them, each marked as reached through a link (`recall_links`). `as_of`: over the
    notes as they were then (`as_of_reads.recall_at`; its query's words are all read as
    words, and it follows no links)."""
    limit, max_chars = clean_budget(limit, max_chars)
    if expand is not None and expand not in recall_links.EXPAND:
        raise Invalid('expand is "links".', code="invalid_expand")
    if query is not None:
        query = clean_text(query, what="query", max_chars=RECALL_QUERY_MAX_CHARS,
                           code="invalid_query", too_long_code="query_too_long") or None
    task_id = clean_task_id(task_id)
    tag = clean_tag(tag) if tag is not None else None
    if not 0 < max_distance <= 2:
        raise Invalid("maxDistance must be in (0, 2].", code="invalid_max_distance")

    # The query's vector is made before the transaction opens (STYLE §4): with the
    # `openai` provider it is an HTTP call — for a caller who may read at all. The active
    # profile is global, not tenant data.
    actor.require(READ)
    at = clean_as_of(as_of, actor=actor, time_zone=time_zone)
    if at is not None and expand is not None:
        raise Invalid("expand reads links as they are now; it does not go with asOf.",
                      code="invalid_expand")
    window, query = (None, query) if at is not None else tw.time_window(
        actor=actor, query=query, time_zone=time_zone)
    embedder = get_embedder() if query else None
    profile = active_profile_name() if embedder is not None else None
    vector: list[float] | None = None
    if query and embedder is not None and profile is not None:
        with stage("embed"):
            vector = embedder.embed([query])[0].tolist()
    semantic = (None if vector is None or embedder is None or profile is None
                else (vector, int(embedder.dimension), profile, max_distance))
    with tenant(actor, local=SEMANTIC_SETTINGS if semantic is not None else ()):
        scope = Searched(resolve_scope(actor, place, include_personal=include_personal),
                         tag=tag, window=window)
        counting = get_embedder() is not None
        truth = scoped_truth(scope.scope)
        if tag is not None:  # the declared notes with the tag answer; the others are not asked
            truth = replace(truth, notes=[(note, version) for note, version in truth.notes
                                          if tag in note.tags])
        if at is not None:
            with stage("as_of"):
                return recall_at(actor=actor, at=at, scope=scope.scope, query=query, tag=tag,
                                 weights=term_weights(query) if query else None,
                                 semantic=semantic, limit=limit, max_chars=max_chars,
                                 truth=truth, profile=profile, alpha=FUSION_ALPHA)
        if query is None:
            with stage("profile"):
                pending = _pending(scope) if counting else 0
                return _profile(scope, task_id, limit, max_chars, pending, truth, profile)
        if window is not None and not query:  # only time words: the window's notes
            with stage("window"):
                pending = _pending(scope) if counting else 0
                return tw.window_list(scope.notes(), window, limit, max_chars, pending,
                                      truth, profile)

        with stage("terms"):
            weights = term_weights(query)
        head_size = limit * 3 + 10
        with stage("search"):
            gathered = gather(scope=scope, weights=weights, candidates=CANDIDATES,
                              rescore=RESCORE, cap=weights.read_cap(MATCH_BUDGET),
                              k1=BM25_K1, b=BM25_B, alpha=FUSION_ALPHA, head=head_size,
                              semantic=semantic, count_pending=counting)
        fused: dict[uuid.UUID, float] = {}
        matched: dict[uuid.UUID, list[str]] = {}
        distances: dict[uuid.UUID, float] = {}
        for found in gathered.candidates:
            arms = []
            if found.lexical_rank is not None:
                arms.append("lexical")
            if found.semantic_rank is not None:
                arms.append("semantic")
                assert found.distance is not None
                distances[found.id] = found.distance
            fused[found.id], matched[found.id] = found.fused, arms
        # Everything that matched: all lexical matches, plus semantic hits that did not
        # also match lexically (counted exactly, not just the ones in the top list).
        semantic_only = sum(1 for arms in matched.values() if arms == ["semantic"])
        available = gathered.lexical_total + semantic_only - gathered.semantic_also_lexical
        # Fused order, the window's notes first when it boosts (`gather`).
        ranked_ids = [found.id for found in gathered.candidates]
        coverage: Coverage | None = None
        query_arms = QueryArms(weights, vector, profile,
                               semantic[1] if semantic is not None else None,
                               max_distance)
        hits: PassageHits | None = None
        if truth.notes:
            with stage("declared"):
                hits = passage_hits(list(truth.ids), query_arms)
                declared = _declared_hits(truth, weights, hits)
            coverage = "covered" if declared else "not_covered"
            for note_id, (score, arms, distance) in declared.items():
                fused[note_id], matched[note_id] = score, [*arms, "declared"]
                if distance is not None:
                    distances[note_id] = distance
            others = [i for i in ranked_ids if i not in truth.ids]
            if truth.restricts:  # only declared notes answer for facts and the like
                kinds = {found.id: found.kind for found in gathered.candidates}
                others = [i for i in others if kinds.get(i) in UNRESTRICTED_KINDS]
                available = len(others)
            available += len(declared)
            ranked_ids = sorted(declared, key=lambda i: (-fused[i], str(i))) + others
        head = ranked_ids[:head_size]
        notes = {found.id: found.note for found in gathered.candidates
                 if found.note is not None}
        missing = [i for i in head if i not in notes]  # declared notes, found apart
        if missing:
            notes.update((n.id, n) for n in Note.objects.filter(id__in=missing))
        passages = {found.id: found.passage for found in gathered.candidates
                    if found.passage is not None}
        if missing:  # a declared document found apart answers with its best passage
            for note_id, best in best_passages(missing, query_arms, per_note=1,
                                               hits=hits).items():
                if best and best[0].of > 1 and note_id in notes:
                    passages[note_id] = best[0].ref(notes[note_id].version)
                    notes[note_id].content = best[0].text
        via: dict[uuid.UUID, uuid.UUID] = {}
        if expand == "links":
            with stage("links"):
                reached = recall_links.linked(scope.notes(), head[:limit], fused, set(head),
                                              query_arms, hits)
            if truth.restricts:  # a link reaches only what may answer here (`restrict`)
                reached = [r for r in reached if r.note.id in truth.ids
                           or r.note.kind in UNRESTRICTED_KINDS]
            for item in reached:
                note_id = item.note.id
                fused[note_id], matched[note_id], via[note_id] = item.score, ["link"], item.via
                notes[note_id] = item.note
                if item.passage is not None:
                    passages[note_id] = item.passage
            head = recall_links.interleave(head, reached, fused, set(truth.ids))
            available += len(reached)
        with stage("items"):
            items = recall_budget.within_budget(
                [(notes[i], fused[i], matched[i], distances.get(i)) for i in head if i in notes],
                limit, max_chars, truth=truth, profile=profile, passages=passages, via=via)
        # A lower bound when the arm read only some of a clause's matches: then there
        # may be more than this answer, whatever the count says.
        meta = RecallMeta.of(returned=len(items), available=available, limit=limit,
                             lower_bound=gathered.lexical_capped, max_chars=max_chars,
                             mode="hybrid" if semantic is not None else "lexical",
                             pending=gathered.pending, policy=truth.policy,
                             coverage=coverage,
                             available_at_least=True if gathered.lexical_capped else None,
                             time_window=tw.out(window))
        return RecallOut(data=items, meta=meta)


def _pending(scope: Searched) -> int:
    """In-scope notes whose current content has no vector yet."""
    return scope.notes().exclude(indexing=Indexing.READY).count()


def _profile(scope: Searched, task_id: str | None, limit: int, max_chars: int,
             pending: int, truth: Truth, profile: str | None) -> RecallOut:
    """Query-free recall: the handoff of `task_id` when one is given, then the scope's
    declared ground truth (in declaration order), then pinned notes, then preferences,
    facts and decisions taken in turn (each kind by importance, then recency), so a run
    of new decisions never pushes every preference out. Under `restrict`, the declared
    notes are the only facts and decisions."""
    candidates = scope.notes().filter(kind__in=[str(k) for k in PROFILE_KINDS])
    if truth.restricts:
        candidates = candidates.filter(kind__in=UNRESTRICTED_KINDS)
    candidates = candidates.exclude(id__in=truth.ids)
    per_kind = limit + 1
    ranked = (candidates.annotate(rank=Window(
        RowNumber(), partition_by=[F("kind")],
        order_by=[F("pinned").desc(), F("importance").desc(), F("updated_at").desc(),
                  F("id").asc()])).filter(rank__lte=per_kind))
    queues: dict[str, list[Note]] = {str(k): [] for k in PROFILE_KINDS}
    for note in sorted(ranked, key=lambda n: n.rank):
        queues[note.kind].append(note)
    handoff = list(scope.notes().filter(kind=Kind.HANDOFF, task_id=task_id)[:1]
                   ) if task_id else []
    ordered: list[Note] = [*handoff]
    ordered += [note for note, _ in truth.notes if note not in ordered]
    pinned = sorted((n for queue in queues.values() for n in queue if n.pinned),
                    key=lambda n: (-n.importance, -n.updated_at.timestamp(), str(n.id)))
    ordered += pinned
    rest = [[n for n in queue if not n.pinned] for queue in queues.values()]
    for round_ in range(per_kind):
        ordered += [queue[round_] for queue in rest if round_ < len(queue)]
    # A declared document answers with its opening passage (its digest's first), never
    # its whole text: an 80,000-character spec must not take the profile's budget.
    passages = {}
    documents = {n.id: n for n in ordered if len(n.content) > CHUNK_CHARS}
    for note_id, best in best_passages(list(documents), QueryArms(None), per_note=1).items():
        doc = documents[note_id]
        if best and best[0].of > 1:
            passages[note_id] = best[0].ref(doc.version)
            doc.content = best[0].text
    items = recall_budget.within_budget([(n, 1.0 / (RRF_K + rank + 1),
                                          ["profile", "declared"] if n.id in truth.ids
                                          else ["profile"], None)
                                         for rank, n in enumerate(ordered)], limit, max_chars,
                                        truth=truth, profile=profile, passages=passages)
    available = candidates.count() + len(truth.notes) + len(handoff)
    meta = RecallMeta.of(returned=len(items), available=available, limit=limit,
                         max_chars=max_chars, mode="profile", pending=pending,
                         policy=truth.policy,
                         no_handoff=task_id if task_id and not handoff else None)
    return RecallOut(data=items, meta=meta)


def _declared_hits(truth: Truth, weights: Weights, hits: PassageHits
                   ) -> dict[uuid.UUID, tuple[float, list[str], float | None]]:
    """The declared notes that answer the query, scored as recall scores its arms: a
    declared note whose passages hold the query's distinctive terms, or one of whose
    passages lies within `max_distance` of the query's vector — from `hits`, looked up
    among the declared notes themselves (a few), not among the arms' top candidates, so
    a declared note is never missed for ranking 51st."""
    held: dict[uuid.UUID, set[str]] = {}
    for _, note_id, terms in hits.lexical:
        held.setdefault(note_id, set()).update(terms)
    lexical = [(note_id, sum(weights.terms[t] for t in found))
               for note_id, found in held.items() if weights.selects(found)]
    nearest: dict[uuid.UUID, float] = {}
    for _, note_id, away in hits.semantic:
        nearest.setdefault(note_id, away)  # each note's nearest passage
    scored: dict[uuid.UUID, tuple[float, list[str], float | None]] = {}
    ranked: list[tuple[uuid.UUID, float]]
    for arm, ranked in (("lexical", sorted(lexical, key=lambda h: (-h[1], str(h[0])))),
                        ("semantic", list(nearest.items()))):
        for rank, (note_id, value) in enumerate(ranked):
            score, arms, distance = scored.get(note_id, (0.0, [], None))
            scored[note_id] = (score + 1.0 / (RRF_K + rank + 1), [*arms, arm],
                               value if arm == "semantic" else distance)
    return scored


def term_counts(lexemes: Sequence[str]) -> dict[str, int]:
    """Active notes containing each lexeme ('' = all active notes) for the account of the
    caller's tenant transaction. Lexemes no note contains are absent. One statement, so
    a compaction committing meanwhile is seen wholly or not at all."""
    if not lexemes:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme, sum(ndoc) FROM ("
            " SELECT lexeme, ndoc FROM notebooks_termstat WHERE lexeme = ANY(%s)"
            " UNION ALL"
            " SELECT lexeme, ndoc FROM notebooks_termdelta WHERE lexeme = ANY(%s)"
            ") counts GROUP BY lexeme",
            [list(lexemes), list(lexemes)],
        )
        return {lexeme: int(ndoc) for lexeme, ndoc in cursor.fetchall() if ndoc}
