"""Lists and recall as of an instant (`notebooks.selectors.as_of`): the same answers
`note_search` and `recall` give, over the notes as their revisions then left them.

* **list** (`note_page_at`): the filters of a list (place, kinds, tags, agent, pinning,
  lifetime, status, keywords) applied to each note's revision at the instant, newest
  first by when that revision was made (or oldest first, or by creation), paged by a
  signed cursor that keeps the instant of the first page.
* **recall** (`recall_at`): two arms fused as recall fuses them (`FUSION_ALPHA`). The
  lexical arm reads the revision's own text: the query's informative lexemes (idf from
  the account's term statistics, as recall weighs them) found in it, scored by their
  idf sum. The semantic arm compares the query's vector with the note's passage
  vectors, which are of its current text: a note's subject rarely changes between
  revisions while its facts do, so the vectors find the note and the revision says what
  it said then — a note whose words changed completely since is found by its words then
  through the lexical arm only. What an item returns is the revision's text (a
  document's passage of it: the one holding most of the query's lexemes, cut as its
  passages are cut), cited by the revision's versioned id. Without a query: the profile
  as of then (pinned notes, then preferences, facts and decisions by importance).

Both read every note's revision at the instant in scope (one statement each), which
costs in proportion to the account's notes: an as-of read is a question about the past,
not the path every prompt takes (docs/benchmarks.md, "As-of reads").
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connection
from django.db.models import F, Min, Q, QuerySet
from django.db.models.functions import Cast
from pgvector.django import CosineDistance, VectorField

from grove.kernel.paging import Cursor, cursor_after, keyset_page
from grove.kernel.schemas import ListMeta
from notebooks import rules
from notebooks.models import SEARCH_CONFIG, Kind, Note, Revision, Status
from notebooks.rules import UNRESTRICTED_KINDS
from notebooks.schemas.notes import NoteOut, RecallMeta, RecallOut, SearchItem, SearchPage
from notebooks.selectors import recall_budget
from notebooks.selectors.access import Scope
from notebooks.selectors.as_of import AsOf, live_then, note_then, revisions_at
from notebooks.selectors.truth import Truth, scoped_truth
from notebooks.selectors.truth_marks import UNMARKED, active_profile, truth_marks
from passages.models import PassageVector
from passages.rules import pieces
from passages.schemas import PassageRef, passage_id

CANDIDATES = 50  # per arm, as recall
_ORDERS = {"updated_desc": ("-created_at", "-id"), "updated_asc": ("created_at", "id"),
           "created_desc": ("-note_created", "-id")}
PROFILE_KINDS = (Kind.PREFERENCE, Kind.FACT, Kind.DECISION)


def with_status(actor: Any, at: AsOf, place: Q, status: str) -> QuerySet[Revision]:
    """The revisions at the instant in `place` whose note had `status` then: `expired`
    is a note whose expiry had passed by then, whether or not the job had run."""
    if status != "expired":
        return revisions_at(actor, at, place, status=status)
    return (revisions_at(actor, at, place, status=Status.EXPIRED)
            | revisions_at(actor, at, place, status=Status.ACTIVE).exclude(live_then(at)))


def note_page_at(*, actor: Any, at: AsOf, scope: Scope, opened: Cursor, salt: str,
                 query: str | None, kinds: list[str] | None, source_agent: str | None,
                 tag: str | None, pinned: bool | None, updated_after: Any,
                 lifetime: str | None, status: str, sort: str, limit: int,
                 marks: bool) -> SearchPage:
    """One page of the notes as they were at the instant (caller holds the tenant
    transaction; the arguments are already checked, as `note_search` checks them). A
    query matches by all its words (stemmed) in the revision's text; the page is then
    newest first (`sort` relevance is read as updated_desc, and the page says so)."""
    rows = with_status(actor, at, scope.place_q(), status)
    if kinds:
        rows = rows.filter(kind__in=kinds)
    if source_agent is not None:
        rows = rows.filter(source_agent=source_agent)
    if tag is not None:
        rows = rows.filter(tags__contains=[tag])
    if pinned is not None:
        rows = rows.filter(pinned=pinned)
    if updated_after is not None:
        rows = rows.filter(created_at__gt=updated_after)
    if lifetime is not None:
        rows = rows.filter(retention_days__isnull=lifetime == "permanent")
    if query:
        rows = rows.annotate(words=SearchVector("content", config=SEARCH_CONFIG)).filter(
            words=SearchQuery(query, config=SEARCH_CONFIG, search_type="plain"))
    order = "updated_desc" if sort == "relevance" else sort
    rows = rows.annotate(note_created=F("note__created_at"))
    available = rows.count()
    page = keyset_page(rows, order=_ORDERS[order], after=opened.key, limit=limit)
    notes = [note_then(revision) for revision in page.rows]
    marked = truth_marks(notes, scoped_truth(scope), profile=active_profile()) if marks else {}
    items = []
    for note in notes:
        said = marked.get(note.id, UNMARKED)
        items.append(SearchItem(note=NoteOut.of(note), authority=said.authority,
                                known_false=list(said.known_false)))
    next_cursor = cursor_after(opened, page, ceiling=at.instant, salt=salt)
    return SearchPage(data=items, sort=order, meta=ListMeta.of(
        returned=len(items), available=available, limit=limit, next_cursor=next_cursor,
        as_of=at.out()))


# -- recall ------------------------------------------------------------------------------------


def recall_at(*, actor: Any, at: AsOf, scope: Scope, query: str | None, tag: str | None,
              weights: Any, semantic: tuple[list[float], int, str, float] | None,
              limit: int, max_chars: int, truth: Truth, profile: str | None,
              alpha: float) -> RecallOut:
    """Recall over the notes as they were at the instant (caller holds the tenant
    transaction; `weights` and `semantic` are the query's, made as recall makes them)."""
    rows = revisions_at(actor, at, scope.place_q())
    if tag is not None:
        rows = rows.filter(tags__contains=[tag])
    if query is None:
        return _profile_at(at, rows, limit, max_chars, truth, profile)
    lexical = _lexical_at(rows, weights)
    nearest = _semantic_at(rows, semantic)
    fused: dict[uuid.UUID, float] = {}
    matched: dict[uuid.UUID, list[str]] = {}
    for arm, scores, weight in (("lexical", lexical, alpha), ("semantic", nearest, 1 - alpha)):
        if not scores:
            continue
        values = [value if arm == "lexical" else 1 - value for value in scores.values()]
        low, high = min(values), max(values)
        for note_id, value in scores.items():
            score = value if arm == "lexical" else 1 - value
            scaled = (score - low) / (high - low) if high > low else 1.0
            fused[note_id] = fused.get(note_id, 0.0) + weight * scaled
            matched.setdefault(note_id, []).append(arm)
    ranked = sorted(fused, key=lambda i: (-fused[i], str(i)))[:limit * 3 + 10]
    revisions = {r.note_id: r for r in rows.filter(note_id__in=ranked)}
    notes = {i: note_then(revisions[i]) for i in ranked if i in revisions}
    passages = _passages_then(notes, weights)
    items = recall_budget.within_budget(
        [(notes[i], fused[i], matched[i], nearest.get(i)) for i in ranked if i in notes],
        limit, max_chars, truth=truth, profile=profile, passages=passages)
    available = len(set(lexical) | set(nearest))
    return RecallOut(data=items, meta=RecallMeta.of(
        returned=len(items), available=available, limit=limit, max_chars=max_chars,
        mode="hybrid" if semantic is not None else "lexical", pending=0,
        policy=truth.policy, as_of=at.out()))


def _lexical_at(rows: QuerySet[Revision], weights: Any) -> dict[uuid.UUID, float]:
    """The notes whose text then holds an informative query lexeme, by the lexemes' idf
    sum — the best CANDIDATES."""
    if not weights.terms:
        return {}
    sql, params = rows.values("note_id", "content").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT r.note_id, s.score FROM ({sql}) r"  # noqa: S608 - compiled by the ORM
            " CROSS JOIN LATERAL (SELECT tsvector_to_array("
            "to_tsvector(%s::regconfig, r.content)) AS lexemes) v"
            " CROSS JOIN LATERAL (SELECT sum(t.weight) AS score"
            " FROM unnest(%s::text[], %s::float8[]) AS t(lexeme, weight)"
            " WHERE t.lexeme = ANY(v.lexemes)) s"
            " WHERE s.score > 0 ORDER BY s.score DESC, r.note_id LIMIT %s",
            [*params, SEARCH_CONFIG, list(weights.terms), list(weights.terms.values()),
             CANDIDATES])
        return {note_id: float(score) for note_id, score in cursor.fetchall()}


