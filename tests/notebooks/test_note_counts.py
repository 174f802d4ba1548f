"""Live note counts kept by the writes (migration 0022): after every kind of write the
kept counts equal a real COUNT of the notes, and what the library shows from them — the
sidebar's per-notebook counts and an unfiltered list's "of N" — equals what counting
the notes gives, for the owner and for a connection's grant, before and after the
periodic compaction."""

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone

from notebooks import selectors, services
from notebooks.models import Note
from notebooks.rules import EVERYWHERE, unexpired_filter
from notebooks.selectors.access import live_filter, visible_filter
from notebooks.selectors.search import note_search
from notebooks.services.note_counts import note_counts_compact, note_counts_refresh
from notebooks.services.portability import account_import, export_records
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


def kept(actor) -> dict[uuid.UUID | None, int]:
    """Every place's kept count: the sum of its rows."""
    with factories.tenant(actor), connection.cursor() as cursor:
        cursor.execute("SELECT notebook_id, sum(notes) FROM notebooks_notecount "
                       "GROUP BY notebook_id HAVING sum(notes) <> 0")
        return {place: int(n) for place, n in cursor.fetchall()}


def counted(actor) -> dict[uuid.UUID | None, int]:
    """The reference: the account's active notes per place, counted."""
    with factories.tenant(actor), connection.cursor() as cursor:
        cursor.execute("SELECT notebook_id, count(*) FROM notebooks_note "
                       "WHERE status = 'active' GROUP BY notebook_id")
        return {place: int(n) for place, n in cursor.fetchall()}


def rows(actor) -> int:
    with factories.tenant(actor), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM notebooks_notecount")
        return cursor.fetchone()[0]


def sidebar_by_counting(actor) -> dict[uuid.UUID, int]:
    """What the sidebar showed before the counts were kept: a grouped count."""
    with factories.tenant(actor):
        return dict(Note.objects.filter(visible_filter(actor),
                                        unexpired_filter(now=timezone.now()),
                                        notebook__isnull=False)
                    .values_list("notebook_id").annotate(n=Count("*")).order_by())


def listed_by_counting(actor, within: Q) -> int:
    with factories.tenant(actor):
        return Note.objects.filter(live_filter(actor), within).count()


def shown(actor, place) -> int:
    """An unfiltered list's "of N" (from the kept counts)."""
    return note_search(actor=actor, notebook_id=place).meta.available


def assert_exact(actor, places) -> None:
    assert kept(actor) == counted(actor)
    assert selectors.notebook_note_counts(actor=actor) == sidebar_by_counting(actor)
    for place, within in places:
        assert shown(actor, place) == listed_by_counting(actor, within), place


def test_every_kind_of_write_keeps_the_counts_equal_to_a_count():
    actor = factories.owner()
    stranger = factories.owner()
    factories.note(stranger, "A stranger's note")
    system = factories.Actor.system(actor.account_id)
    nb = factories.notebook(actor, "Field work")
    child = factories.notebook(actor, "Samples", parent=nb.id)
    other = factories.notebook(actor, "Elsewhere")
    places = [(EVERYWHERE, Q()), (None, Q(notebook_id__isnull=True)),
              (nb.id, Q(notebook_id=nb.id)), (child.id, Q(notebook_id=child.id)),
              (other.id, Q(notebook_id=other.id))]
    checks = []

    def check(step: str, *, gone: tuple = ()) -> None:
        try:  # a deleted notebook's list is a 404
            assert_exact(actor, [(place, within) for place, within in places
                                 if place not in gone])
        except AssertionError as exc:
            raise AssertionError(f"after {step}: {exc}") from exc
        checks.append(step)

    check("nothing yet")
    notes = [factories.note(actor, f"Sample {i}", notebook_id=nb.id if i % 2 else None)
             for i in range(6)]
    factories.note(actor, "In the child notebook", notebook_id=child.id)
    handoff = factories.note(actor, "Handoff: continue", kind="handoff", task_id="survey",
                             notebook_id=nb.id)
    check("saves")
    services.note_update(actor=actor, operation_id=op(), note_id=notes[0].id,
                         content="Sample 0, corrected")
    services.note_update(actor=actor, operation_id=op(), note_id=notes[1].id, pinned=True)
    check("corrections")
    factories.note(actor, "Handoff: done", kind="handoff", task_id="survey",
                   notebook_id=nb.id)  # updates the live handoff in place
    check("handoff update")
    services.note_archive(actor=actor, operation_id=op(), items=[notes[1].id, notes[2].id])
    check("archive")
    services.note_restore(actor=actor, operation_id=op(), items=[notes[1].id])
    check("restore")
    assert note_counts_compact(actor=system) > 0
    assert rows(actor) == len(kept(actor))  # one row per place
    check("compacted midway")
    services.note_forget(actor=actor, operation_id=op(), items=[notes[3].id])
    check("forget")
    services.note_undelete(actor=actor, operation_id=op(), note_id=notes[3].id)
    check("brought back from Recently deleted")
    services.note_move(actor=actor, operation_id=op(), note_ids=[notes[4].id, handoff.id],
                       notebook_id=child.id)
    check("move into a notebook")
    services.note_move(actor=actor, operation_id=op(), note_ids=[notes[5].id],
                       notebook_id=None)
    check("move to Personal")
    services.note_restore_revision(actor=actor, operation_id=op(), note_id=notes[0].id,
                                   revision=1)
    check("restore an old revision")
    # Expiry: the date passes (the note still `active` until the job runs, and no
    # longer live), the job expires it, it is restored, expires again, is deleted.
    with factories.tenant(actor):
        Note.objects.filter(id=handoff.id).update(expires_at=timezone.now() - timedelta(hours=1))
    check("expiry date passed (still active until the job runs)")
    assert services.note_expire_due(actor=system).expired == 1
    check("expired")
    services.note_restore(actor=actor, operation_id=op(), items=[handoff.id])
    check("restored from expiry")
    later = timezone.now() + timedelta(days=31)
    services.note_expire_due(actor=system, now=later)
    services.note_expire_due(actor=system, now=later + timedelta(days=61))
    check("expired again, then deleted")
    services.notebook_archive(actor=actor, operation_id=op(), notebook_id=nb.id)
    check("subtree archive (notes keep their status, the list leaves them out)")
    services.notebook_restore(actor=actor, operation_id=op(), notebook_id=nb.id)
    check("subtree restore")
    factories.note(actor, "Doomed with its notebook", notebook_id=other.id)
    services.notebook_delete(actor=actor, operation_id=op(), notebook_id=other.id)
    check("notebook delete", gone=(other.id,))
    services.notebook_undelete(actor=actor, operation_id=op(), notebook_id=other.id)
    check("notebook brought back from Recently deleted")
    services.notebook_delete(actor=actor, operation_id=op(), notebook_id=child.id)
    check("subtree delete", gone=(child.id,))
    imported = account_import(actor=actor, records=list(export_records(actor=stranger)))
    assert imported.notes == 1
    check("import", gone=(child.id,))
    from tests.notebooks.test_recall_stats import drain

    drain(actor)  # embedding completions update notes too
    check("embedding completions", gone=(child.id,))
    assert note_counts_compact(actor=system) > 0
    assert note_counts_compact(actor=system) == 0  # nothing left to fold
    check("compacted", gone=(child.id,))
    with factories.tenant(actor), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM notebooks_notecount WHERE notes <= 0")
        assert cursor.fetchone()[0] == 0  # places with no notes keep no row
    assert note_counts_refresh(actor=system) == sum(counted(actor).values())
    check("forced recount", gone=(child.id,))
    assert kept(stranger) == counted(stranger) == {None: 1}
    assert len(checks) == 25


