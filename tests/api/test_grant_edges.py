"""Grant edges (SPEC §5: permissions never inherit down the tree): a connection granted a
notebook learns nothing about its ungranted children, and one granted only a child cannot
move it out of a parent it is not granted (that would change the parent's tree and what
the parent's shares show)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests import factories
from tests.api.conftest import Caller, error, new_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def tree():
    owner = factories.owner()
    outer = factories.notebook(owner, "Outer")
    inner = factories.notebook(owner, "Inner", parent=outer.id)
    factories.note(owner, "In the outer notebook.", notebook_id=outer.id)
    for text in ("Secret one.", "Secret two.", "Secret three."):
        factories.note(owner, text, notebook_id=inner.id)
    return owner, outer, inner


def test_counts_show_only_what_the_connection_may_see(tree):
    owner, outer, inner = tree
    narrow, _ = new_key(owner, personal=False, all_notebooks=False, notebooks=[outer.id])
    counts = Caller(Client(), narrow).get(f"/notebooks/{outer.id}/counts")
    assert counts.status_code == 200, counts.content
    assert counts.json()["data"] == {"notebooks": 1, "notes": 1}
    wide, _ = new_key(owner)
    everything = Caller(Client(), wide).get(f"/notebooks/{outer.id}/counts").json()["data"]
    assert everything == {"notebooks": 2, "notes": 4}


def test_moving_a_notebook_out_of_an_ungranted_parent_is_refused(tree):
    owner, outer, inner = tree
    child_only, _ = new_key(owner, personal=False, all_notebooks=False, notebooks=[inner.id])
    caller = Caller(Client(), child_only)
    error(caller.patch(f"/notebooks/{inner.id}", {"parentId": None}), 403,
          "parent_not_granted")
    # Unchanged, and renaming it (which leaves the tree alone) still works.
    owner_view = Caller(Client(), new_key(owner)[0])
    assert owner_view.get(f"/get/notebook:{inner.id}").json()["data"]["parentId"] == str(outer.id)
    renamed = caller.patch(f"/notebooks/{inner.id}", {"name": "Inside"})
    assert renamed.status_code == 200, renamed.content
    # With the parent granted too, the move is allowed.
    both, _ = new_key(owner, personal=False, all_notebooks=False,
                      notebooks=[outer.id, inner.id])
    moved = Caller(Client(), both).patch(f"/notebooks/{inner.id}", {"parentId": None})
    assert moved.status_code == 200 and moved.json()["data"]["parentId"] is None
