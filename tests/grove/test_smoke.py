import pytest

from tests import factories


@pytest.mark.django_db
def test_remember_then_list():
    actor = factories.owner()
    saved = factories.note(actor, "Grove stores notes.")
    from notebooks import selectors

    notes = selectors.note_list(actor=actor)
    assert [n.id for n in notes] == [saved.id]
