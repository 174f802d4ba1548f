"""The `ask.generate` job: a conversation turn's answer (SPEC §8).

Runs on the job framework (`grove.kernel.jobs`) under a 5-minute attempt lease:

* **load** (tenant transaction): the pending turn, who asked (the owner, or a connection
  that must still be active — its grant as it is now), the conversation's scope and,
  unless the turn is strict (`only`), the latest 8 completed turns as history.
* **execute** (no transaction): evidence, then the model. With a source selection the
  selected notes come first and selected notebooks are read whole when small, or
  searched in scope for the question when large (at most 12 notes supplied, coverage
  recorded); with `only: true` that is all the model sees — no other notes, no history.
  Otherwise a follow-up is first resolved against the history into a standalone
  question, and evidence is retrieved afresh for it.
* **complete** (tenant transaction, turn locked): final checks before anything is
  stored — the turn is still pending, the account active (the framework), the caller
  still allowed, the provider settings unchanged since the turn was submitted, and every
  source still visible — then the result, or a failure code the UI shows with Retry.

A worker that dies mid-call leaves the job leased; past the lease `recover` re-queues
it and the turn is generated again (the turn stays `pending` meanwhile). Any error an
attempt raises instead — in any of the three steps — fails the turn at once
(`generation_failed`, with the error in its message), not after the lease.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from django.utils import timezone

from ask import providers
from ask.models import Conversation, Proposal, Turn
from ask.rules import (
    EVIDENCE_LIMIT,
    GENERATE,
    HISTORY_TURNS,
    PROPOSAL_SUMMARY_MAX_CHARS,
    scope_of,
)
from ask.schemas import (
    Coverage,
    DocumentCoverage,
    NotebookCoverage,
    Source,
    SourceOut,
    TidyCoverage,
    TurnResult,
)
from ask.selectors import known_false_in, retrieve
from ask.selectors.proposals import Dropped, Planned, places_for, plan, shown_of
from ask.services import answered, evidence_of
from grove.interfaces.rendering import note_title
from grove.kernel.actor import Actor
from grove.kernel.errors import GroveError
from grove.kernel.jobs import Handler
from grove.kernel.tenancy import tenant
from grove.kernel.validation import storable
from grove.models import Connection, Job
from notebooks.models import NegativeClaim, Note
from notebooks.rules import RECALL_MAX_MAX_CHARS
from notebooks.schemas.notes import NoteOut
from notebooks.selectors import recall
from notebooks.selectors.access import (
    live_filter,
    notebooks_visible_to,
    notes_live,
    notes_visible_to,
)
from notebooks.selectors.duplicates import duplicate_groups
from notebooks.selectors.passage_query import passages_for
from notebooks.selectors.passage_rank import RankedPassage

LEASE = timedelta(minutes=5)
# Model calls of one attempt must end inside its lease (with room to store the answer).
CALL_BUDGET_SECONDS = LEASE.total_seconds() - 30
SUPPLIED_MAX = 12  # notes supplied to the model from a source selection
NOTE_MAX_CHARS = 4000  # of one note's content shown to the model
DOCUMENT_PASSAGES_MAX = 4  # a picked long note's passages shown, within NOTE_MAX_CHARS


class Failed(Exception):
    """A turn that cannot be answered now, with a code the client can act on."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class Input:
    turn_id: uuid.UUID
    question: str
    actor: Actor | None
    provider: str  # the fingerprint the turn was submitted under
    context: dict[str, Any] | None
    scope: Any
    include_personal: bool
    tidy: dict[str, Any] | None = None
    history: list[providers.Exchange] = field(default_factory=list)
    failure: Failed | None = None


@dataclass
class Output:
    result: TurnResult | None = None
    failure: Failed | None = None
    proposals: list[Planned] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)


def _actor_for(turn: Turn) -> Actor:
    """Who asked, with their grant as it is now."""
    if turn.connection_id is None:
        return Actor.for_session(turn.account_id)
    connection = Connection.objects.filter(id=turn.connection_id).first()
    if connection is None or connection.status != Connection.Status.ACTIVE:
        raise Failed("connection_inactive", "The connection that asked is no longer active.")
    return Actor.for_connection(connection)


