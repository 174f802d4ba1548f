"""During a rolling upgrade an older release writes notes without passages, and its
worker may embed a note the old way (issue 37; docs/architecture.md "Documents and
passages"): the periodic `grove.passages` finds both by `passages_hash` and cuts and
indexes them again, so nothing an older release wrote stays out of recall."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection

from grove.kernel import jobs
from notebooks.selectors.recall import recall
from notebooks.services.indexing import EMBED
from notebooks.tasks import passages_heal_task
from passages.models import Passage, PassageVector
from tests import factories

pytestmark = pytest.mark.django_db


def _texts(actor, note_id):
    with factories.tenant(actor):
        return list(Passage.objects.filter(note_id=note_id).order_by("position")
                    .values_list("text", flat=True))


def test_a_note_an_older_release_changed_is_cut_and_indexed_again():
    owner = factories.owner()
    note = factories.note(owner, "Beans climb the north fence.")
    while jobs.run_batch(account_id=owner.account_id, kind=EMBED):
        pass
    changed = "Peas climb the south fence."
    with factories.tenant(owner), connection.cursor() as cursor:
        # What the release before passages writes: the content and its hash, no passages.
        cursor.execute("UPDATE notebooks_note SET content = %s, content_hash = %s, "
                       "version = 2 WHERE id = %s",
                       [changed, hashlib.sha256(changed.encode()).hexdigest(), note.id])
    assert _texts(owner, note.id) == ["Beans climb the north fence."]
    assert passages_heal_task() == 1
    assert _texts(owner, note.id) == [changed]
    assert factories.note_row(owner, note.id).indexing == "pending"
    while jobs.run_batch(account_id=owner.account_id, kind=EMBED):
        pass
    assert factories.note_row(owner, note.id).indexing == "ready"
    found = recall(actor=owner, query="peas south fence")
    assert [item.note.id for item in found.data] == [note.id]
    assert "semantic" in found.data[0].matched
    assert passages_heal_task() == 0  # nothing behind any more


def test_a_note_an_older_worker_embedded_is_embedded_again_by_passages():
    owner = factories.owner()
    note = factories.note(owner, "Leeks overwinter in the raised bed.")
    with factories.tenant(owner), connection.cursor() as cursor:
        # An older worker took the job: a note-level vector, the note called ready.
        cursor.execute(
            "INSERT INTO notebooks_noteembedding (account_id, note_id, profile, dimension, "
            "content_hash, embedding, created_at) SELECT account_id, id, 'fake-hash/384', "
            "3, content_hash, '[1,0,0]', now() FROM notebooks_note WHERE id = %s", [note.id])
        cursor.execute("UPDATE notebooks_note SET indexing = 'ready' WHERE id = %s", [note.id])
        assert not PassageVector.objects.filter(note_id=note.id).exists()
    assert passages_heal_task() == 1
    while jobs.run_batch(account_id=owner.account_id, kind=EMBED):
        pass
    with factories.tenant(owner):
        assert PassageVector.objects.filter(note_id=note.id).count() == 1
    assert factories.note_row(owner, note.id).indexing == "ready"
