"""SPEC §3 rules for notes, through the service layer."""

from datetime import timedelta

import pytest
from django.utils import timezone

from grove.kernel.errors import Conflict, Gone, Invalid, NotFound
from notebooks import selectors, services
from notebooks.models import Note, Status
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


@pytest.fixture
def actor():
    return factories.owner()


def test_remember_stores_trimmed_note_with_first_revision(actor):
    result = services.note_remember(
        actor=actor, operation_id=op(), content="  Use tabs, not spaces.\n", kind="preference",
        source_agent="claude", pinned=True, importance=0.9,
    )
    note = result.note
    assert result.created is True
    assert note.content == "Use tabs, not spaces."
    assert (note.kind, note.version, note.status) == ("preference", 1, "active")
    assert note.typed_id == f"note:{note.id}" and note.versioned_id == f"note:{note.id}@1"
    assert note.notebook_id is None  # Personal
    assert (note.pinned, note.importance, note.source_agent) == (True, 0.9, "claude")
    assert note.retention_days is None and note.expires_at is None
    [revision] = factories.revisions(actor, note.id)
    assert (revision.version, revision.reason, revision.content) == (1, "create", note.content)
    assert revision.operation_id is not None


def test_json_is_camel_case(actor):
    data = factories.note(actor).to_json()
    assert {"notebookId", "typedId", "versionedId", "retentionDays", "expiresAt"} <= set(data)


def test_handoff_defaults_to_30_days_and_others_to_permanent(actor):
    before = timezone.now()
    handoff = factories.note(actor, "Continue the migration", "handoff", task_id="T-1")
    assert handoff.retention_days == 30
    assert before + timedelta(days=30) <= handoff.expires_at <= timezone.now() + timedelta(days=30)
    fact = factories.note(actor, "Paris is in France", "fact")
    assert fact.retention_days is None and fact.expires_at is None
    explicit = factories.note(actor, "Short-lived", "fact", retention_days=3)
    assert explicit.retention_days == 3 and explicit.expires_at is not None
    permanent_handoff = factories.note(actor, "Keep", "handoff", task_id="T-2", retention_days=None)
    assert permanent_handoff.expires_at is None


def test_handoff_requires_task_id(actor):
    with pytest.raises(Invalid) as err:
        services.note_remember(actor=actor, operation_id=op(), content="x", kind="handoff")
    assert err.value.code == "task_id_required"


def test_second_handoff_with_same_task_updates_the_first(actor):
    nb = factories.notebook(actor, "Work")
    first = services.note_remember(actor=actor, operation_id=op(), content="step 1",
                                   kind="handoff", task_id="deploy", notebook_id=nb.id)
    second = services.note_remember(actor=actor, operation_id=op(), content="step 2",
                                    kind="handoff", task_id="deploy", notebook_id=nb.id)
    assert second.created is False
    assert second.note.id == first.note.id
    assert (second.note.version, second.note.content) == (2, "step 2")
    # Retention and expiry are kept when the save omits them.
    assert second.note.expires_at == first.note.expires_at
    # Another notebook (or Personal) is another task namespace.
    personal = services.note_remember(actor=actor, operation_id=op(), content="elsewhere",
                                      kind="handoff", task_id="deploy")
    assert personal.created is True and personal.note.id != first.note.id
    with factories.tenant(actor):
        assert Note.objects.filter(task_id="deploy").count() == 2


def test_handoff_save_reactivates_an_archived_handoff(actor):
    first = factories.note(actor, "old state", "handoff", task_id="t")
    services.note_archive(actor=actor, operation_id=op(), items=[first.id])
    again = services.note_remember(actor=actor, operation_id=op(), content="new state",
                                   kind="handoff", task_id="t")
    assert again.created is False and again.note.status == "active"
    assert again.note.expires_at > timezone.now()