def _history(turn: Turn) -> list[providers.Exchange]:
    earlier = (Turn.objects.filter(conversation_id=turn.conversation_id,
                                   status=Turn.Status.COMPLETED, position__lt=turn.position)
               .order_by("-position")[:HISTORY_TURNS])
    exchanges = []
    for done in reversed(list(earlier)):
        result = done.result or {}
        answer = " ".join(block.get("text", "") for block in result.get("blocks", []))
        exchanges.append(providers.Exchange(question=done.query,
                                            answer=answer or "(no answer)"))
    return exchanges


def load(jobs: Sequence[Job]) -> dict[uuid.UUID, Input]:
    inputs: dict[uuid.UUID, Input] = {}
    for job in jobs:
        turn = (Turn.objects.select_related("conversation")
                .filter(id=job.target_id, status=Turn.Status.PENDING).first())
        if turn is None:
            continue
        conversation: Conversation = turn.conversation
        strict = bool(turn.context and turn.context.get("only"))
        entry = Input(turn_id=turn.id, question=turn.query, actor=None, provider=turn.provider,
                      context=turn.context, scope=scope_of(conversation),
                      include_personal=conversation.include_personal, tidy=turn.tidy,
                      history=[] if strict or turn.tidy else _history(turn))
        try:
            entry.actor = _actor_for(turn)
        except Failed as failure:
            entry.failure = failure
        inputs[job.id] = entry
    return inputs


def _source(note: NoteOut, via: uuid.UUID | None = None) -> Source:
    return Source(cite_as=note.versioned_id, note=note, score=1.0, via=via)


def _passages_of(actor: Actor, question: str, notes: list[NoteOut]
                 ) -> tuple[dict[uuid.UUID, list[Source]], list[DocumentCoverage]]:
    """The picked notes too long to send whole, as their passages that best match the
    question (their first ones when none does), within NOTE_MAX_CHARS each — in the
    note's order, each cited as the passage it is — and what coverage says of them."""
    long = [n for n in notes if len(n.content) > NOTE_MAX_CHARS]
    if not long:
        return {}, []
    ranked = passages_for(actor=actor, note_ids=[n.id for n in long], query=question,
                          per_note=DOCUMENT_PASSAGES_MAX)
    sources: dict[uuid.UUID, list[Source]] = {}
    covered = []
    for note in long:
        kept: list[RankedPassage] = []
        spent = 0
        for passage in ranked.get(note.id, []):
            if kept and spent + len(passage.text) > NOTE_MAX_CHARS:
                break
            kept.append(passage)
            spent += len(passage.text)
        if not kept:
            continue
        sources[note.id] = [Source(cite_as=p.ref(note.version).id, score=p.score,
                                   note=note.model_copy(update={"content": p.text}))
                            for p in sorted(kept, key=lambda p: p.position)]
        covered.append(DocumentCoverage(
            id=note.id, title=note_title(note.content, 80, path=note.source_path),
            passages=kept[0].of, supplied=len(kept), matched=kept[0].score > 0))
    return sources, covered


