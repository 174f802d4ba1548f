"""A renamed note keeps its links (issue 38 item 3): with `relink`, the links in other
notes that meant it by its old title — wiki-links with their heading and label, Markdown
links to its file — are written anew with the new title, each changed note one new
revision under the rename's operation; a link that meant another note of the old name
(the nearest one) is left alone; one Undo takes every rewrite back."""

from __future__ import annotations

import pytest

from grove.kernel.tenancy import tenant
from links.models import Link
from notebooks import services
from notebooks.models import Note, Revision
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db


def text_of(actor, note_id) -> str:
    with tenant(actor):
        return Note.objects.get(id=note_id).content


def test_a_rename_rewrites_the_links_that_meant_the_note_and_one_undo_takes_them_back():
    owner = factories.owner()
    work = factories.notebook(owner, "Work")
    home = factories.notebook(owner, "Home")
    alpha = factories.note(owner, "# Alpha\n\n## Plan\n\nFirst.", kind="note",
                           notebook_id=work.id)
    other = factories.note(owner, "# Alpha\n\nThe one at home.", kind="note",
                           notebook_id=home.id)
    a = factories.note(owner, "# A\n\n[[Alpha]], [[Work/Alpha#Plan|the plan]] and "
                       "[the file](Alpha.md#Plan).", kind="note", notebook_id=work.id)
    b = factories.note(owner, "# B\n\nAlso [[alpha]].", kind="note", notebook_id=work.id)
    c = factories.note(owner, "# C\n\nThe home [[Alpha]].", kind="note", notebook_id=home.id)
    operation = op()
    renamed = services.note_update(actor=owner, operation_id=operation, note_id=alpha.id,
                                   content="# Alpha project\n\n## Plan\n\nFirst.",
                                   relink=True)
    assert renamed.relinked == 2
    assert text_of(owner, a.id) == ("# A\n\n[[Alpha project]], [[Work/Alpha project#Plan|the "
                                    "plan]] and [the file](Alpha%20project.md#Plan).")
    assert text_of(owner, b.id) == "# B\n\nAlso [[Alpha project]]."
    assert text_of(owner, c.id) == "# C\n\nThe home [[Alpha]]."  # meant the nearer Alpha
    with tenant(owner):
        assert set(Link.objects.filter(note_id__in=[a.id, b.id])
                   .values_list("target_note_id", flat=True)) == {alpha.id}
        assert Link.objects.get(note_id=c.id).target_note_id == other.id
        assert set(Revision.objects.filter(operation_id=operation)
                   .values_list("note_id", "version")) == {(alpha.id, 2), (a.id, 2), (b.id, 2)}

    undone = services.note_batch_undo(actor=owner, operation_id=op(), batch_id=operation)
    assert {(item.id, item.status) for item in undone.items} == {(a.id, "undone"),
                                                                 (b.id, "undone")}
    assert text_of(owner, b.id) == "# B\n\nAlso [[alpha]]."
    assert "[[Alpha]], [[Work/Alpha#Plan|the plan]]" in text_of(owner, a.id)
    assert text_of(owner, alpha.id).startswith("# Alpha project")  # the rename stays


def test_without_relink_or_out_of_reach_nothing_else_changes():
    owner = factories.owner()
    shared = factories.notebook(owner, "Shared")
    private = factories.notebook(owner, "Private")
    alpha = factories.note(owner, "# Alpha\n\nx", kind="note", notebook_id=shared.id)
    inside = factories.note(owner, "[[Alpha]] inside", kind="note", notebook_id=shared.id)
    outside = factories.note(owner, "[[Alpha]] outside", kind="note", notebook_id=private.id)
    plain = services.note_update(actor=owner, operation_id=op(), note_id=alpha.id,
                                 content="# Beta\n\nx")
    assert plain.relinked == 0 and text_of(owner, inside.id) == "[[Alpha]] inside"
    services.note_update(actor=owner, operation_id=op(), note_id=alpha.id,
                         content="# Alpha\n\nx")
    agent = factories.connection(owner, notebooks=[shared.id])
    renamed = services.note_update(actor=agent, operation_id=op(), note_id=alpha.id,
                                   content="# Gamma\n\nx", relink=True)
    assert renamed.relinked == 1
    assert text_of(owner, inside.id) == "[[Gamma]] inside"
    assert text_of(owner, outside.id) == "[[Alpha]] outside"  # outside the agent's grant
