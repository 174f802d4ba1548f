"""Ground truth (SPEC §10): declarations replace and follow revisions forward, prefer or
bind in recall and the brief, negatives union and warn, and a connection's change to a
declared note waits for the owner."""

from __future__ import annotations

import pytest

from grove.kernel.errors import Conflict, Forbidden, NotFound
from grove.kernel.tenancy import tenant
from notebooks import selectors, services
from notebooks.models import Notebook, PendingRevision, Revision
from notebooks.selectors.brief import brief_get
from notebooks.selectors.recall import recall
from tests import factories
from tests.factories import op
from tests.notebooks.test_recall import TableEmbedder, index_all, unit, use_embedder

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner():
    return factories.owner()


@pytest.fixture
def ops(owner):
    return factories.notebook(owner, "Ops")


def declared_ids(truth):
    return [n.id for n in truth.notes]


def test_a_declaration_replaces_is_idempotent_and_clears(owner, ops):
    a, b, c = (factories.note(owner, f"Rule {x}.", notebook_id=ops.id) for x in "abc")
    first = services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[a.id, b.id],
                                   policy="restrict")
    assert (first.state, first.policy, declared_ids(first)) == ("own", "restrict", [a.id, b.id])
    again = services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[a.id, b.id],
                                   policy="restrict")
    assert again.declared_at == first.declared_at  # nothing changed
    replaced = services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[c.id, a.id],
                                      policy="prioritize")
    assert (replaced.policy, declared_ids(replaced)) == ("prioritize", [c.id, a.id])
    cleared = services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[])
    assert (cleared.state, cleared.notes) == ("none", [])


def test_reads_follow_a_declared_notes_revisions_forward(owner, ops):
    note = factories.note(owner, "The port is 5432.", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[note.id])
    services.note_update(actor=owner, operation_id=op(), note_id=note.id,
                         content="The port is 6543.")
    truth = selectors.truth_get(actor=owner, notebook_id=ops.id, full=True)
    [declared] = truth.notes
    assert (declared.declared_version, declared.version) == (1, 2)
    assert declared.content == "The port is 6543." and declared.versioned_id.endswith("@2")


def test_inheritance_of_the_account_declaration(owner, ops):
    rule = factories.note(owner, "Every deploy needs a rollback plan.", kind="decision")
    services.truth_declare(actor=owner, note_ids=[rule.id], policy="prioritize")
    assert selectors.truth_get(actor=owner).state == "own"
    inherited = selectors.truth_get(actor=owner, notebook_id=ops.id)
    assert (inherited.state, declared_ids(inherited)) == ("inherited", [rule.id])
    services.truth_set_inheritance(actor=owner, notebook_id=ops.id, inherit=False)
    assert selectors.truth_get(actor=owner, notebook_id=ops.id).state == "none"
    # A notebook's own declaration replaces the account's; it does not add to it.
    services.truth_set_inheritance(actor=owner, notebook_id=ops.id, inherit=True)
    local = factories.note(owner, "Ops deploys on Tuesdays.", notebook_id=ops.id)
    own = services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[local.id])
    assert (own.state, declared_ids(own)) == ("own", [local.id])


def test_notebooks_from_before_ground_truth_do_not_inherit(owner):
    """Migration 0015 set the flag false on every notebook that existed; the column's
    default (for rows written without it) and the model's are true."""
    from django.db import connection

    with tenant(owner):
        with connection.cursor() as cursor:
            cursor.execute("SELECT column_default FROM information_schema.columns WHERE "
                           "table_name = 'notebooks_notebook' AND "
                           "column_name = 'inherit_account_truth'")
            assert cursor.fetchone()[0] == "true"
    new = factories.notebook(owner, "New")
    with tenant(owner):
        assert Notebook.objects.get(id=new.id).inherit_account_truth is True
    import importlib

    migration = importlib.import_module("notebooks.migrations.0015_ground_truth").Migration
    add, alter = migration.operations[0], migration.operations[1]
    assert (add.name, add.field.default, add.field.db_default) == (
        "inherit_account_truth", False, False)
    assert (alter.name, alter.field.default, alter.field.db_default) == (
        "inherit_account_truth", True, True)


