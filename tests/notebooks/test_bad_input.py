"""Bad input gets a typed error with a stable code and changes nothing (SPEC §12)."""

import uuid

import pytest

from grove.kernel.errors import GroveError, Invalid, NotFound
from notebooks import services
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db

TOO_LONG = "x" * 6001


@pytest.fixture
def world():
    actor = factories.owner()
    nb = factories.notebook(actor, "Box")
    note = factories.note(actor, "existing", notebook_id=nb.id)
    stranger = factories.owner()
    foreign_nb = factories.notebook(stranger, "Theirs")
    foreign_note = factories.note(stranger, "theirs", notebook_id=foreign_nb.id)
    return actor, nb, note, stranger, foreign_nb, foreign_note


def remember(actor, **overrides):
    kwargs = {"content": "fine", "kind": "fact"} | overrides
    return services.note_remember(actor=actor, operation_id=op(), **kwargs)


REMEMBER_CASES = [
    ({"content": ""}, "content_empty"),
    ({"content": "   \n\t "}, "content_empty"),
    ({"content": TOO_LONG}, "content_too_long"),
    ({"content": 42}, "invalid_content"),
    ({"content": "nul\x00byte"}, "invalid_content"),
    ({"kind": "opinion"}, "invalid_kind"),
    ({"kind": None}, "invalid_kind"),
    ({"kind": "handoff"}, "task_id_required"),
    ({"kind": "handoff", "task_id": "   "}, "invalid_task_id"),
    ({"kind": "handoff", "task_id": "t" * 201}, "invalid_task_id"),
    ({"retention_days": 0}, "invalid_retention"),
    ({"retention_days": 366}, "invalid_retention"),
    ({"retention_days": -5}, "invalid_retention"),
    ({"retention_days": 2.5}, "invalid_retention"),
    ({"retention_days": True}, "invalid_retention"),
    ({"retention_days": "30"}, "invalid_retention"),
    ({"importance": 1.5}, "invalid_importance"),
    ({"importance": -0.1}, "invalid_importance"),
    ({"importance": float("nan")}, "invalid_importance"),
    ({"importance": "high"}, "invalid_importance"),
    ({"capture": "sometimes"}, "invalid_capture"),
    ({"pinned": "yes"}, "invalid_pinned"),
    ({"source_agent": "a" * 101}, "invalid_source_agent"),
    ({"notebook_id": "not-a-uuid"}, "invalid_id"),
    ({"content": "lone \ud800 surrogate"}, "invalid_content"),
    ({"kind": "handoff", "task_id": "nul\x00"}, "invalid_task_id"),
    ({"source_agent": "nul\x00"}, "invalid_source_agent"),
    ({"source_agent": "\udfff"}, "invalid_source_agent"),
]


@pytest.mark.parametrize(("overrides", "code"), REMEMBER_CASES)
def test_remember_rejects(world, overrides, code):
    actor, *_ = world
    before = factories.table_counts(actor.account_id)
    with pytest.raises(Invalid) as err:
        remember(actor, **overrides)
    assert err.value.code == code
    assert err.value.status == 400
    assert factories.table_counts(actor.account_id) == before


def test_content_of_exactly_6000_characters_is_fine(world):
    actor, *_ = world
    assert len(remember(actor, content="y" * 6000).note.content) == 6000


UPDATE_CASES = [
    ({"content": ""}, "content_empty"),
    ({"content": TOO_LONG}, "content_too_long"),
    ({"kind": "rumour"}, "invalid_kind"),
    ({"retention_days": 400}, "invalid_retention"),
    ({"importance": 7}, "invalid_importance"),
    ({}, "no_changes"),
    ({"content": "ok", "expected_version": 0}, "invalid_version"),
    ({"content": "ok", "expected_version": "1"}, "invalid_version"),
]


@pytest.mark.parametrize(("overrides", "code"), UPDATE_CASES)
def test_update_rejects(world, overrides, code):
    actor, nb, note, *_ = world
    before = factories.table_counts(actor.account_id)
    with pytest.raises(Invalid) as err:
        services.note_update(actor=actor, operation_id=op(), note_id=note.id, **overrides)
    assert err.value.code == code
    assert factories.table_counts(actor.account_id) == before
    assert factories.note_row(actor, note.id).version == 1


