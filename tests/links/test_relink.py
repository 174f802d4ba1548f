"""A renamed note keeps its links (issue 38 item 3): with `relink`, the links in other
notes that meant it by its old title — wiki-links with their heading and label, Markdown
links to its file — are written anew with the new title, each changed note one new
revision under the rename's operation; a link that meant another note of the old name
(the nearest one) is left alone; one Undo takes every rewrite back."""

from __future__ import annotations

import re

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
    assert {(item.id, item.status) for item in undone.items} == {
        (alpha.id, "undone"), (a.id, "undone"), (b.id, "undone")}
    assert text_of(owner, b.id) == "# B\n\nAlso [[alpha]]."
    assert "[[Alpha]], [[Work/Alpha#Plan|the plan]]" in text_of(owner, a.id)
    assert text_of(owner, alpha.id) == "# Alpha\n\n## Plan\n\nFirst."  # the rename too
    with tenant(owner):
        assert set(Link.objects.filter(note_id__in=[a.id, b.id])
                   .values_list("target_note_id", flat=True)) == {alpha.id}


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


def _moved_world(owner):
    projects = factories.notebook(owner, "Projects")
    archive = factories.notebook(owner, "Archive")
    old = factories.notebook(owner, "Old", parent=archive.id)
    greenhouse = factories.note(owner, "# Greenhouse\n\n## Heat\n\nTwelve degrees.",
                                kind="note", notebook_id=projects.id)
    hub = factories.note(owner, "# Hub\n\n[[Projects/Greenhouse#Heat|the heat]], "
                         "[the house](Projects/Greenhouse.md#Heat) and [[Greenhouse]].",
                         kind="note")
    return projects, old, greenhouse, hub


def targets_of(owner, note_id):
    with tenant(owner):
        return list(Link.objects.filter(note_id=note_id).order_by("position")
                    .values_list("target_note_id", flat=True))


def test_a_move_rewrites_the_links_that_named_the_note_by_its_old_place():
    """Moving a note (an ingested file's, typically) offers to update the links whose
    written path it left: a wiki-link gets as many of its new folders as it named, a
    Markdown link the path from its note's folder; a link by name alone still reaches it and is
    left as written. Each changed note is one revision under the move's operation."""
    owner = factories.owner()
    projects, old, greenhouse, hub = _moved_world(owner)
    assert targets_of(owner, hub.id) == [greenhouse.id] * 3
    operation = op()
    [moved] = services.note_move(actor=owner, operation_id=operation, note_ids=[greenhouse.id],
                                 notebook_id=old.id, relink=True)
    assert moved.relinked == 1
    assert text_of(owner, hub.id) == ("# Hub\n\n[[Old/Greenhouse#Heat|the heat]], "
                                      "[the house](Archive/Old/Greenhouse.md#Heat) and "
                                      "[[Greenhouse]].")
    assert targets_of(owner, hub.id) == [greenhouse.id] * 3
    with tenant(owner):
        assert list(Revision.objects.filter(note_id=hub.id).order_by("version")
                    .values_list("version", "operation_id"))[1:] == [(2, operation)]
    # The rewritten links still name its folder: another Greenhouse, nearer the hub,
    # takes only the link by name alone.
    twin = factories.note(owner, "# Greenhouse\n\nThe other one.", kind="note")
    assert targets_of(owner, hub.id) == [greenhouse.id, greenhouse.id, twin.id]
    back = factories.note(owner, "# Back\n\n[[Old/Greenhouse]]", kind="note")
    services.note_move(actor=owner, operation_id=op(), note_ids=[greenhouse.id],
                       notebook_id=projects.id, relink=True)
    assert text_of(owner, back.id) == "# Back\n\n[[Projects/Greenhouse]]"
    assert targets_of(owner, back.id) == [greenhouse.id]
    assert text_of(owner, hub.id).endswith("[the house](Projects/Greenhouse.md#Heat) and "
                                           "[[Greenhouse]].")


def test_a_move_without_relink_leaves_the_links_unresolved_and_changes_no_other_note():
    owner = factories.owner()
    _, old, greenhouse, hub = _moved_world(owner)
    services.note_move(actor=owner, operation_id=op(), note_ids=[greenhouse.id],
                       notebook_id=old.id)
    assert text_of(owner, hub.id).startswith("# Hub\n\n[[Projects/Greenhouse#Heat|the heat]]")
    # The wiki-link's path no longer leads there; the Markdown link still finds the one
    # note of its name (Grove falls back to the name), though its path is stale.
    assert targets_of(owner, hub.id) == [None, greenhouse.id, greenhouse.id]


def test_a_move_never_rewrites_a_note_the_caller_may_not_change():
    owner = factories.owner()
    _, old, greenhouse, hub = _moved_world(owner)
    projects_only = factories.connection(owner, notebooks=[greenhouse.notebook_id, old.id])
    [moved] = services.note_move(actor=projects_only, operation_id=op(),
                                 note_ids=[greenhouse.id], notebook_id=old.id, relink=True)
    assert moved.relinked == 0  # the hub is in Personal, outside the grant
    assert text_of(owner, hub.id).startswith("# Hub\n\n[[Projects/Greenhouse#Heat|the heat]]")


