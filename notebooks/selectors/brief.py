"""The brief (SPEC §10): an agent's first read.

One read per connection and scope, in this order: a startup line (who the account is,
what this connection may read and write, whether capture is paused), the visions
(account, then notebook), live handoffs, recent changes, the preferences, facts and
decisions that apply (pinned first), and notes related to the caller's `focus`.

**Budget.** Every note the brief may carry is ranked once: pinned notes (any kind —
pinning is a delivery guarantee, not a rank boost), then the floors' picks, handoffs
(newest first), recall's hits for `focus`, then preferences, facts and decisions taken
in turn by importance and recency. The fixed parts (header, startup line, visions,
section titles, counts) are counted first — the visions are never cut — recent changes
take up to their share, the index tier's share is set aside, and the full-text tier is
what is left. Walking the ranking: the first `BRIEF_PINNED_GUARANTEED` pinned notes are
always given in full (any writer may pin, so the guarantee is bounded); any other note is
given in full while it fits, then — once one does not
fit — it and everything after it fall to one-line index entries in the index tier's own
budget, and once that is spent the rest are dropped. Every note lands in exactly one of
returned / indexed / dropped, and `meta` names them. Tokens are counted with
`grove.embeddings.tokens` (named in `meta.tokenizer`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from grove.embeddings.tokens import TOKENIZER_NAME, count_each, count_tokens
from grove.interfaces.rendering import note_title
from grove.kernel.actor import READ, Actor
from grove.kernel.errors import Forbidden, Invalid, NotFound
from grove.kernel.tenancy import tenant
from grove.kernel.validation import clean_time_zone
from grove.models import Connection
from notebooks import rules
from notebooks.models import Kind, Note, Notebook, Revision, Vision
from notebooks.rules import (
    EVERYWHERE,
    UNRESTRICTED_KINDS,
    clean_budget_tokens,
    clean_floors,
    clean_focus,
    notebook_paths,
    parse_uuid,
    since_instant,
)
from notebooks.schemas.brief_markdown import (
    SECTION_TITLES,
    brief_markdown,
    change_line,
    footer,
    header_line,
    index_line,
    note_block,
    recent_more,
    recent_title,
    truth_block,
    vision_block,
)
from notebooks.schemas.briefs import (
    BYLINE_SYSTEM,
    BriefChange,
    BriefIndexEntry,
    BriefMeta,
    BriefNote,
    BriefOut,
    BriefRecentMeta,
    BriefVision,
    Section,
    WhoamiOut,
)
from notebooks.selectors.access import Scope, live_notebooks, resolve_scope
from notebooks.selectors.as_of import AsOf, clean_as_of
from notebooks.selectors.as_of_reads import brief_rows_at
from notebooks.selectors.brief_budget import (
    Candidate,
    Counted,
    allocate,
    fit_lines,
    ranked,
    share,
)
from notebooks.selectors.passage_query import arms_for, query_vector
from notebooks.selectors.passage_rank import DIGEST_OVER_CHARS, Digest, digests_of
from notebooks.selectors.recall import recall
from notebooks.selectors.recall_query import SEMANTIC_SETTINGS
from notebooks.selectors.truth import Truth, agent_truth, scoped_truth
from notebooks.selectors.truth_marks import UNMARKED, Marks, active_profile, truth_marks
from notebooks.selectors.vision import byline, connection_names
from notebooks.selectors.whoami import whoami_in

# -- gathering -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gathered:
    who: WhoamiOut
    visions: list[BriefVision]
    pinned: list[Candidate]
    handoffs: list[Candidate]
    facts: list[Candidate]  # in turn by kind: importance, then recency
    recent: list[BriefChange]
    recent_available: int
    available: int  # every note the brief could carry (pinned, handoffs, facts)
    names: dict[uuid.UUID, str]  # notebook paths
    truth: Truth
    marks: dict[uuid.UUID, Marks]  # what ground truth says of each candidate


def _visions(notebook: Notebook | None, zone: ZoneInfo,
             connections: dict[uuid.UUID, str]) -> list[BriefVision]:
    """The account's vision, then the notebook's (when the brief is for one); empty ones
    are left out."""
    condition = Q(notebook__isnull=True)
    if notebook is not None:
        condition |= Q(notebook_id=notebook.id)
    rows = {row.notebook_id: row for row in Vision.objects.filter(condition)}
    found = []
    for place in [None] + ([notebook.id] if notebook is not None else []):
        row = rows.get(place)
        if row is None or not row.content:
            continue
        found.append(BriefVision(
            scope="account" if place is None else "notebook",
            notebook=notebook.name if place is not None and notebook is not None else None,
            version=row.version, updated=row.updated_at.astimezone(zone).date(),
            by=byline(row.updated_by_id, connections), content=row.content))
    return found


# The facts' rank within a kind, as the indexes note_ranked and note_ranked_place hold it.
RANK_ORDER = ("-importance", "-updated_at", "id")


def _bound(notes: QuerySet[Note], truth: Truth) -> QuerySet[Note]:
    """The notes the brief ranks, as declared truth leaves them: the declared ones are in
    their own section, unranked; under `restrict` no other fact, decision or solution."""
    notes = notes.exclude(id__in=truth.ids)
    return notes.filter(kind__in=UNRESTRICTED_KINDS) if truth.restricts else notes


def _facts(scope: Scope, truth: Truth) -> list[Note]:
    """Unpinned preferences, facts and decisions in scope, taken in turn by kind (each
    kind by importance, then recency), at most BRIEF_FACTS_PER_KIND of each."""
    per_kind = rules.BRIEF_FACTS_PER_KIND
    # The best of each kind, walked in rank order on an index and stopped after
    # `per_kind` (one window over every note of the three kinds sorted them all: 85 ms
    # at 3,000 notes): everything granted walks `note_ranked`; a notebook (and Personal)
    # walks `note_ranked_place` once per place and the places are merged here — one
    # walk filtering a 5 % notebook out of an account-wide order read 40,000 rows.
    places = scope.places()
    queues: dict[str, list[Note]] = {}
    for kind in rules.BRIEF_KINDS:
        found = [note for place in places for note in _bound(place.notes(), truth).filter(
            pinned=False, kind=kind).order_by(*RANK_ORDER)[:per_kind]]
        queues[str(kind)] = sorted(found, key=lambda n: (-n.importance,
                                                         -n.updated_at.timestamp(),
                                                         str(n.id)))[:per_kind]
    ordered: list[Note] = []
    for round_ in range(per_kind):
        ordered += [queue[round_] for queue in queues.values() if round_ < len(queue)]
    return ordered


def _recent(scope: Scope, since: datetime) -> tuple[list[Any], int]:
    """Live notes in scope changed since `since`, newest first, each with its last
    revision's reason and who made it (`last_reason`, `last_by`), and how many changed."""
    last = Revision.objects.filter(note_id=OuterRef("pk")).order_by("-version")
    changed = scope.notes().filter(updated_at__gte=since)
    rows = list(changed.annotate(last_reason=Subquery(last.values("reason")[:1]),
                                 last_by=Subquery(last.values("connection_id")[:1]))
                .order_by("-updated_at", "id")[:rules.BRIEF_RECENT_MAX])
    return rows, len(rows) if len(rows) < rules.BRIEF_RECENT_MAX else changed.count()