def _semantic_at(rows: QuerySet[Revision], semantic: tuple[list[float], int, str, float] | None
                 ) -> dict[uuid.UUID, float]:
    """The notes at the instant whose nearest passage vector lies within the distance,
    nearest first: note id → cosine distance."""
    if semantic is None:
        return {}
    vector, dim, profile, max_distance = semantic
    distance = CosineDistance(Cast("embedding", VectorField(dimensions=dim)), vector)
    nearest = (PassageVector.objects
               .filter(note_id__in=rows.values("note_id"), profile=profile, dimension=dim)
               .values("note_id").annotate(distance=Min(distance))
               .filter(distance__lte=max_distance).order_by("distance", "note_id")
               [:CANDIDATES])
    return {row["note_id"]: float(row["distance"]) for row in nearest}


def _passages_then(notes: dict[uuid.UUID, Note], weights: Any) -> dict[uuid.UUID, PassageRef]:
    """For each document at the instant: the passage of its text then holding most of
    the query's lexemes (the first on a tie), made the note's content."""
    found: dict[uuid.UUID, PassageRef] = {}
    for note_id, note in notes.items():
        cut = pieces(note.kind, note.content)
        if len(cut) < 2:
            continue
        best = _best_piece([piece.text for piece in cut], list(weights.terms))
        piece = cut[best]
        found[note_id] = PassageRef(id=passage_id(note_id, note.version, best + 1),
                                    position=best + 1, of=len(cut),
                                    headings=list(piece.headings))
        note.content = piece.text
    return found