def test_the_note_pages_move_updates_the_links_and_undo_moves_it_back(web, owner):
    projects, old, greenhouse, hub = _moved_world(owner)
    page = web.get(f"/notes/{greenhouse.id}/").content.decode()
    assert re.search(r'<input type="checkbox" name="relink"[^>]* checked', page)
    moved = web.post(f"/notes/{greenhouse.id}/move", {
        "operation_id": str(op()), "destination": str(old.id), "origin": str(projects.id),
        "relink": "on"}, follow=True)
    said = moved.content.decode()
    assert "Moved, and the links to it updated in 1 note." in said
    assert "Archive/Old/Greenhouse.md#Heat" in text_of(owner, hub.id)
    # The Undo form moves it back, and the links follow it back.
    [undo] = re.findall(r'<form method="post" action="([^"]+)" class="inline undo">(.*?)'
                        r'</form>', said)
    assert 'name="relink" value="on"' in undo[1]
    fields = dict(re.findall(r'name="([a-z_]+)" value="([^"]*)"', undo[1]))
    back = web.post(undo[0], fields, follow=True)
    assert back.status_code == 200
    assert "[the house](Projects/Greenhouse.md#Heat)" in text_of(owner, hub.id)
    assert targets_of(owner, hub.id) == [greenhouse.id] * 3


def test_rest_and_mcp_rename_and_move_with_relink(owner):
    from django.test import Client

    from tests.api.conftest import Caller, data, new_key
    from tests.mcp.helpers import modern

    projects, old, greenhouse, hub = _moved_world(owner)
    key, _ = new_key(owner, personal=True, all_notebooks=True)
    api = Caller(Client(), key)
    renamed = data(api.patch(f"/notes/{greenhouse.id}", {
        "content": "# Glasshouse\n\n## Heat\n\nTwelve degrees.", "relink": True}))
    assert renamed["relinked"] == 1
    assert text_of(owner, hub.id) == ("# Hub\n\n[[Projects/Glasshouse#Heat|the heat]], "
                                      "[the house](Projects/Glasshouse.md#Heat) and "
                                      "[[Glasshouse]].")
    moved = data(api.post("/notes/move", {"noteIds": [str(greenhouse.id)],
                                          "notebookId": str(old.id), "relink": True}))
    assert moved[0]["relinked"] == 1
    assert "[the house](Archive/Old/Glasshouse.md#Heat)" in text_of(owner, hub.id)
    said = modern(key, "tools/call", {"name": "move_notes", "arguments": {
        "noteIds": [str(greenhouse.id)], "notebookId": str(projects.id),
        "relink": True}}).json()["result"]
    assert not said.get("isError"), said
    assert "[the house](Projects/Glasshouse.md#Heat)" in text_of(owner, hub.id)
    assert targets_of(owner, hub.id) == [greenhouse.id] * 3


def test_only_the_links_themselves_are_rewritten_never_text_that_looks_like_them(owner):
    """A rename and a move rewrite the links as written and nothing else: not the same
    words in a code span, after an escape or in a link's label, and never text spliced
    in where a reference link's address is defined elsewhere."""
    projects = factories.notebook(owner, "Projects")
    archive = factories.notebook(owner, "Archive")
    plan = factories.note(owner, "# Plan\n\nShip.", kind="note", notebook_id=projects.id)
    text = ("# Uses\n\nWrite `[[Plan]]` to link, \\[[Plan]] is text, and [[Plan]] links.\n"
            "[Plan.md](Projects/Plan.md) and [the plan][p].\n\n[p]: Projects/Plan.md")
    uses = factories.note(owner, text, kind="note")
    services.note_update(actor=owner, operation_id=op(), note_id=plan.id,
                         content="# Roadmap\n\nShip.", relink=True)
    assert text_of(owner, uses.id) == text.replace("and [[Plan]] links", "and [[Roadmap]] links") \
        .replace("](Projects/Plan.md)", "](Projects/Roadmap.md)")
    before = text_of(owner, uses.id)
    services.note_move(actor=owner, operation_id=op(), note_ids=[plan.id],
                       notebook_id=archive.id, relink=True)
    assert text_of(owner, uses.id) == before.replace("](Projects/Roadmap.md)",
                                                     "](Archive/Roadmap.md)")


def test_a_folder_name_that_cannot_be_written_in_a_link_is_never_written_into_one(owner):
    projects = factories.notebook(owner, "Projects")
    odd = factories.notebook(owner, "R&D | 2024")
    factories.note(owner, "# Plan\n\nOther.", kind="note", notebook_id=projects.id)
    plan = factories.note(owner, "# Plan\n\nShip.", kind="note",
                          notebook_id=factories.notebook(owner, "Old").id)
    hub = factories.note(owner, "# Hub\n\n[[Old/Plan]]", kind="note")
    services.note_move(actor=owner, operation_id=op(), note_ids=[plan.id],
                       notebook_id=odd.id, relink=True)
    # "Plan" alone would mean the nearer Projects/Plan; "R&D | 2024/Plan" cannot be
    # written: the link is left as it was (unresolved) rather than broken.
    assert text_of(owner, hub.id) == "# Hub\n\n[[Old/Plan]]"