def _change(note: Any, zone: ZoneInfo, connections: dict[uuid.UUID, str],
            marks: Marks) -> BriefChange:
    """One line of recent changes, with what ground truth says of the note."""
    by = (BYLINE_SYSTEM if note.last_reason == Revision.Reason.EXPIRE
          else byline(note.last_by, connections))
    return BriefChange(id=note.versioned_id, date=note.updated_at.astimezone(zone).date(),
                       change=note.last_reason or "update", kind=note.kind,
                       title=note_title(note.content, 60, path=note.source_path), by=by,
                       known_false=list(marks.known_false) or None)


def _gather(actor: Actor, notebook_id: Any, include_personal: bool, since: datetime,
            zone: ZoneInfo, related_ids: Sequence[uuid.UUID], at: AsOf | None = None
            ) -> tuple[Gathered, list[Candidate]]:
    """Everything the brief reads, in one tenant transaction; recall's hits for the
    focus (`related_ids`, best first) read again here, live and in scope — or, `at` an
    instant, the notes as they were then (the visions and declared truth are today's)."""
    with tenant(actor):
        actor.require(READ)
        scope = resolve_scope(actor, notebook_id, include_personal=include_personal)
        who = whoami_in(actor)
        connections = connection_names()
        names = notebook_paths(live_notebooks(actor))
        truth = scoped_truth(scope)
        if at is not None:
            then = brief_rows_at(actor, at, scope, truth, since, list(related_ids))
            pinned, handoffs, facts = then.pinned, then.handoffs, then.facts
            available, hits = then.available, then.related
            changed, recent_available = then.changed, then.changed_available
        else:
            live = _bound(scope.notes(), truth)
            pinned = list(live.filter(pinned=True).order_by(
                "-importance", "-updated_at", "id")[:rules.BRIEF_PINNED_MAX])
            handoffs = list(live.filter(kind=Kind.HANDOFF, pinned=False)
                            .order_by("-updated_at", "id")[:rules.BRIEF_HANDOFFS_MAX])
            facts = _facts(scope, truth)
            # One count, from the index alone (note_brief_counting holds kind and pin).
            available = live.filter(Q(pinned=True) | Q(kind__in=[Kind.HANDOFF,
                                                                 *rules.BRIEF_KINDS])).count()
            changed, recent_available = _recent(scope, since)
            hits = {n.id: n for n in live.filter(id__in=list(related_ids))}
        related = [Candidate(hits[i], "related") for i in related_ids if i in hits]
        candidates = {n.id: n for n in [*pinned, *handoffs, *facts, *hits.values()]}
        marks = truth_marks(list({**candidates, **{n.id: n for n in changed}}.values()),
                            truth, profile=active_profile())
        recent = [_change(n, zone, connections, marks[n.id]) for n in changed]
        return Gathered(
            who=who, visions=_visions(scope.notebook, zone, connections),
            pinned=[Candidate(n, _section(n), pinned=i < rules.BRIEF_PINNED_GUARANTEED)
                    for i, n in enumerate(pinned)],
            # A live handoff keeps at least its index line (`allocate`).
            handoffs=[Candidate(n, "handoffs", keep=True) for n in handoffs],
            facts=[Candidate(n, "facts") for n in facts],
            recent=recent, recent_available=recent_available, available=available,
            names=names, truth=truth, marks=marks), related