def test_update_is_partial(actor):
    note = factories.note(actor, "Original", "fact", pinned=True, importance=0.7,
                          retention_days=10)
    updated = services.note_update(actor=actor, operation_id=op(), note_id=note.id,
                                   content="Corrected")
    assert updated.content == "Corrected"
    assert (updated.kind, updated.pinned, updated.importance) == ("fact", True, 0.7)
    # Omitting retention keeps retention and expiry exactly.
    assert (updated.retention_days, updated.expires_at) == (10, note.expires_at)
    assert updated.version == 2
    assert [r.reason for r in factories.revisions(actor, note.id)] == ["create", "update"]


def test_changing_retention_restarts_the_clock(actor):
    note = factories.note(actor, "x", "fact", retention_days=10)
    with factories.tenant(actor):
        Note.objects.filter(id=note.id).update(expires_at=timezone.now() + timedelta(days=1))
    before = timezone.now()
    updated = services.note_update(actor=actor, operation_id=op(), note_id=note.id,
                                   retention_days=10)
    assert updated.expires_at >= before + timedelta(days=10)
    permanent = services.note_update(actor=actor, operation_id=op(), note_id=note.id,
                                     retention_days=None)
    assert permanent.retention_days is None and permanent.expires_at is None


def test_update_with_stale_expected_version_conflicts_and_changes_nothing(actor):
    note = factories.note(actor, "v1")
    services.note_update(actor=actor, operation_id=op(), note_id=note.id, content="v2",
                         expected_version=1)
    with pytest.raises(Conflict) as err:
        services.note_update(actor=actor, operation_id=op(), note_id=note.id, content="v3",
                             expected_version=1)
    assert err.value.code == "version_conflict"
    assert err.value.details["current_version"] == 2
    row = factories.note_row(actor, note.id)
    assert (row.content, row.version) == ("v2", 2)


def test_update_to_handoff_needs_task_id(actor):
    note = factories.note(actor, "x", "fact")
    # The note has no taskId: a state the request cannot see (409); asking for a handoff
    # with no task in the same request contradicts itself (400).
    with pytest.raises(Conflict) as conflict:
        services.note_update(actor=actor, operation_id=op(), note_id=note.id, kind="handoff")
    assert conflict.value.code == "task_id_required"
    with pytest.raises(Invalid) as invalid:
        services.note_update(actor=actor, operation_id=op(), note_id=note.id, kind="handoff",
                             task_id=None)
    assert invalid.value.code == "task_id_required"
    ok = services.note_update(actor=actor, operation_id=op(), note_id=note.id, kind="handoff",
                              task_id="t9")
    assert ok.kind == "handoff" and ok.task_id == "t9"


def test_update_cannot_create_a_second_live_handoff(actor):
    factories.note(actor, "a", "handoff", task_id="same")
    other = factories.note(actor, "b", "handoff", task_id="other")
    with pytest.raises(Conflict) as err:
        services.note_update(actor=actor, operation_id=op(), note_id=other.id, task_id="same")
    assert err.value.code == "handoff_exists"
    assert factories.note_row(actor, other.id).task_id == "other"


def test_forget_reports_each_item(actor):
    a = factories.note(actor, "a")
    b = factories.note(actor, "b")
    services.note_update(actor=actor, operation_id=op(), note_id=b.id, content="b2")
    missing = factories.op()
    result = services.note_forget(
        actor=actor, operation_id=op(),
        items=[{"id": a.id, "expectedVersion": 1}, {"id": b.id, "expectedVersion": 1}, missing],
    )
    assert [(i.id, i.status) for i in result.items] == [
        (a.id, "deleted"), (b.id, "version_conflict"), (missing, "not_found")
    ]
    row = factories.note_row(actor, a.id)
    assert row.status == "deleted" and row.deleted_at is not None  # retained, hidden
    with pytest.raises(NotFound):
        selectors.note_get(actor=actor, note_id=a.id)
    again = services.note_forget(actor=actor, operation_id=op(), items=[a.id])
    assert again.items[0].status == "not_found"


