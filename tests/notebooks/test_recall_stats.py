"""The lexical arm weighs query words by rarity from the account's term statistics: a
word in most notes carries no signal and does not turn every note into a match. The
statistics are kept by the writes themselves (triggers, migration 0011): after any mix
of writes they equal a fresh `ts_stat` recount exactly, and recall right after saving is
recall with fresh statistics."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from grove.kernel import jobs
from notebooks import services
from notebooks.models import Note
from notebooks.rules import LENGTH_LEXEME
from notebooks.selectors.recall import recall, term_counts, term_weights
from notebooks.services.indexing import EMBED
from notebooks.services.term_stats import term_stats_compact, term_stats_refresh
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


def kept_counts(actor) -> dict[str, int]:
    """Every lexeme's count as recall sees it: counters plus pending deltas."""
    with factories.tenant(actor), connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme, sum(ndoc) FROM (SELECT lexeme, ndoc FROM notebooks_termstat "
            "UNION ALL SELECT lexeme, ndoc FROM notebooks_termdelta) c "
            "GROUP BY lexeme HAVING sum(ndoc) <> 0")
        return {lexeme: int(n) for lexeme, n in cursor.fetchall()}


def recounted(actor) -> dict[str, int]:
    """The reference: PostgreSQL's own ts_stat over the account's active notes (row-level
    security limits its query to the account)."""
    with factories.tenant(actor), connection.cursor() as cursor:
        cursor.execute("SELECT word, ndoc FROM ts_stat("
                       "'SELECT search FROM notebooks_note WHERE status = ''active''')")
        counts = {word: int(n) for word, n in cursor.fetchall()}
        cursor.execute("SELECT count(*), coalesce(sum(length(search)), 0) "
                       "FROM notebooks_note WHERE status = 'active'")
        total, lengths = cursor.fetchone()
    if total:
        counts[""] = total
    if lengths:  # the notes' distinct lexemes in all: BM25's note length
        counts[LENGTH_LEXEME] = int(lengths)
    return counts


def delta_rows(actor) -> int:
    with factories.tenant(actor), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM notebooks_termdelta")
        return cursor.fetchone()[0]


def drain(actor) -> None:
    while jobs.run_batch(account_id=actor.account_id, kind=EMBED):
        pass


def test_common_words_are_dropped_and_rare_words_weigh_more():
    actor = factories.owner()
    for i in range(40):
        factories.note(actor, f"Project status report number {i}")
    budget = factories.note(actor, "Project budget approved for the quarter")
    drain(actor)
    # No refresh needed: the saves counted themselves.
    with factories.tenant(actor):
        weights = term_weights("project budget")
        assert set(weights.terms) == {"budget"}  # "project" is in every note
        only_common = term_weights("project status")
        assert term_counts(["project", "budget", ""]) == {"project": 41, "budget": 1, "": 41}
    assert len(only_common.terms) == 2  # all common: the rarest two are kept
    result = recall(actor=actor, query="project budget")
    assert result.data[0].note.id == budget.id
    lexical = [i for i in result.data if "lexical" in i.matched]
    assert [i.note.id for i in lexical] == [budget.id]
    # Statistics are per account.
    other = factories.owner()
    with factories.tenant(other):
        assert term_counts(["project", ""]) == {}
    assert term_stats_refresh(actor=factories.Actor.system(other.account_id)) == 0
    assert term_stats_refresh(actor=factories.Actor.system(actor.account_id)) == 41