def _section(note: Note) -> Section:
    return "handoffs" if note.kind == Kind.HANDOFF else "facts"


# -- the brief ---------------------------------------------------------------------------------


def _brief_note(candidate: Candidate, zone: ZoneInfo, names: Mapping[uuid.UUID, str],
                marks: Marks, digest: Digest | None = None) -> BriefNote:
    note = candidate.note
    fields: dict[str, Any] = {
        "id": note.versioned_id, "kind": note.kind, "section": candidate.section,
        "content": note.content if digest is None else digest.text,
        "updated": note.updated_at.astimezone(zone).date()}
    if note.notebook_id is not None:
        fields["notebook"] = names.get(note.notebook_id, "(a notebook you cannot see)")
    if note.task_id:
        fields["task_id"] = note.task_id
    if note.pinned:
        fields["pinned"] = True
    if marks.authority:
        fields["authority"] = True
    if marks.known_false:
        fields["known_false"] = list(marks.known_false)
    return BriefNote(**fields)


def _index_entry(candidate: Candidate, zone: ZoneInfo, names: Mapping[uuid.UUID, str],
                 marks: Marks) -> BriefIndexEntry:
    note = candidate.note
    title = note_title(note.content, 80, path=note.source_path) or note.kind
    place = names.get(note.notebook_id, "a notebook") if note.notebook_id else "Personal"
    detail = f"{note.kind}, {place}, {note.updated_at.astimezone(zone):%Y-%m-%d}"
    if marks.authority:
        detail += ", declared ground truth"
    if marks.known_false:
        detail += "; known to be false: " + "; ".join(k.claim for k in marks.known_false)
    return BriefIndexEntry(id=note.versioned_id, section=candidate.section,
                           line=f"{title} — {detail}")


