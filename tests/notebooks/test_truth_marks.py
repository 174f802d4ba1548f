"""What ground truth says of a note (notebooks.selectors.truth_marks): by the truth a read
is held to when it has one place, else by the truth of the note's own place — its
notebook's declaration in effect (own, or the account's when it inherits), the account's
for a Personal note, and the negatives of the account and of its notebook."""

from __future__ import annotations

import pytest

from grove.kernel.tenancy import tenant
from notebooks import services
from notebooks.models import Note
from notebooks.rules import EVERYWHERE
from notebooks.selectors.access import resolve_scope
from notebooks.selectors.truth import scoped_truth
from notebooks.selectors.truth_marks import truth_marks
from tests import factories

pytestmark = pytest.mark.django_db


def _marks(actor, notes, place=EVERYWHERE):
    with tenant(actor):
        rows = list(Note.objects.filter(id__in=[n.id for n in notes]))
        found = truth_marks(rows, scoped_truth(resolve_scope(actor, place)), profile=None)
    return {note.id: (found[note.id].authority,
                      sorted(k.claim for k in found[note.id].known_false)) for note in notes}


def test_each_note_is_marked_by_its_own_place_unless_the_read_has_one():
    owner = factories.owner()
    own = factories.notebook(owner, "Own")  # declares its own set
    heir = factories.notebook(owner, "Heir")  # inherits the account's (new notebooks do)
    alone = factories.notebook(owner, "Alone")
    services.truth_set_inheritance(actor=owner, notebook_id=alone.id, inherit=False)
    in_own = factories.note(owner, "Own rule: staging is db-stage-1.", notebook_id=own.id)
    in_heir = factories.note(owner, "Heir note: deploy on Tuesdays.", notebook_id=heir.id)
    in_alone = factories.note(owner, "Alone note: deploy on Tuesdays.", notebook_id=alone.id)
    personal = factories.note(owner, "Personal: deploy on Tuesdays.")
    services.truth_declare(actor=owner, notebook_id=own.id, note_ids=[in_own.id, personal.id])
    services.truth_declare(actor=owner, note_ids=[in_heir.id, in_alone.id, personal.id])
    services.negative_add(actor=owner, claim="Deploys happen on Fridays")
    services.negative_add(actor=owner, notebook_id=own.id, claim="Staging is db-stage-1")
    wrong = factories.note(owner, "Deploys happen on Fridays.", notebook_id=own.id)
    notes = [in_own, in_heir, in_alone, personal, wrong]

    everywhere = _marks(owner, notes)
    assert everywhere[in_own.id] == (True, ["Staging is db-stage-1"])
    assert everywhere[in_heir.id] == (True, [])  # the account's set, inherited
    assert everywhere[in_alone.id] == (False, [])  # it does not inherit
    assert everywhere[personal.id] == (True, [])  # the account's own set
    assert everywhere[wrong.id] == (False, ["Deploys happen on Fridays"])
    # Held to Own's truth, every note is marked by Own's declaration and negatives.
    held = _marks(owner, notes, place=[own.id])
    assert held[personal.id] == (True, []) and held[in_heir.id] == (False, [])
    assert held[in_own.id] == (True, ["Staging is db-stage-1"])
    assert held[wrong.id] == (False, ["Deploys happen on Fridays"])