def _bad_calls(actor, nb, note):
    return {
        "forget empty": lambda: services.note_forget(actor=actor, operation_id=op(), items=[]),
        "forget too many": lambda: services.note_forget(
            actor=actor, operation_id=op(), items=[uuid.uuid4() for _ in range(101)]),
        "forget duplicate": lambda: services.note_forget(
            actor=actor, operation_id=op(), items=[note.id, note.id]),
        "forget bad id": lambda: services.note_forget(actor=actor, operation_id=op(),
                                                      items=["nope"]),
        "forget bad item": lambda: services.note_forget(
            actor=actor, operation_id=op(), items=[{"id": note.id, "extra": 1}]),
        "archive bad version": lambda: services.note_archive(
            actor=actor, operation_id=op(), items=[{"id": note.id, "expectedVersion": -1}]),
        "move empty": lambda: services.note_move(actor=actor, operation_id=op(), note_ids=[],
                                                 notebook_id=nb.id),
        "move bad destination": lambda: services.note_move(
            actor=actor, operation_id=op(), note_ids=[note.id], notebook_id="x"),
        "restore revision 0": lambda: services.note_restore_revision(
            actor=actor, operation_id=op(), note_id=note.id, revision=0),
        "restore durable not bool": lambda: services.note_restore_revision(
            actor=actor, operation_id=op(), note_id=note.id, revision=1, durable="yes"),
        "notebook blank name": lambda: services.notebook_create(actor=actor, operation_id=op(),
                                                                name="   "),
        "notebook long name": lambda: services.notebook_create(actor=actor, operation_id=op(),
                                                               name="n" * 201),
        "notebook bad parent": lambda: services.notebook_create(
            actor=actor, operation_id=op(), name="x", parent_id="../etc"),
        "rename blank": lambda: services.notebook_update(actor=actor, operation_id=op(),
                                                         notebook_id=nb.id, name=""),
        "notebook NUL name": lambda: services.notebook_create(actor=actor, operation_id=op(),
                                                              name="a\x00b"),
        "notebook surrogate name": lambda: services.notebook_create(
            actor=actor, operation_id=op(), name="\ud83d"),
    }


def test_other_services_reject_bad_input(world):
    actor, nb, note, *_ = world
    before = factories.table_counts(actor.account_id)
    for label, call in _bad_calls(actor, nb, note).items():
        with pytest.raises(Invalid):
            call()
        assert factories.table_counts(actor.account_id) == before, label


def test_foreign_ids_are_not_found_and_change_nothing(world):
    actor, nb, note, stranger, foreign_nb, foreign_note = world
    before = factories.table_counts(actor.account_id, stranger.account_id)
    calls = [
        lambda: remember(actor, notebook_id=foreign_nb.id),
        lambda: services.note_update(actor=actor, operation_id=op(), note_id=foreign_note.id,
                                     content="mine now"),
        lambda: services.note_move(actor=actor, operation_id=op(), note_ids=[foreign_note.id],
                                   notebook_id=nb.id),
        lambda: services.note_move(actor=actor, operation_id=op(), note_ids=[note.id],
                                   notebook_id=foreign_nb.id),
        lambda: services.notebook_create(actor=actor, operation_id=op(), name="x",
                                         parent_id=foreign_nb.id),
        lambda: services.notebook_update(actor=actor, operation_id=op(), notebook_id=nb.id,
                                         parent_id=foreign_nb.id),
    ]
    for call in calls:
        with pytest.raises(NotFound):
            call()
    assert factories.table_counts(actor.account_id, stranger.account_id) == before
    assert factories.note_row(stranger, foreign_note.id).content == "theirs"


def test_every_error_has_a_stable_code_and_status(world):
    actor, *_ = world
    with pytest.raises(GroveError) as err:
        remember(actor, kind="nope")
    assert (err.value.code, err.value.status) == ("invalid_kind", 400)