def brief_get(
    *,
    actor: Actor,
    notebook_id: Any = EVERYWHERE,
    include_personal: bool = True,
    focus: str | None = None,
    since: datetime | date | None = None,
    time_zone: str | None = "UTC",
    budget_tokens: int | None = None,
    floors: Mapping[str, int] | None = None,
    format: str = "markdown",
    truth: str = "manifest",
    as_of: str | None = None,
) -> BriefOut:
    """The brief for this caller: everything granted (`EVERYWHERE`), Personal (None) or
    a notebook (with Personal when `include_personal`). Read-only; one tenant
    transaction (recall for `focus` runs first, in its own, and its hits are read again
    in the brief's). `as_of`: the brief as it would have been then, from the notes'
    revisions (`as_of_reads.brief_rows_at`); read in `time_zone`."""
    actor.require(READ)
    zone = clean_time_zone(time_zone)
    at = clean_as_of(as_of, actor=actor, time_zone=zone.key)
    budget = clean_budget_tokens(budget_tokens)
    wanted_floors = clean_floors(floors)
    focus = clean_focus(focus)
    if format not in ("markdown", "json"):
        raise Invalid("format is markdown or json.", code="invalid_format")
    if truth not in ("manifest", "full"):
        raise Invalid("truth is manifest or full.", code="invalid_truth")
    now = at.instant if at is not None else timezone.now()
    since_at = since_instant(since, zone, now, rules.BRIEF_RECENT_DAYS)
    related_ids: list[uuid.UUID] = []
    focus_mode = None
    if focus is not None:
        hits = recall(actor=actor, query=focus, limit=rules.BRIEF_RELATED_MAX,
                      max_chars=rules.RECALL_MAX_MAX_CHARS, place=notebook_id,
                      include_personal=include_personal, as_of=as_of, time_zone=zone.key)
        related_ids, focus_mode = [hit.note.id for hit in hits.data], hits.meta.mode
    gathered, related = _gather(actor, notebook_id, include_personal, since_at, zone,
                                related_ids, at)
    order = ranked(pinned=gathered.pinned, handoffs=gathered.handoffs, related=related,
                   facts=gathered.facts, floors=wanted_floors)
    # Solutions reach a brief only through `focus`; the other kinds are counted already.
    available = gathered.available + sum(1 for c in related if c.note.kind == Kind.SOLUTION
                                         and not c.note.pinned)
    def marks(c: Candidate) -> Marks:
        return gathered.marks.get(c.note.id, UNMARKED)

    # A long document is given as its digest — the passages that matter for the focus,
    # else its opening — never its whole text (issue 37).
    digests = _digests(actor, [c.note for c in order]
                       + [note for note, _ in gathered.truth.notes], focus)
    notes = Counted(order, lambda c: _brief_note(c, zone, gathered.names, marks(c),
                                                 digests.get(c.note.id)),
                    note_block)
    entries = Counted(order, lambda c: _index_entry(c, zone, gathered.names, marks(c)),
                      index_line)

    today = now.astimezone(zone).date()
    since_day = _day_in(since_at, zone)
    header = header_line(gathered.who.connection_name or "the owner", today, zone.key)
    declared = agent_truth(gathered.truth, gathered.names, full=truth == "full",
                           digests=digests)
    # What the document holds whatever the notes: the titles of the sections that may
    # appear (a section without candidates never does), the longer wording of the recent
    # changes' count, and a footer as long as a real one can be.
    sections = {c.section for c in order} | ({"index"} if order else set())
    fixed_text = "\n\n".join([
        header, gathered.who.startup, *(vision_block(v) for v in gathered.visions),
        truth_block(declared), recent_title(since_day),
        max(recent_more(gathered.recent_available, shown=0),
            recent_more(gathered.recent_available, shown=1), key=count_tokens),
        *(title for name, title in SECTION_TITLES.items() if name in sections),
        footer(_meta_template(budget), wordy=True)])
    left = budget - count_tokens(fixed_text)
    shown, recent_tokens = fit_lines(
        count_each([change_line(c) for c in gathered.recent]),
        share(budget, left, rules.BRIEF_RECENT_SHARE, rules.BRIEF_RECENT_MIN_TOKENS))
    recent = gathered.recent[:shown]
    left -= recent_tokens
    index_budget = share(budget, left, rules.BRIEF_INDEX_SHARE, rules.BRIEF_INDEX_MIN_TOKENS)
    full_budget = max(0, left - index_budget)
    placed = allocate(order, notes, entries, full_budget=full_budget,
                      index_budget=index_budget)

    by_id = {c.note.id: i for i, c in enumerate(order)}
    full_notes = [notes.item(by_id[c.note.id]) for c in placed.full]
    index = [entries.item(by_id[c.note.id]) for c in placed.index]
    listed = len(placed.full) + len(placed.index) + len(placed.dropped)
    meta = BriefMeta(
        returned=len(placed.full), indexed=len(placed.index),
        dropped=max(available, listed) - len(placed.full) - len(placed.index),
        available=max(available, listed),
        truncated=len(placed.full) < max(available, listed),
        returned_items=[n.id for n in full_notes], indexed_items=[e.id for e in index],
        dropped_items=[c.note.versioned_id for c in placed.dropped],
        dropped_unlisted=max(0, available - listed),
        pinned=sum(1 for c in placed.full if c.pinned), budget_tokens=budget, tokens=0,
        full_text_tokens=placed.full_tokens, index_tokens=placed.index_tokens,
        index_budget=placed.index_budget, tokenizer=TOKENIZER_NAME, time_zone=zone.key,
        today=today, since=since_day,
        recent=BriefRecentMeta(returned=len(recent), available=gathered.recent_available,
                               tokens=recent_tokens),
        focus_mode=focus_mode, truth_state=declared.state, truth_policy=declared.policy,
        declared=len(declared.notes), as_of=at.out() if at is not None else None)
    document = dict(header=header, startup=gathered.who.startup, visions=gathered.visions,
                    truth=declared, recent=recent, recent_available=gathered.recent_available,
                    since=since_day, notes=full_notes, index=index)
    markdown, meta = _counted(document, meta)
    if format == "markdown":
        return BriefOut(format="markdown", markdown=markdown, meta=meta)
    return BriefOut(
        format="json", startup=gathered.who.startup, visions=gathered.visions, truth=declared,
        handoffs=[n for n in full_notes if n.section == "handoffs"], recent=recent,
        facts=[n for n in full_notes if n.section == "facts"],
        related=[n for n in full_notes if n.section == "related"], index=index, meta=meta)