def test_deleted_notes_cannot_be_restored(actor):
    note = factories.note(actor)
    services.note_forget(actor=actor, operation_id=op(), items=[note.id])
    result = services.note_restore(actor=actor, operation_id=op(), items=[note.id])
    assert result.items[0].status == "not_found"
    assert factories.note_row(actor, note.id).status == "deleted"


def test_archive_and_restore(actor):
    note = factories.note(actor, "Keep for later", retention_days=5)
    archived = services.note_archive(actor=actor, operation_id=op(), items=[note.id])
    assert archived.items[0].status == "archived"
    assert selectors.note_list(actor=actor) == []
    assert selectors.note_get(actor=actor, note_id=note.id).status == "archived"
    before = timezone.now()
    restored = services.note_restore(actor=actor, operation_id=op(), items=[note.id])
    assert restored.items[0].status == "restored"
    row = factories.note_row(actor, note.id)
    assert row.status == "active" and row.archived_at is None
    # Restore renews retention.
    assert row.expires_at >= before + timedelta(days=5)
    assert [r.reason for r in factories.revisions(actor, note.id)] == ["create", "archive",
                                                                      "restore"]


def test_archived_note_cannot_be_corrected_until_restored(actor):
    note = factories.note(actor)
    services.note_archive(actor=actor, operation_id=op(), items=[note.id])
    with pytest.raises(Conflict) as err:
        services.note_update(actor=actor, operation_id=op(), note_id=note.id, content="new")
    assert err.value.code == "note_not_active"


def test_restore_revision_writes_a_new_revision(actor):
    note = factories.note(actor, "first")
    services.note_update(actor=actor, operation_id=op(), note_id=note.id, content="second",
                         kind="decision")
    restored = services.note_restore_revision(actor=actor, operation_id=op(), note_id=note.id,
                                              revision=1)
    assert (restored.content, restored.kind, restored.version) == ("first", "fact", 3)
    history = factories.revisions(actor, note.id)
    assert [(r.version, r.content) for r in history] == [(1, "first"), (2, "second"),
                                                         (3, "first")]
    assert history[-1].restored_from == 1 and history[-1].reason == "restore_revision"
    with pytest.raises(NotFound) as err:
        services.note_restore_revision(actor=actor, operation_id=op(), note_id=note.id,
                                       revision=9)
    assert err.value.code == "revision_not_found"


def test_restore_revision_durable_promotes_handoff_to_fact(actor):
    note = factories.note(actor, "state of task", "handoff", task_id="t")
    services.note_update(actor=actor, operation_id=op(), note_id=note.id, content="later")
    promoted = services.note_restore_revision(actor=actor, operation_id=op(), note_id=note.id,
                                              revision=1, durable=True)
    assert (promoted.kind, promoted.content) == ("fact", "state of task")
    assert promoted.retention_days is None and promoted.expires_at is None


def test_history_is_append_only_for_the_runtime_role(actor):
    from django.db import connection, transaction
    from django.db.utils import ProgrammingError

    note = factories.note(actor)
    with factories.tenant(actor), pytest.raises(ProgrammingError), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE notebooks_revision SET content = 'rewritten'")
    with factories.tenant(actor), pytest.raises(ProgrammingError), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM notebooks_revision")
    assert factories.revisions(actor, note.id)[0].content == note.content


def test_every_change_writes_a_matching_revision(actor):
    nb = factories.notebook(actor, "A")
    note = factories.note(actor, "start", retention_days=3)
    services.note_update(actor=actor, operation_id=op(), note_id=note.id, content="edit")
    services.note_move(actor=actor, operation_id=op(), note_ids=[note.id], notebook_id=nb.id)
    services.note_archive(actor=actor, operation_id=op(), items=[note.id])
    services.note_restore(actor=actor, operation_id=op(), items=[note.id])
    services.note_forget(actor=actor, operation_id=op(), items=[note.id])
    row = factories.note_row(actor, note.id)
    history = factories.revisions(actor, note.id)
    assert [r.version for r in history] == list(range(1, row.version + 1))
    last = history[-1]
    for field in ("content", "kind", "notebook_id", "status", "expires_at", "retention_days"):
        assert getattr(last, field) == getattr(row, field), field


