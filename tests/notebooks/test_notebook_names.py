"""Two live notebooks under one parent cannot share a name (SPEC §3): compared in lower
case after trimming, on create, rename, move, restore (from the archive and from
Recently deleted) and import; refused with 409 `notebook_name_taken` and nothing changed;
archived and deleted notebooks are not live and do not block; the database's partial
unique index is the floor under every write."""

from __future__ import annotations

import uuid

import pytest
from django.db import IntegrityError, transaction
from django.test import Client

from grove.kernel.errors import Conflict
from notebooks import selectors, services
from notebooks.models import Notebook
from notebooks.services.portability import account_import, export_records
from tests import factories
from tests.api.conftest import Caller, error, new_key
from tests.factories import op, tenant
from tests.notebooks.test_trash import snapshot

pytestmark = pytest.mark.django_db


def refused(owner, write, *args, **kwargs) -> Conflict:
    """`write` is refused as a name clash and changes nothing."""
    before = snapshot(owner), _names(owner)
    with pytest.raises(Conflict) as err:
        write(*args, actor=owner, operation_id=op(), **kwargs)
    assert err.value.code == "notebook_name_taken", err.value
    assert (snapshot(owner), _names(owner)) == before
    return err.value


def _names(owner) -> list[tuple[str, uuid.UUID | None, bool]]:
    return sorted((nb.name, nb.parent_id, nb.archived_at is None)
                  for nb in selectors.notebook_list(actor=owner, include_archived=True))


def test_create_is_refused_beside_a_live_notebook_of_the_same_name(owner):
    work = factories.notebook(owner, "Work")
    factories.notebook(owner, "Plans", parent=work.id)
    for twin in ("Work", "work", "  WORK  ", "Work\n"):
        err = refused(owner, services.notebook_create, name=twin)
        assert "“Work”" in err.message
    refused(owner, services.notebook_create, name="plans", parent_id=work.id)
    # The same name elsewhere is fine: inside another parent, or at the top level.
    assert factories.notebook(owner, "Plans").parent_id is None
    assert factories.notebook(owner, "Work", parent=work.id).name == "Work"
    assert factories.notebook(owner, "Work 2").name == "Work 2"


def test_rename_and_move_are_refused_onto_a_taken_name(owner):
    work = factories.notebook(owner, "Work")
    home = factories.notebook(owner, "Home")
    plans = factories.notebook(owner, "Plans", parent=work.id)
    factories.notebook(owner, "Plans", parent=home.id)
    refused(owner, services.notebook_update, notebook_id=home.id, name="work")
    refused(owner, services.notebook_update, notebook_id=plans.id, parent_id=home.id)
    refused(owner, services.notebook_update, notebook_id=plans.id, parent_id=None,
            name="HOME")
    # Its own name in another case is a rename, not a clash; a move where the name is
    # free works.
    assert services.notebook_update(actor=owner, operation_id=op(), notebook_id=work.id,
                                    name="WORK").name == "WORK"
    moved = services.notebook_update(actor=owner, operation_id=op(), notebook_id=plans.id,
                                     parent_id=None)
    assert moved.parent_id is None


def test_deleted_and_archived_notebooks_do_not_block_but_come_back_only_to_a_free_name(owner):
    gone = factories.notebook(owner, "Work")
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=gone.id)
    assert factories.notebook(owner, "Work").name == "Work"  # a deleted one does not block

    old = factories.notebook(owner, "Trips")
    services.notebook_archive(actor=owner, operation_id=op(), notebook_id=old.id)
    new = factories.notebook(owner, "trips")  # nor does an archived one
    refused(owner, services.notebook_restore, notebook_id=old.id)
    # Archived, it may be renamed; then it comes back.
    services.notebook_update(actor=owner, operation_id=op(), notebook_id=old.id,
                             name="Trips 2019")
    services.notebook_restore(actor=owner, operation_id=op(), notebook_id=old.id)
    assert {nb.name for nb in selectors.notebook_list(actor=owner)} == {
        "Work", "Trips 2019", new.name}