def _selected(actor: Actor, question: str,
              context: dict[str, Any]) -> tuple[list[Source], Coverage]:
    """The selected notes, then the selected notebooks' live notes — all of them when
    they fit, else the best matches for the question within those notebooks. A picked
    long note is sent as its passages that match the question (`_passages_of`)."""
    with tenant(actor):
        notes = {n.id: n for n in notes_visible_to(actor).filter(id__in=context["notes"])}
        notebooks = list(notebooks_visible_to(actor).filter(id__in=context["notebooks"]))
        if len(notes) != len(context["notes"]) or len(notebooks) != len(context["notebooks"]):
            raise Failed("context_unavailable",
                         "A selected note or notebook is no longer reachable.")
        chosen = [NoteOut.of(notes[uuid.UUID(i)]) for i in context["notes"]]
        members = {nb.id: list(Note.objects.filter(live_filter(actor), notebook_id=nb.id)
                               .exclude(id__in=list(notes)).order_by("-updated_at", "id")
                               [:SUPPLIED_MAX + 1]) for nb in notebooks}
        # Picked notes are counted as picked, not again as their notebook's.
        counts = {nb.id: Note.objects.filter(live_filter(actor), notebook_id=nb.id)
                  .exclude(id__in=list(notes)).count() for nb in notebooks}
    room = max(0, SUPPLIED_MAX - len(chosen))
    searched = sum(len(m) for m in members.values()) > room
    if searched and notebooks and room:
        # Links are followed within the selected notebooks only: recall's scope is
        # them, so a strict selection never reaches past itself through a link.
        found = recall.recall(actor=actor, query=question,
                              place=[nb.id for nb in notebooks],
                              include_personal=False, limit=room,
                              max_chars=RECALL_MAX_MAX_CHARS, expand="links")
        extra = [hit.note for hit in found.data if hit.note.id not in notes]
        via = {hit.note.id: hit.via for hit in found.data if hit.via is not None}
    elif not searched:
        extra, via = [NoteOut.of(n) for nb in notebooks for n in members[nb.id]], {}
    else:
        extra, via = [], {}
    supplied = (chosen + extra)[:SUPPLIED_MAX]
    by_passage, documents = _passages_of(actor, question, chosen)
    per_notebook = {nb.id: sum(1 for n in extra if n.notebook_id == nb.id) for nb in notebooks}
    sources = [s for n in supplied for s in by_passage.get(n.id, [_source(n, via.get(n.id))])]
    coverage = Coverage(
        notes_selected=len(chosen), notes_supplied=len(chosen),
        notebooks=[NotebookCoverage(id=nb.id, name=nb.name, notes=counts[nb.id],
                                    supplied=per_notebook[nb.id], searched=searched)
                   for nb in notebooks],
        supplied=len(supplied),
        truncated=sum(1 for n in supplied
                      if len(n.content) > NOTE_MAX_CHARS and n.id not in by_passage),
        complete=False, documents=documents)
    complete = (coverage.notes_supplied == coverage.notes_selected and not coverage.truncated
                and all(nb.supplied == nb.notes for nb in coverage.notebooks)
                and all(d.supplied == d.passages for d in documents))
    return sources, coverage.model_copy(update={"complete": complete})


def _tidied(actor: Actor, tidy: dict[str, Any]
            ) -> tuple[list[Source], list[list[str]], TidyCoverage]:
    """A tidy-up's evidence: the place's groups of likely duplicates (the stored vectors
    and content keys), whole groups, tightest first, up to SUPPLIED_MAX notes — as
    sources, and the groups by typed id."""
    place = tidy["notebookId"]
    found = duplicate_groups(actor=actor, notebook_id=place)
    chosen: list[list[uuid.UUID]] = []
    for group in found.groups:
        members = [m.id for m in group.notes]
        if sum(map(len, chosen)) + len(members) <= SUPPLIED_MAX:
            chosen.append(members)
    with tenant(actor):
        live = {n.id: n for n in notes_live(actor).filter(id__in=[i for g in chosen for i in g])}
    notes = [[NoteOut.of(live[i]) for i in g if i in live] for g in chosen]
    notes = [g for g in notes if len(g) > 1]
    coverage = TidyCoverage(notebook_id=place, scanned=found.scanned, truncated=found.truncated,
                            unindexed=found.unindexed, groups=len(found.groups),
                            groups_shown=len(notes), notes_shown=sum(map(len, notes)))
    return ([_source(n) for g in notes for n in g],
            [[n.versioned_id for n in g] for g in notes], coverage)


def _label(note: NoteOut) -> str:
    return note_title(note.content, 80, path=note.source_path)