def test_every_kind_of_write_keeps_the_statistics_equal_to_a_recount():
    actor = factories.owner()
    stranger = factories.owner()
    factories.note(stranger, "A stranger's note about alpine glaciers")
    nb = factories.notebook(actor, "Field work")
    child = factories.notebook(actor, "Samples", parent=nb.id)
    notes = [factories.note(actor, f"Glacier sample {i} shows quartz and {w}",
                            notebook_id=nb.id if i % 2 else None)
             for i, w in enumerate(["basalt", "granite", "basalt schist", "mica", "slate"])]
    factories.note(actor, "Moraine sample in the child notebook: granite",
                   notebook_id=child.id)
    handoff = factories.note(actor, "Handoff: continue the quartz survey", kind="handoff",
                             task_id="survey")
    checks = []

    def check(step: str) -> None:
        assert kept_counts(actor) == recounted(actor), step
        checks.append(step)

    check("saves")
    services.note_update(actor=actor, operation_id=op(), note_id=notes[0].id,
                         content="Glacier sample 0 was mislabelled: it is obsidian")
    check("content edit")
    services.note_update(actor=actor, operation_id=op(), note_id=notes[1].id, pinned=True)
    check("metadata edit")
    factories.note(actor, "Handoff: quartz survey done, write up granite", kind="handoff",
                   task_id="survey")  # updates the live handoff in place
    check("handoff update")
    services.note_archive(actor=actor, operation_id=op(),
                          items=[notes[1].id, notes[2].id])
    check("archive")
    services.note_restore(actor=actor, operation_id=op(), items=[notes[1].id])
    check("restore")
    # Folded midway: the later changes then bring existing counters down as well as up.
    assert term_stats_compact(actor=factories.Actor.system(actor.account_id)) > 0
    check("compacted midway")
    services.note_forget(actor=actor, operation_id=op(), items=[notes[3].id])
    check("forget")
    services.note_move(actor=actor, operation_id=op(), note_ids=[notes[4].id, handoff.id],
                       notebook_id=child.id)
    check("move")
    services.note_restore_revision(actor=actor, operation_id=op(), note_id=notes[0].id,
                                   revision=1)
    check("restore an old revision")
    # Expiry: the handoff's expiry passes, the periodic job expires it, it is restored,
    # expires again and is finally soft-deleted 60 days later.
    with factories.tenant(actor):
        Note.objects.filter(id=handoff.id).update(expires_at=timezone.now() - timedelta(hours=1))
    check("expiry date passed (still active until the job runs)")
    assert services.note_expire_due(actor=factories.Actor.system(actor.account_id)).expired == 1
    check("expired")
    services.note_restore(actor=actor, operation_id=op(), items=[handoff.id])
    check("restored from expiry")
    later = timezone.now() + timedelta(days=31)
    services.note_expire_due(actor=factories.Actor.system(actor.account_id), now=later)
    check("expired again")
    services.note_expire_due(actor=factories.Actor.system(actor.account_id),
                             now=later + timedelta(days=61))
    check("expired notes deleted")
    services.notebook_archive(actor=actor, operation_id=op(), notebook_id=nb.id)
    check("subtree archive (notes keep their status)")
    services.notebook_restore(actor=actor, operation_id=op(), notebook_id=nb.id)
    check("subtree restore")
    services.notebook_delete(actor=actor, operation_id=op(), notebook_id=child.id)
    check("subtree delete")
    drain(actor)  # embedding completions update notes too
    check("embedding completions")
    # Folding the deltas changes nothing a reader sees, and leaves none pending.
    assert delta_rows(actor) > 0
    assert term_stats_compact(actor=factories.Actor.system(actor.account_id)) > 0
    assert delta_rows(actor) == 0
    check("compacted")
    with factories.tenant(actor), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM notebooks_termstat WHERE ndoc <= 0")
        assert cursor.fetchone()[0] == 0  # lexemes of notes gone are removed, not kept at 0
    assert term_stats_compact(actor=factories.Actor.system(actor.account_id)) == 0
    services.note_update(actor=actor, operation_id=op(), note_id=notes[0].id,
                         content="After compaction: pumice")
    check("edit after compaction")
    active = recounted(actor)[""]
    assert term_stats_refresh(actor=factories.Actor.system(actor.account_id)) == active
    assert delta_rows(actor) == 0
    check("forced recount")
    assert kept_counts(stranger) == recounted(stranger) == {
        "": 1, "alpin": 1, "glacier": 1, "note": 1, "stranger": 1, LENGTH_LEXEME: 4}
    assert len(checks) == 22


def test_a_statement_over_many_notes_writes_one_delta_per_lexeme():
    actor = factories.owner()
    for i in range(30):
        factories.note(actor, f"Bulk note {i} about permafrost")
    term_stats_compact(actor=factories.Actor.system(actor.account_id))
    with factories.tenant(actor):
        changed = Note.objects.filter(status="active").update(
            status="archived", archived_at=timezone.now())
        assert changed == 30
        with connection.cursor() as cursor:
            cursor.execute("SELECT ndoc FROM notebooks_termdelta WHERE lexeme = 'permafrost'")
            assert cursor.fetchall() == [(-30,)]  # one row for the whole statement
    assert kept_counts(actor) == recounted(actor) == {}


def test_recall_right_after_saving_is_recall_with_fresh_statistics():
    """Ingest, then ask at once: the answers are those a forced recount gives."""
    actor = factories.owner()
    topics = ["glacier", "volcano", "reef", "desert", "forest", "tundra"]
    for i in range(36):
        topic, other = topics[i % 6], topics[(i * 5 + 1) % 6]
        extra = " with rare obsidian" if i % 9 == 0 else ""
        factories.note(actor, f"Field report {i}: the {topic} site borders a {other}{extra}. "
                              f"Samples logged on day {i % 4}.")
    drain(actor)
    queries = ["obsidian near the volcano", "reef samples", "what borders the tundra",
               "field report desert day 2", "forest glacier"]

    def answers() -> list[list[tuple[str, float, tuple[str, ...]]]]:
        return [[(str(i.note.id), round(i.score, 9), tuple(i.matched))
                 for i in recall(actor=actor, query=q, limit=10).data] for q in queries]

    def weights() -> list[dict[str, float]]:
        with factories.tenant(actor):
            return [term_weights(q).terms for q in queries]

    right_away, right_away_weights = answers(), weights()
    assert delta_rows(actor) > 0  # nothing has folded or recounted yet
    term_stats_refresh(actor=factories.Actor.system(actor.account_id))
    assert delta_rows(actor) == 0
    assert weights() == right_away_weights
    assert answers() == right_away
    assert all(right_away)
    assert "lexical" in right_away[0][0][2]


def test_the_term_stats_command_folds_and_recounts():
    from io import StringIO

    from django.core.management import call_command

    actor = factories.owner()
    for i in range(3):
        factories.note(actor, f"Command note {i} on moss")
    out = StringIO()
    call_command("term_stats", stdout=out)
    assert "folded" in out.getvalue() and delta_rows(actor) == 0
    assert kept_counts(actor) == recounted(actor)
    factories.note(actor, "one more on moss")
    call_command("term_stats", "--recount", stdout=out)
    assert delta_rows(actor) == 0
    assert kept_counts(actor)["moss"] == 4 and kept_counts(actor) == recounted(actor)
    assert "recounted" in out.getvalue()