def test_expiry_drops_out_at_once_then_job_expires_and_later_deletes(actor):
    note = factories.note(actor, "temporary", retention_days=1)
    keep = factories.note(actor, "permanent")
    with factories.tenant(actor):
        Note.objects.filter(id=note.id).update(expires_at=timezone.now() - timedelta(minutes=1))
    # Gone from lists before any job ran.
    assert [n.id for n in selectors.note_list(actor=actor)] == [keep.id]
    result = services.note_expire_due(actor=factories.Actor.system(actor.account_id))
    assert (result.expired, result.deleted) == (1, 0)
    row = factories.note_row(actor, note.id)
    assert row.status == Status.EXPIRED and row.expired_at is not None
    # Within 60 days an expired note can be restored (which renews retention) ...
    services.note_restore(actor=actor, operation_id=op(), items=[note.id])
    assert factories.note_row(actor, note.id).expires_at > timezone.now()
    # ... after 60 days the periodic job soft-deletes it.
    with factories.tenant(actor):
        Note.objects.filter(id=note.id).update(expires_at=timezone.now() - timedelta(minutes=1))
    later = services.note_expire_due(actor=factories.Actor.system(actor.account_id))
    assert (later.expired, later.deleted) == (1, 0)
    with factories.tenant(actor):
        Note.objects.filter(id=note.id).update(expired_at=timezone.now() - timedelta(days=61))
    final = services.note_expire_due(actor=factories.Actor.system(actor.account_id))
    assert final.deleted == 1
    assert factories.note_row(actor, note.id).status == "deleted"
    assert factories.note_row(actor, keep.id).status == "active"


def test_expired_note_past_the_window_is_not_restorable(actor):
    note = factories.note(actor, "temporary", retention_days=1)
    with factories.tenant(actor):
        Note.objects.filter(id=note.id).update(
            status="expired", expired_at=timezone.now() - timedelta(days=61),
            expires_at=timezone.now() - timedelta(days=61),
        )
    result = services.note_restore(actor=actor, operation_id=op(), items=[note.id])
    assert result.items[0].status == "not_restorable"
    assert factories.note_row(actor, note.id).status == "expired"


def test_move_is_all_or_nothing(actor):
    a = factories.notebook(actor, "A")
    b = factories.notebook(actor, "B")
    n1 = factories.note(actor, "one", notebook_id=a.id)
    n2 = factories.note(actor, "two", notebook_id=a.id)
    moved = services.note_move(actor=actor, operation_id=op(), note_ids=[n1.id, n2.id],
                               notebook_id=b.id)
    assert {n.notebook_id for n in moved} == {b.id}
    with pytest.raises(NotFound):
        services.note_move(actor=actor, operation_id=op(), note_ids=[n1.id, factories.op()],
                           notebook_id=None)
    assert factories.note_row(actor, n1.id).notebook_id == b.id
    to_personal = services.note_move(actor=actor, operation_id=op(), note_ids=[n1.id],
                                     notebook_id=None)
    assert to_personal[0].notebook_id is None


def test_move_refuses_a_second_live_handoff_in_the_destination(actor):
    a = factories.notebook(actor, "A")
    factories.note(actor, "here", "handoff", task_id="t", notebook_id=a.id)
    other = factories.note(actor, "there", "handoff", task_id="t")
    plain = factories.note(actor, "plain")
    with pytest.raises(Conflict) as err:
        services.note_move(actor=actor, operation_id=op(), note_ids=[plain.id, other.id],
                           notebook_id=a.id)
    assert err.value.code == "handoff_exists"
    assert factories.note_row(actor, plain.id).notebook_id is None  # nothing moved


