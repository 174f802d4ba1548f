"""Existing data moves to passages without being embedded again (issue 37, item 8): a
database from before passages (notebooks 0031), holding a note with two revisions and
the vector an older worker made from its text, and a note whose vector is of an older
text, is migrated forward by the real migrations (notebooks 0032–0033, passages
0001–0002). Each note becomes one passage of its whole text; the current vector is
carried over as it was, the stale one is not; every revision is kept and still reads;
and nothing is queued to embed. Real migrations, run backwards
to 0031 and forward again on the test database (docs/benchmarks.md has the same move
timed on 100,000 notes)."""

from __future__ import annotations

import uuid

import pytest
from django.core.management import call_command
from django.db import connections, transaction

from grove.kernel.tenancy import tenant
from grove.models import Job
from notebooks.models import Note, Revision
from notebooks.selectors.note_reads import note_read
from passages.models import Passage, PassageVector
from passages.rules import pieces
from tests import factories
from tests.grove.kernel.test_rls import set_context

pytestmark = pytest.mark.slow

BEFORE = ("notebooks", "0031_search_words")
OLD = "Leeks overwinter in the raised bed."
NOW = "Leeks overwinter in the raised bed by the wall, under fleece."
STALE_TEXT = "The shed key hangs by the door."
VECTOR = [0.25, 0.5, 0.75]


def migrate(*target: str) -> None:
    """`migrate` as `grove migrate` runs it (the owner role)."""
    call_command("migrate", *target, database="owner", verbosity=0)
    connections["owner"].close()


def _insert(cursor, account_id, note_id, content, version) -> None:
    cursor.execute(
        "INSERT INTO notebooks_note (id, account_id, content, kind, capture, pinned, tags, "
        "importance, status, version, created_at, updated_at, content_hash, indexing, "
        "stated_dates) VALUES (%s, %s, %s, 'fact', 'explicit', false, '{}', 0.5, 'active', "
        "%s, now(), now(), encode(sha256(convert_to(%s, 'UTF8')), 'hex'), 'ready', '{}')",
        [note_id, account_id, content, version, content])


def _revision(cursor, account_id, note_id, version, content, reason) -> None:
    cursor.execute(
        "INSERT INTO notebooks_revision (id, account_id, note_id, version, reason, content, "
        "kind, capture, pinned, tags, importance, status, created_at) VALUES (%s, %s, %s, "
        "%s, %s, %s, 'fact', 'explicit', false, '{}', 0.5, 'active', now())",
        [uuid.uuid4(), account_id, note_id, version, reason, content])


def _vector(cursor, account_id, note_id, text) -> None:
    """The vector an older worker made, for the note's text `text`."""
    cursor.execute(
        "INSERT INTO notebooks_noteembedding (account_id, note_id, profile, dimension, "
        "content_hash, embedding, created_at) VALUES (%s, %s, 'fake-hash/384', 3, "
        "encode(sha256(convert_to(%s, 'UTF8')), 'hex'), %s::vector, now())",
        [account_id, note_id, text, str(VECTOR)])


def test_notes_from_before_passages_become_one_passage_each_with_their_vectors(committed):
    owner = factories.owner()
    leeks, shed = uuid.uuid4(), uuid.uuid4()
    migrate(*BEFORE)
    try:
        with transaction.atomic(), connections["default"].cursor() as cursor:
            set_context(owner.account_id)
            _insert(cursor, owner.account_id, leeks, NOW, 2)
            _revision(cursor, owner.account_id, leeks, 1, OLD, "create")
            _revision(cursor, owner.account_id, leeks, 2, NOW, "update")
            _vector(cursor, owner.account_id, leeks, NOW)
            _insert(cursor, owner.account_id, shed, STALE_TEXT + " Spare one in the car.", 1)
            _revision(cursor, owner.account_id, shed, 1, STALE_TEXT + " Spare one in the car.",
                      "create")
            _vector(cursor, owner.account_id, shed, STALE_TEXT)  # of an older text
    finally:
        connections["default"].close()
        migrate()

    with tenant(owner):
        notes = {n.id: n for n in Note.objects.filter(id__in=[leeks, shed])}
        for note in notes.values():  # one passage: the whole text, hashed as the cutter does
            [passage] = Passage.objects.filter(note_id=note.id)
            [cut] = pieces(note.kind, note.content)
            assert (passage.position, passage.text, passage.headings) == (1, note.content, [])
            assert passage.hash == cut.hash
            assert note.passages_hash == note.content_hash
        [carried] = PassageVector.objects.filter(note_id=leeks)
        assert [round(float(x), 6) for x in carried.embedding] == VECTOR
        assert (carried.profile, carried.dimension) == ("fake-hash/384", 3)
        assert not PassageVector.objects.filter(note_id=shed).exists()  # never of old text
        assert list(Revision.objects.filter(note_id=leeks).order_by("version")
                    .values_list("version", "content")) == [(1, OLD), (2, NOW)]
        assert not Job.objects.filter(target_id=leeks).exists()  # nothing embedded again
    # Every revision still reads, and the note reads as it did.
    assert note_read(actor=owner, note_id=leeks, version=1).content == OLD
    assert note_read(actor=owner, note_id=leeks, passage=1, version=2).content == NOW