def _stored(source: Source, sources: list[Source]) -> SourceOut:
    """A source as the turn keeps it; one reached through a link names the note it was
    reached from (shown as "reached through a link from …")."""
    note = source.note
    origin = next((s.note for s in sources if s.note.id == source.via), None)
    return SourceOut(cite_as=source.cite_as, note_id=note.id, version=note.version,
                     kind=note.kind, notebook_id=note.notebook_id, label=_label(note),
                     via=source.via, via_label=_label(origin) if origin else None)


def _generate(entry: Input) -> Output:
    if entry.failure is not None:
        return Output(failure=entry.failure)
    actor = entry.actor
    assert actor is not None
    if entry.provider != providers.fingerprint():
        return Output(failure=Failed(
            "provider_changed", "The answer provider's settings changed since this question "
                                "was asked; retry it."))
    deadline = time.monotonic() + CALL_BUDGET_SECONDS
    try:
        sources: list[Source] = []
        claims: list[NegativeClaim] = []
        uncovered = False
        coverage = None
        resolved = None
        groups: list[list[str]] | None = None
        tidied = None
        if entry.tidy:
            sources, groups, tidied = _tidied(actor, entry.tidy)
        elif entry.context:
            sources, coverage = _selected(actor, entry.question, entry.context)
        if not entry.tidy and not (entry.context and entry.context.get("only")):
            question = entry.question
            if entry.history and providers.configured():
                resolved = providers.standalone_question(entry.question, entry.history,
                                                         deadline=deadline)
                question = resolved
            found = retrieve(actor=actor, question=question,
                             notebook_id=entry.scope, include_personal=entry.include_personal,
                             limit=EVIDENCE_LIMIT)
            seen = {s.cite_as for s in sources}
            sources = (sources + [s for s in found.sources
                                  if s.cite_as not in seen])[:SUPPLIED_MAX]
            claims, uncovered = found.known_false, found.uncovered and not entry.context
        else:  # no recall — the scope's known falsehoods hold all the same
            claims = known_false_in(actor=actor, notebook_id=entry.scope,
                                    include_personal=entry.include_personal)
        stored = [_stored(s, sources) for s in sources]
        if uncovered:
            return Output(result=TurnResult(status="not_covered", blocks=[], sources=stored,
                                            resolved_question=resolved))
        if not sources:
            return Output(result=TurnResult(status="no_evidence", blocks=[], sources=[],
                                            context_coverage=coverage,
                                            resolved_question=resolved,
                                            tidy_coverage=tidied))
        if not providers.configured():
            return Output(result=TurnResult(status="disabled", blocks=[], sources=stored,
                                            context_coverage=coverage,
                                            resolved_question=resolved,
                                            tidy_coverage=tidied))
        evidence = [replace(e, content=e.content[:NOTE_MAX_CHARS]) for e in evidence_of(sources)]
        places = _places(actor, entry, sources)
        draft = providers.generate(entry.question, evidence, history=entry.history,
                                   deadline=deadline, places=places, groups=groups,
                                   known_false=[c.claim for c in claims])
        status, blocks = answered(draft, sources, claims)
        planned, dropped = plan(actor, draft.proposals, shown_of(
            actor, [s.note for s in sources], evidence, places, groups))
        return Output(result=TurnResult(status=status, blocks=blocks,  # type: ignore[arg-type]
                                        sources=stored, context_coverage=coverage,
                                        resolved_question=resolved,
                                        proposals_dropped=len(dropped),
                                        tidy_coverage=tidied),
                      proposals=planned, dropped=dropped)
    except providers.ProviderUnavailable as exc:
        return Output(failure=Failed("provider_unavailable", str(exc)))
    except Failed as failure:
        return Output(failure=failure)
    except GroveError as exc:  # e.g. the conversation's notebook is gone
        return Output(failure=Failed(exc.code, exc.message))


def _places(actor: Actor, entry: Input, sources: list[Source]) -> list[providers.Place]:
    """The notebooks the model may name in proposals, within the conversation's scope:
    with `only`, the selected ones and those of the notes it was shown; in a tidy-up,
    none (merges and edits name no notebook); otherwise every live notebook in scope."""
    context = entry.context
    if entry.tidy:
        return []
    if context and context.get("only"):
        only = {uuid.UUID(i) for i in context["notebooks"]}
        only |= {s.note.notebook_id for s in sources if s.note.notebook_id}
        return places_for(actor, entry.scope, only=only)
    return places_for(actor, entry.scope)