def test_a_subtree_comes_back_only_if_no_two_of_it_share_a_name(owner):
    """Children renamed alike while archived: restoring their parent would make them two
    live twins — refused until one is renamed."""
    top = factories.notebook(owner, "Top")
    first = factories.notebook(owner, "A", parent=top.id)
    second = factories.notebook(owner, "B", parent=top.id)
    services.notebook_archive(actor=owner, operation_id=op(), notebook_id=top.id)
    services.notebook_update(actor=owner, operation_id=op(), notebook_id=second.id, name="a")
    err = refused(owner, services.notebook_restore, notebook_id=top.id)
    assert "rename" in err.message
    services.notebook_update(actor=owner, operation_id=op(), notebook_id=first.id, name="A1")
    counts = services.notebook_restore(actor=owner, operation_id=op(), notebook_id=top.id)
    assert counts.notebooks == 3


def test_recently_deleted_brings_back_a_twin_only_archived(owner):
    """A notebook deleted while archived comes back archived: not live, so a live one of
    its name does not stop it (restoring it from the archive then does)."""
    old = factories.notebook(owner, "Garden")
    services.notebook_archive(actor=owner, operation_id=op(), notebook_id=old.id)
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=old.id)
    factories.notebook(owner, "Garden")
    services.notebook_undelete(actor=owner, operation_id=op(), notebook_id=old.id)
    refused(owner, services.notebook_restore, notebook_id=old.id)
    live = factories.notebook(owner, "Shed")
    services.notebook_delete(actor=owner, operation_id=op(), notebook_id=live.id)
    factories.notebook(owner, "shed")
    refused(owner, services.notebook_undelete, notebook_id=live.id)


def test_the_database_refuses_twins_whatever_writes_them(owner):
    factories.notebook(owner, "Work")
    with tenant(owner), pytest.raises(IntegrityError), transaction.atomic():
        Notebook.objects.create(account_id=owner.account_id, name="WORK")
    with tenant(owner):  # archived twins are not live: the index leaves them be
        Notebook.objects.create(account_id=owner.account_id, name="work",
                                archived_at="2026-01-01T00:00:00Z")
    other = factories.owner()  # and another account's names are its own
    assert factories.notebook(other, "Work").name == "Work"


def test_rest_and_mcp_say_409_notebook_name_taken(owner):
    factories.notebook(owner, "Work")
    key, _ = new_key(owner)
    api = Caller(Client(), key)
    refused_rest = error(api.post("/notebooks", {"name": "work"}), 409, "notebook_name_taken")
    assert "Work" in refused_rest["message"]
    error(api.post("/tools/create_notebook", {"name": "WORK"}), 409, "notebook_name_taken")
    home = api.post("/notebooks", {"name": "Home"}).json()["data"]
    error(api.patch(f"/notebooks/{home['id']}", {"name": " work "}), 409,
          "notebook_name_taken")


def test_an_import_beside_notebooks_of_the_same_name_numbers_them(owner):
    work = factories.notebook(owner, "Work")
    factories.notebook(owner, "Infra", parent=work.id)
    factories.notebook(owner, "Work (2)")
    exported = list(export_records(actor=owner))
    account_import(actor=owner, records=exported)  # the same library, imported again
    names = _names(owner)
    tops = sorted(name for name, parent, _live in names if parent is None)
    assert tops == ["Work", "Work (2)", "Work (2) (2)", "Work (3)"]
    # Inside the imported "Work (3)", its own "Infra" keeps its name (no twin there).
    assert sorted(name for name, parent, _live in names if parent is not None) == [
        "Infra", "Infra"]


def test_the_website_shows_the_clash_on_the_form(owner, web):
    factories.notebook(owner, "Work")
    home = factories.notebook(owner, "Home")
    created = web.post("/notebooks/new", {"operation_id": str(uuid.uuid4()), "name": " work ",
                                          "parent": ""})
    html = created.content.decode()
    assert created.status_code == 400 and "A notebook named “Work” is already there" in html
    assert 'value=" work "' in html or 'value="work"' in html  # the form keeps what was typed
    renamed = web.post(f"/notebooks/{home.id}/", {"operation_id": str(uuid.uuid4()),
                                                  "name": "WORK", "parent": ""})
    assert renamed.status_code == 409
    assert "A notebook named “Work” is already there" in renamed.content.decode()
    assert sorted(nb.name for nb in selectors.notebook_list(actor=owner)) == ["Home", "Work"]