def test_only_the_owner_declares(owner, ops):
    note = factories.note(owner, "A rule.", notebook_id=ops.id)
    agent = factories.connection(owner, all_notebooks=True, personal=True)
    for attempt in (
        lambda: services.truth_declare(actor=agent, notebook_id=ops.id, note_ids=[note.id]),
        lambda: services.truth_set_inheritance(actor=agent, notebook_id=ops.id, inherit=False),
        lambda: services.negative_add(actor=agent, claim="The sky is green."),
    ):
        with pytest.raises(Forbidden):
            attempt()
    stranger = factories.owner()
    with pytest.raises(NotFound):  # another account's note is no note at all
        services.truth_declare(actor=stranger, note_ids=[note.id])


# -- prefer or bind -----------------------------------------------------------------------------

QUERY = "which host is the staging database"
WRONG = "The staging database host was db-stage-1 until the 2025 migration."
RIGHT = "Staging database: db-stage-2."
PREFERENCE = "Prefer short answers about databases."


@pytest.fixture
def crafted(owner, ops, monkeypatch, vacuumed_vectors):
    """The nearest neighbour (lexically and semantically) is wrong; the declared note is
    right but further away."""
    use_embedder(monkeypatch, TableEmbedder({
        QUERY: unit(1, 0), WRONG: unit(1, 0.05), RIGHT: unit(1, 0.6),
        PREFERENCE: unit(1, 0.3), "favourite pizza topping": unit(0, 0, 1)}))
    wrong = factories.note(owner, WRONG, notebook_id=ops.id)
    right = factories.note(owner, RIGHT, notebook_id=ops.id)
    preference = factories.note(owner, PREFERENCE, kind="preference", notebook_id=ops.id)
    index_all(owner)
    return wrong, right, preference


def test_prioritize_ranks_declared_first_and_keeps_the_rest(owner, ops, crafted):
    wrong, right, _ = crafted
    before = recall(actor=owner, query=QUERY, place=[ops.id])
    assert before.data[0].note.id == wrong.id and before.meta.coverage is None
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[right.id],
                           policy="prioritize")
    after = recall(actor=owner, query=QUERY, place=[ops.id])
    ids = [item.note.id for item in after.data]
    assert ids[0] == right.id and wrong.id in ids
    assert after.data[0].authority and not after.data[1].authority
    assert (after.meta.policy, after.meta.coverage) == ("prioritize", "covered")


def test_restrict_answers_only_from_declared_notes_or_says_not_covered(owner, ops, crafted):
    wrong, right, preference = crafted
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[right.id],
                           policy="restrict")
    bound = recall(actor=owner, query=QUERY, place=[ops.id])
    ids = [item.note.id for item in bound.data]
    assert ids[0] == right.id and wrong.id not in ids
    assert preference.id in ids  # preferences are untouched by restrict
    assert bound.meta.coverage == "covered"
    off_topic = recall(actor=owner, query="favourite pizza topping", place=[ops.id])
    assert off_topic.meta.coverage == "not_covered"
    assert all(item.note.kind in ("preference", "handoff") for item in off_topic.data)
    # Query-free recall: the declared note, and no other fact.
    profile = recall(actor=owner, place=[ops.id])
    assert [i.note.id for i in profile.data if i.note.kind == "fact"] == [right.id]


def test_an_agent_granted_one_notebook_is_bound_without_naming_it(owner, ops, crafted):
    wrong, right, _ = crafted
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[right.id],
                           policy="restrict")
    agent = factories.connection(owner, notebooks=[ops.id])
    ids = [item.note.id for item in recall(actor=agent, query=QUERY).data]
    assert right.id in ids and wrong.id not in ids
    # Across several notebooks no one declaration applies.
    assert wrong.id in [i.note.id for i in recall(actor=owner, query=QUERY).data]


def test_a_declaration_never_widens_a_grant(owner, ops):
    secret = factories.notebook(owner, "Secret")
    hidden = factories.note(owner, "Secret rule: the vault code is 1234.", notebook_id=secret.id)
    shown = factories.note(owner, "Public rule.", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[hidden.id, shown.id],
                           policy="restrict")
    agent = factories.connection(owner, notebooks=[ops.id])
    truth = selectors.truth_get(actor=agent, notebook_id=ops.id, full=True)
    assert (declared_ids(truth), truth.withheld) == ([shown.id], 1)
    assert "1234" not in recall(actor=agent, query="vault code").model_dump_json()
    assert "1234" not in brief_get(actor=agent, truth="full").markdown


# -- the brief ----------------------------------------------------------------------------------