def _store_proposals(turn: Turn, output: Output) -> None:
    """The answer's proposals beside it: the checked ones to show, the dropped ones
    (with why) kept and never shown."""
    position = 0
    for planned in output.proposals:
        position += 1
        Proposal.objects.create(
            account_id=turn.account_id, turn=turn, position=position,
            kind=planned.change.kind, summary=planned.change.summary,
            change=planned.instruction, preview=planned.change.to_json(),
            fingerprint=planned.fingerprint)
    for dropped in output.dropped:
        position += 1
        Proposal.objects.create(
            account_id=turn.account_id, turn=turn, position=position,
            kind=dropped.kind if dropped.kind in Proposal.Kind.values else "",
            summary=storable(dropped.summary)[:PROPOSAL_SUMMARY_MAX_CHARS],
            state=Proposal.State.DROPPED, drop_reason=dropped.reason)


def execute(inputs: list[Input]) -> list[Output]:
    return [_generate(entry) for entry in inputs]


def _final_check(turn: Turn, result: TurnResult) -> None:
    """Before storing: the caller is still allowed, the provider unchanged and every
    source still visible to the caller."""
    actor = _actor_for(turn)
    if turn.provider != providers.fingerprint():
        raise Failed("provider_changed", "The answer provider's settings changed while "
                                         "the answer was made; retry it.")
    ids = {s.note_id for s in result.sources}
    if notes_visible_to(actor).filter(id__in=ids).count() != len(ids):
        raise Failed("sources_changed", "A note the answer used was deleted or is no longer "
                                        "reachable; retry to answer from what is there now.")


def complete(jobs: list[Job], inputs: dict[uuid.UUID, Input],
             outputs: dict[uuid.UUID, Output]) -> set[uuid.UUID]:
    stored: set[uuid.UUID] = set()
    now = timezone.now()
    for job in jobs:
        # The conversation first, then the turn: the order the services lock them in
        # (`turn_retry`, `turn_submit`). Locking the turn first and the conversation
        # after (its `updated_at`, below) deadlocked with a retry of the same turn.
        conversation = Conversation.objects.select_for_update(of=("self",)).filter(
            turns__id=job.target_id).values_list("id", flat=True).first()
        if conversation is None:
            continue
        turn = Turn.objects.select_for_update().filter(
            id=job.target_id, conversation_id=conversation,
            status=Turn.Status.PENDING).first()
        if turn is None:
            continue
        output = outputs[job.id]
        failure = output.failure
        if failure is None:
            assert output.result is not None
            try:
                _final_check(turn, output.result)
            except Failed as exc:
                failure = exc
        if failure is None:
            assert output.result is not None
            turn.status, turn.result = Turn.Status.COMPLETED, output.result.to_json()
            _store_proposals(turn, output)
        else:
            turn.status = Turn.Status.FAILED
            turn.error_code, turn.error_message = failure.code, failure.message[:500]
        turn.completed_at = now
        turn.save(update_fields=["status", "result", "error_code", "error_message",
                                 "completed_at"])
        Conversation.objects.filter(id=turn.conversation_id).update(updated_at=now)
        stored.add(job.id)
    return stored


def on_failed(job: Job) -> None:
    """The job failed for good: the turn shows why (the job's error, e.g. what the
    database refused when the answer was stored), so it is not a mystery to retry."""
    cause = f" ({job.last_error})" if job.last_error else ""
    Turn.objects.filter(id=job.target_id, status=Turn.Status.PENDING).update(
        status=Turn.Status.FAILED, error_code="generation_failed",
        error_message=storable(f"The answer could not be made{cause}; retry it.")[:500],
        completed_at=timezone.now())


HANDLER = Handler(kind=GENERATE, load=load, execute=execute, complete=complete,
                  on_failed=on_failed, batch_size=1, max_attempts=3, lease=LEASE)