def test_notes_cannot_be_written_into_an_archived_notebook(actor):
    nb = factories.notebook(actor, "Old")
    services.notebook_archive(actor=actor, operation_id=op(), notebook_id=nb.id)
    with pytest.raises(Conflict) as err:
        factories.note(actor, "x", notebook_id=nb.id)
    assert err.value.code == "notebook_archived"


def test_capture_pause(actor):
    from grove.identity.services import account_set_capture_paused

    account_set_capture_paused(actor=actor, paused=True)
    with pytest.raises(Conflict) as err:
        factories.note(actor, "auto", capture="automatic")
    assert err.value.code == "capture_paused"
    assert factories.note(actor, "explicit", capture="explicit").capture == "explicit"
    account_set_capture_paused(actor=actor, paused=False)
    assert factories.note(actor, "auto", capture="automatic").capture == "automatic"


def test_capture_pause_is_account_administration(actor):
    from grove.identity.services import account_set_capture_paused
    from grove.kernel.errors import Forbidden

    key = factories.connection(actor, all_notebooks=True, personal=True)
    with pytest.raises(Forbidden):
        account_set_capture_paused(actor=key, paused=True)


def test_replay_of_deleted_save_is_gone(actor):
    operation = op()
    first = services.note_remember(actor=actor, operation_id=operation, content="x", kind="fact")
    services.note_forget(actor=actor, operation_id=op(), items=[first.note.id])
    with pytest.raises(Gone) as err:
        services.note_remember(actor=actor, operation_id=operation, content="x", kind="fact")
    assert err.value.code == "gone"
    assert factories.table_counts(actor.account_id)["notes"] == 1  # nothing resurrected


def test_handoff_resave_keeps_what_it_does_not_mention(actor):
    first = services.note_remember(actor=actor, operation_id=op(), content="state 1",
                                   kind="handoff", task_id="t", pinned=True, importance=0.9,
                                   source_agent="cursor")
    again = services.note_remember(actor=actor, operation_id=op(), content="state 2",
                                   kind="handoff", task_id="t")
    assert again.note.id == first.note.id
    assert (again.note.pinned, again.note.importance, again.note.source_agent) == (
        True, 0.9, "cursor")
    changed = services.note_remember(actor=actor, operation_id=op(), content="state 3",
                                     kind="handoff", task_id="t", pinned=False,
                                     source_agent="claude")
    assert (changed.note.pinned, changed.note.source_agent) == (False, "claude")


def test_restore_window_counts_from_expiry_even_before_the_job_ran(actor):
    note = factories.note(actor, "long expired", retention_days=1)
    with factories.tenant(actor):
        # Still "active" in the row (no job ran), but expired 90 days ago.
        Note.objects.filter(id=note.id).update(expires_at=timezone.now() - timedelta(days=90))
    result = services.note_restore(actor=actor, operation_id=op(), items=[note.id])
    assert result.items[0].status == "not_restorable"
    recent = factories.note(actor, "recently expired", retention_days=1)
    with factories.tenant(actor):
        Note.objects.filter(id=recent.id).update(expires_at=timezone.now() - timedelta(days=2))
    assert services.note_restore(actor=actor, operation_id=op(),
                                 items=[recent.id]).items[0].status == "restored"


def test_move_rolls_back_notes_already_moved_in_the_batch(actor):
    a = factories.notebook(actor, "A")
    factories.note(actor, "here", "handoff", task_id="t", notebook_id=a.id)
    clash = factories.note(actor, "there", "handoff", task_id="t")
    # Notes are moved in id order: make sure one plain note is moved before the clash.
    plain = factories.note(actor, "plain")
    while str(plain.id) > str(clash.id):
        plain = factories.note(actor, "plain")
    with pytest.raises(Conflict):
        services.note_move(actor=actor, operation_id=op(), note_ids=[clash.id, plain.id],
                           notebook_id=a.id)
    row = factories.note_row(actor, plain.id)
    assert (row.notebook_id, row.version) == (None, 1)
    assert len(factories.revisions(actor, plain.id)) == 1