def test_two_agents_get_the_same_declared_notes_unranked(owner, ops):
    rules_ = [factories.note(owner, f"# Contract {n}\n\n## Fields\nid, name\n## Errors\nnone",
                             notebook_id=ops.id) for n in (1, 2, 3)]
    other = factories.note(owner, "An undeclared fact about contracts.", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[n.id for n in rules_],
                           policy="restrict")
    briefs = [brief_get(actor=factories.connection(owner, notebooks=[ops.id]), format="json")
              for _ in range(2)]
    for brief in briefs:
        assert [n.id for n in brief.truth.notes] == [n.versioned_id for n in rules_]
        assert brief.truth.notes[0].line == "Contract 1 (sections: Fields · Errors)"
        assert brief.meta.declared == 3 and brief.meta.truth_policy == "restrict"
        assert other.versioned_id not in brief.meta.returned_items + brief.meta.indexed_items
    markdown = brief_get(actor=factories.connection(owner, notebooks=[ops.id])).markdown
    assert "## Ground truth — restrict (declared here)" in markdown
    full = brief_get(actor=owner, notebook_id=ops.id, truth="full").markdown
    assert "## Errors\nnone" in full


# -- negatives ----------------------------------------------------------------------------------


def test_negatives_union_and_warn_in_recall(owner, ops):
    account_claim = services.negative_add(actor=owner, claim="Deploys happen on Fridays.")
    again = services.negative_add(actor=owner, claim="Deploys happen on Fridays.")
    assert again.id == account_claim.id  # one claim, not two
    local = services.negative_add(actor=owner, notebook_id=ops.id,
                                  claim="The staging host is db-stage-1.")
    here = selectors.truth_get(actor=owner, notebook_id=ops.id)
    assert [n.id for n in here.negatives] == [account_claim.id, local.id]
    assert [n.id for n in selectors.truth_get(actor=owner).negatives] == [account_claim.id]
    stale = factories.note(owner, "Reminder: the staging host is db-stage-1.",
                           notebook_id=ops.id)
    fine = factories.note(owner, "The staging host is db-stage-2 now.", notebook_id=ops.id)
    found = {i.note.id: i for i in recall(actor=owner, query="staging host",
                                          place=[ops.id]).data}
    assert [k.claim for k in found[stale.id].known_false] == [local.claim]
    assert found[fine.id].known_false == []  # the right value is not the false claim


def test_a_negative_is_never_returned_as_truth(owner, ops):
    """Negatives live in their own table: no read of declared truth can reach one."""
    claim = services.negative_add(actor=owner, notebook_id=ops.id, claim="Pi is exactly 3.")
    note = factories.note(owner, "Pi is about 3.14159.", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[note.id])
    truth = selectors.truth_get(actor=owner, notebook_id=ops.id, full=True)
    assert claim.id not in declared_ids(truth)
    assert all(n.content != claim.claim for n in truth.notes)
    brief = brief_get(actor=owner, notebook_id=ops.id, format="json")
    assert [n.id for n in brief.truth.notes] == [note.versioned_id]
    assert brief.truth.negatives == ["Pi is exactly 3."]
    with pytest.raises(NotFound):  # a claim id is not a note id
        services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[claim.id])


# -- held changes -------------------------------------------------------------------------------


def test_a_connections_change_to_a_declared_note_waits_for_the_owner(owner, ops):
    contract = factories.note(owner, "Contract v1: id, name.", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[contract.id],
                           policy="restrict")
    elsewhere = factories.notebook(owner, "Elsewhere")
    writer = factories.connection(owner, notebooks=[ops.id, elsewhere.id])
    reader = factories.connection(owner, notebooks=[ops.id])
    held = services.note_update(actor=writer, operation_id=op(), note_id=contract.id,
                                content="Contract v2: id, name, email.")
    assert held.pending_revision is not None and held.version == 1
    assert "pendingRevision" in held.to_json()
    for actor in (writer, reader):
        [declared] = selectors.truth_get(actor=actor, notebook_id=ops.id, full=True).notes
        assert declared.content == "Contract v1: id, name."
    for refused in (
        lambda: services.note_move(actor=writer, operation_id=op(), note_ids=[contract.id],
                                   notebook_id=elsewhere.id),
        lambda: services.note_forget(actor=writer, operation_id=op(), items=[contract.id]),
    ):
        with pytest.raises(Forbidden) as error:
            refused()
        assert error.value.code == "declared_note"

    accepted = services.pending_accept(actor=owner, pending_id=held.pending_revision.id)
    assert (accepted.version, accepted.content) == (2, "Contract v2: id, name, email.")
    for actor in (writer, reader):
        [declared] = selectors.truth_get(actor=actor, notebook_id=ops.id, full=True).notes
        assert declared.content == "Contract v2: id, name, email."
    with tenant(owner):
        revision = Revision.objects.get(note_id=contract.id, version=2)
        pending = PendingRevision.objects.get(id=held.pending_revision.id)
    assert revision.connection_id == writer.connection_id  # the change is the agent's
    assert (pending.status, pending.accepted_version) == ("accepted", 2)
    assert pending.decided_at is not None and pending.decided_by
    with pytest.raises(Conflict):
        services.pending_accept(actor=owner, pending_id=pending.id)