def test_a_statement_over_many_notes_writes_one_row_per_place():
    actor = factories.owner()
    nb = factories.notebook(actor, "Box")
    for i in range(10):
        factories.note(actor, f"Note {i}", notebook_id=nb.id if i % 2 else None)
    note_counts_compact(actor=factories.Actor.system(actor.account_id))
    with factories.tenant(actor):
        before = rows(actor)
        assert Note.objects.update(status="archived", archived_at=timezone.now()) == 10
        assert rows(actor) == before + 2  # -5 for the notebook, -5 for Personal
    assert kept(actor) == counted(actor) == {}


def test_a_connection_sees_the_counts_of_its_grant_only():
    owner = factories.owner()
    shared = factories.notebook(owner, "Shared")
    hidden = factories.notebook(owner, "Hidden")
    for place in (shared.id, hidden.id, None):
        for i in range(2):
            factories.note(owner, f"Note {i}", notebook_id=place)
    agent = factories.connection(owner, notebooks=[shared.id])
    assert selectors.notebook_note_counts(actor=agent) == {shared.id: 2}
    assert shown(agent, EVERYWHERE) == listed_by_counting(agent, Q()) == 2
    assert shown(agent, shared.id) == 2
    personal = factories.connection(owner, notebooks=[], personal=True)
    assert shown(personal, EVERYWHERE) == 2 and shown(personal, None) == 2


def test_a_list_counts_up_to_its_first_pages_time():
    """Paging keeps the "of N" of the first page: notes saved since are not counted (as
    the page query does not show them)."""
    actor = factories.owner()
    for i in range(3):
        factories.note(actor, f"Before {i}")
    first = note_search(actor=actor, limit=2)
    assert first.meta.available == 3
    factories.note(actor, "After the first page")
    second = note_search(actor=actor, limit=2, cursor=first.meta.next_cursor)
    assert second.meta.available == 3 == listed_by_counting(actor, Q()) - 1


def test_filters_still_count_the_notes():
    actor = factories.owner()
    factories.note(actor, "A decision", kind="decision")
    factories.note(actor, "A fact")
    assert note_search(actor=actor, kinds=["decision"]).meta.available == 1
    assert note_search(actor=actor, status="archived").meta.available == 0
    assert note_search(actor=actor).meta.available == 2


def test_the_command_folds_and_recounts():
    from io import StringIO

    from django.core.management import call_command

    actor = factories.owner()
    for i in range(3):
        factories.note(actor, f"Command note {i}")
    out = StringIO()
    call_command("term_stats", stdout=out)
    assert rows(actor) == 1 and kept(actor) == counted(actor) == {None: 3}
    with factories.tenant(actor), connection.cursor() as cursor:
        cursor.execute("UPDATE notebooks_notecount SET notes = 99")  # drifted, somehow
    call_command("term_stats", "--recount", stdout=out)
    assert kept(actor) == counted(actor) == {None: 3}
    assert "recounted" in out.getvalue()