def _best_piece(texts: list[str], lexemes: list[str]) -> int:
    if not lexemes:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.i - 1 FROM unnest(%s::text[]) WITH ORDINALITY AS p(text, i)"
            " ORDER BY (SELECT count(*) FROM unnest(tsvector_to_array("
            "to_tsvector(%s::regconfig, p.text))) AS l(lexeme) WHERE l.lexeme = ANY(%s))"
            " DESC, p.i LIMIT 1", [texts, SEARCH_CONFIG, lexemes])
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def _profile_at(at: AsOf, rows: QuerySet[Revision], limit: int, max_chars: int,
                truth: Truth, profile: str | None) -> RecallOut:
    """Query-free recall as of then: pinned notes first, then preferences, facts and
    decisions by importance and recency."""
    kept = rows.filter(Q(pinned=True) | Q(kind__in=[str(k) for k in PROFILE_KINDS]))
    ranked = list(kept.order_by("-pinned", "-importance", "-created_at", "id")[:limit * 2])
    notes = [note_then(revision) for revision in ranked]
    items = recall_budget.within_budget([(note, 1.0 / (rank + 1), ["profile"], None)
                                         for rank, note in enumerate(notes)],
                                        limit, max_chars, truth=truth, profile=profile)
    return RecallOut(data=items, meta=RecallMeta.of(
        returned=len(items), available=kept.count(), limit=limit, max_chars=max_chars,
        mode="profile", pending=0, policy=truth.policy, as_of=at.out()))


# -- the brief ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BriefRows:
    """What the brief ranks, as of the instant (`brief._gather` reads it in place of
    the live notes): the same sections, by the same orders, from the revisions then."""

    pinned: list[Note]
    handoffs: list[Note]
    facts: list[Note]
    available: int
    changed: list[Note]  # each with `last_reason` and `last_by`: that revision's
    changed_available: int
    related: dict[uuid.UUID, Note]


def brief_rows_at(actor: Any, at: AsOf, scope: Scope, truth: Truth, since: datetime,
                  related_ids: list[uuid.UUID]) -> BriefRows:
    """The brief's candidates as of the instant (caller holds the tenant transaction):
    declared notes in their own section, as for a live brief; under `restrict` no other
    fact, decision or solution."""
    rows = revisions_at(actor, at, scope.place_q()).exclude(note_id__in=truth.ids)
    if truth.restricts:
        rows = rows.filter(kind__in=UNRESTRICTED_KINDS)
    newest = ("-importance", "-created_at", "id")
    pinned = rows.filter(pinned=True).order_by(*newest)[:rules.BRIEF_PINNED_MAX]
    handoffs = rows.filter(kind=Kind.HANDOFF, pinned=False).order_by(
        "-created_at", "id")[:rules.BRIEF_HANDOFFS_MAX]
    queues = [list(rows.filter(pinned=False, kind=kind).order_by(*newest)
                   [:rules.BRIEF_FACTS_PER_KIND]) for kind in rules.BRIEF_KINDS]
    facts = [queue[turn] for turn in range(rules.BRIEF_FACTS_PER_KIND)
             for queue in queues if turn < len(queue)]
    changed_rows = rows.filter(created_at__gte=since).order_by("-created_at", "id")
    changed = []
    for revision in changed_rows[:rules.BRIEF_RECENT_MAX]:
        note: Any = note_then(revision)
        note.last_reason, note.last_by = revision.reason, revision.connection_id
        changed.append(note)
    return BriefRows(
        pinned=[note_then(r) for r in pinned], handoffs=[note_then(r) for r in handoffs],
        facts=[note_then(r) for r in facts],
        available=rows.filter(Q(pinned=True) | Q(kind__in=[Kind.HANDOFF, *rules.BRIEF_KINDS])
                              ).count(),
        changed=changed, changed_available=(len(changed) if len(changed) < rules.BRIEF_RECENT_MAX
                                            else changed_rows.count()),
        related={r.note_id: note_then(r) for r in rows.filter(note_id__in=related_ids)})