def test_a_held_change_on_an_outdated_head_is_refused(owner, ops):
    contract = factories.note(owner, "Contract v1.", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[contract.id])
    writer = factories.connection(owner, notebooks=[ops.id])
    held = services.note_update(actor=writer, operation_id=op(), note_id=contract.id,
                                content="Contract from the agent.")
    services.note_update(actor=owner, operation_id=op(), note_id=contract.id,
                         content="Contract v2, by the owner.")
    with pytest.raises(Conflict) as stale:
        services.pending_accept(actor=owner, pending_id=held.pending_revision.id)
    assert stale.value.code == "pending_stale"
    services.pending_reject(actor=owner, pending_id=held.pending_revision.id)
    with pytest.raises(Forbidden):
        services.pending_accept(actor=writer, pending_id=held.pending_revision.id)


def test_ground_truth_rows_are_invisible_to_other_accounts(owner, ops):
    from notebooks.models import NegativeClaim, TruthDeclaration, TruthNote

    note = factories.note(owner, "Mine.", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[note.id])
    services.negative_add(actor=owner, claim="A lie.")
    writer = factories.connection(owner, notebooks=[ops.id])
    services.note_update(actor=writer, operation_id=op(), note_id=note.id, content="Theirs.")
    stranger = factories.owner()
    with tenant(stranger):
        for model in (TruthDeclaration, TruthNote, NegativeClaim, PendingRevision):
            assert model.objects.count() == 0, model
    with tenant(owner):
        for model in (TruthDeclaration, TruthNote, NegativeClaim, PendingRevision):
            assert model.objects.count() == 1, model
    with pytest.raises(NotFound):
        selectors.truth_get(actor=stranger, notebook_id=ops.id)


def test_the_note_page_badges_declared_notes_and_waiting_changes(owner, ops, web):
    declared = factories.note(owner, "A declared rule.", notebook_id=ops.id)
    plain = factories.note(owner, "A plain note.", notebook_id=ops.id)
    services.truth_declare(actor=owner, notebook_id=ops.id, note_ids=[declared.id])
    writer = factories.connection(owner, notebooks=[ops.id])
    services.note_update(actor=writer, operation_id=op(), note_id=declared.id,
                         content="A rule, revised.")
    page = web.get(f"/notes/{declared.id}/").content.decode()
    assert 'class="badge truth"' in page and "Declared ground truth in Ops" in page
    assert "1 change waiting" in page
    assert 'class="badge truth"' not in web.get(f"/notes/{plain.id}/").content.decode()


def test_the_library_badges_declared_notes_for_the_owner_only(owner, ops, web):
    from tests.api.conftest import Caller, new_key

    declared = factories.note(owner, "A declared rule.", notebook_id=ops.id)
    plain = factories.note(owner, "A plain note.", notebook_id=ops.id)
    services.truth_declare(actor=owner, note_ids=[declared.id])  # the account's set
    page = web.get(f"/?notebook={ops.id}").content.decode()
    row = page[page.index(f'id="note-{declared.id}"'):]
    assert 'class="badge truth"' in row[:row.index("</li>")]
    row = page[page.index(f'id="note-{plain.id}"'):]
    assert 'class="badge truth"' not in row[:row.index("</li>")]
    # A key's list does not say which declarations name a note.
    from django.test import Client

    key, _ = new_key(owner)
    listed = Caller(Client(), key).get(f"/notes?notebookId={ops.id}").json()["data"]
    assert {item["note"]["id"] for item in listed} == {str(declared.id), str(plain.id)}
    assert all("declared" not in item for item in listed)