def _digests(actor: Actor, notes: Sequence[Note], focus: str | None
             ) -> dict[uuid.UUID, Digest]:
    """The digests of the long documents among `notes` (`passage_rank.digests_of`),
    their passages picked for `focus`."""
    if not any(len(note.content) > DIGEST_OVER_CHARS for note in notes):
        return {}
    vector = query_vector(focus)
    with tenant(actor, local=SEMANTIC_SETTINGS if vector[0] is not None else ()):
        return digests_of(notes, arms_for(focus, vector),
                          matched_words=f"those that match the focus {focus!r}")


def _day_in(instant: datetime, zone: ZoneInfo) -> date:
    """The date of `instant` in `zone`; at the very edges of time (year 1 or 9999 moved
    by the zone's offset past what a date can hold), the first or last date there is."""
    try:
        return instant.astimezone(zone).date()
    except OverflowError:
        return date.min if instant.year == date.min.year else date.max


def _counted(document: dict[str, Any], meta: BriefMeta) -> tuple[str, BriefMeta]:
    """The markdown with its own token count in the footer: counted until the count the
    footer states is the count of the document that states it."""
    # The tokenizer splits on whitespace first, so the document's count is the body's
    # plus the footer's (the tests hold the whole document to it).
    body = count_tokens(brief_markdown(**document))
    near = body + count_tokens(footer(meta.model_copy(update={"tokens": body})))
    # The count's own digits take one or two tokens: the exact statement is one of a
    # few candidates near `near`, in one phrasing or the other.
    for wordy in (False, True):
        for tokens in range(near - 3, near + 5):
            stated = meta.model_copy(update={"tokens": tokens})
            if body + count_tokens(footer(stated, wordy=wordy)) == tokens:
                return brief_markdown(**document, meta_footer=footer(stated, wordy=wordy)), stated
    stated = meta.model_copy(update={"tokens": near})  # not reached: the nearest statement
    return brief_markdown(**document, meta_footer=footer(stated)), stated


def _meta_template(budget: int) -> BriefMeta:
    """A footer as long as a real one will be, for reserving its tokens."""
    many = 9999
    return BriefMeta(
        returned=many, indexed=many, dropped=many, available=many, truncated=True,
        returned_items=[], indexed_items=[], dropped_items=[], dropped_unlisted=0,
        pinned=0, budget_tokens=budget, tokens=budget, full_text_tokens=0, index_tokens=0,
        index_budget=0, tokenizer=TOKENIZER_NAME, time_zone="UTC",
        today=date(2000, 1, 1), since=date(2000, 1, 1),
        recent=BriefRecentMeta(returned=0, available=0, tokens=0))


def brief_for_connection(*, actor: Actor, connection_id: uuid.UUID | str,
                         **arguments: Any) -> BriefOut:
    """What a connection reads: its brief, computed with its own grant (the website's
    "What your agents read"; owner session only). A pending or revoked connection reads
    nothing, and says so."""
    actor.require_session()
    connection_uuid = parse_uuid(connection_id, what="connection id")
    with tenant(actor):
        row = Connection.objects.filter(id=connection_uuid).first()
    if row is None:
        raise NotFound("No such connection.", code="not_found")
    if row.status != Connection.Status.ACTIVE:
        raise Forbidden(f"{row.name} is {row.status}: it reads nothing until it is "
                        "approved." if row.status == Connection.Status.PENDING
                        else f"{row.name} is revoked: it reads nothing.",
                        code="connection_inactive")
    return brief_get(actor=Actor.for_connection(row), **arguments)
