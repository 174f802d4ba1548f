"""Links resolved on every save (issue 38 item 1; docs/architecture.md, "Links between
notes"): every form of link, by title, alias or file name, within the account; an
earlier link resolves when its note is made; a renamed, deleted or restored note moves
the links that ask for it; of two notes of one name the nearest wins."""

import pytest
from django.test import Client

from grove.kernel.tenancy import tenant
from links.models import Link, LinkName
from links.parsing import extract
from notebooks import services
from tests import factories
from tests.api.conftest import Caller, data, new_key
from tests.factories import op

pytestmark = pytest.mark.django_db


def targets(actor, note_id) -> list[tuple[str, object]]:
    with tenant(actor):
        return list(Link.objects.filter(note_id=note_id).order_by("position")
                    .values_list("target", "target_note_id"))


def doc(actor, text, **kwargs):
    return factories.note(actor, text, kind="note", **kwargs)


def test_every_form_of_link_resolves_by_title_alias_or_file_name():
    owner = factories.owner()
    alpha = doc(owner, "# Alpha\n\nThe first.")
    beta = doc(owner, "---\naliases: [B, The Beta]\n---\n# Beta\n\nThe second.")
    projects = factories.notebook(owner, "Projects")
    gamma = doc(owner, "# Gamma plan\n\nThird.", notebook_id=projects.id)
    text = ("# Hub\n\nSee [[Alpha]], [[alpha|the first one]], [[Alpha#Details]],\n"
            "[[the beta]], [[Projects/Gamma plan]], [[projects/gamma PLAN|plan]],\n"
            "[a relative link](Projects/Gamma%20plan.md) and [[Nowhere]].\n\n"
            "`[[in code]]`\n\n```\n[[in a fence]]\n```\n")
    hub = doc(owner, text)
    assert targets(owner, hub.id) == [
        ("Alpha", alpha.id), ("alpha", alpha.id), ("Alpha", alpha.id), ("the beta", beta.id),
        ("Projects/Gamma plan", gamma.id), ("projects/gamma PLAN", gamma.id),
        ("Projects/Gamma plan.md", gamma.id), ("Nowhere", None)]
    with tenant(owner):
        row = Link.objects.get(note_id=hub.id, position=3)
        assert (row.heading, text[row.start:row.end]) == ("Details", "[[Alpha#Details]]")
        assert set(LinkName.objects.filter(note_id=beta.id).values_list("key", "kind")) == {
            ("beta", "title"), ("b", "alias"), ("the beta", "alias")}


def test_offsets_are_where_the_links_are_written():
    text = ("---\ntitle: [[not a link]]\n---\n# T\r\n\r\n| a | [[Cell]] |\n|---|---|\n"
            "| [[Row]] | x |\n\n> quote [[Quoted]]\n\n- item [label](x.md) [[In [[side]]]]\n")
    found = extract(text)
    assert [(f.written.target, text[f.start:f.end]) for f in found] == [
        ("Cell", "[[Cell]]"), ("Row", "[[Row]]"), ("Quoted", "[[Quoted]]"), ("x.md", "x.md"),
        ("side", "[[side]]")]


def test_a_note_made_later_resolves_every_earlier_link_to_it():
    owner = factories.owner()
    first = doc(owner, "Waiting for [[Delta]].")
    second = doc(owner, "Also [[delta]] and [[Delta|d]].")
    assert [t for _, t in targets(owner, first.id) + targets(owner, second.id)] == [None] * 3
    delta = doc(owner, "# Delta\n\nHere now.")
    assert [t for _, t in targets(owner, first.id) + targets(owner, second.id)] == [delta.id] * 3


def test_renaming_deleting_and_restoring_a_note_moves_its_links():
    owner = factories.owner()
    target = doc(owner, "# Epsilon\n\nBody.")
    source = doc(owner, "Link to [[Epsilon]].")
    assert targets(owner, source.id) == [("Epsilon", target.id)]
    renamed = services.note_update(actor=owner, operation_id=op(), note_id=target.id,
                                   content="# Zeta\n\nBody.")
    assert targets(owner, source.id) == [("Epsilon", None)]
    services.note_update(actor=owner, operation_id=op(), note_id=target.id,
                         expected_version=renamed.version, content="# Epsilon\n\nBody.")
    assert targets(owner, source.id) == [("Epsilon", target.id)]
    services.note_forget(actor=owner, operation_id=op(), items=[target.id])
    assert targets(owner, source.id) == [("Epsilon", None)]
    services.note_undelete(actor=owner, operation_id=op(), note_id=target.id)
    assert targets(owner, source.id) == [("Epsilon", target.id)]


def test_of_two_notes_of_one_name_the_nearest_wins():
    owner = factories.owner()
    work = factories.notebook(owner, "Work")
    home = factories.notebook(owner, "Home")
    inner = factories.notebook(owner, "Inner", parent=work.id)
    at_work = doc(owner, "# Meeting\n\nwork", notebook_id=work.id)
    at_home = doc(owner, "# Meeting\n\nhome", notebook_id=home.id)
    from_work = doc(owner, "# Source\n\n[[Meeting]]", notebook_id=work.id)
    from_home = doc(owner, "# Source\n\n[[Meeting]]", notebook_id=home.id)
    from_inner = doc(owner, "# Source\n\n[[Meeting]]", notebook_id=inner.id)  # shares "Work"
    named = doc(owner, "# Source\n\n[[Home/Meeting]]", notebook_id=work.id)  # folders written win
    assert [targets(owner, n.id)[0][1] for n in (from_work, from_home, from_inner, named)] \
        == [at_work.id, at_home.id, at_work.id, at_home.id]


def test_a_link_never_reaches_another_account():
    mine, theirs = factories.owner(), factories.owner()
    doc(theirs, "# Secret plan\n\nTheirs.")
    source = doc(mine, "See [[Secret plan]].")
    assert targets(mine, source.id) == [("Secret plan", None)]


def test_reads_show_a_link_out_of_the_grant_as_unresolved_and_hide_its_backlinks():
    owner = factories.owner()
    shared = factories.notebook(owner, "Shared")
    private = factories.notebook(owner, "Private")
    hidden = doc(owner, "# Hidden\n\nPrivate [[Open]] context.", notebook_id=private.id)
    seen = doc(owner, "# Open\n\nLinks to [[Hidden]] and [[Open]].", notebook_id=shared.id)
    caller = Caller(Client(), new_key(owner, personal=False, all_notebooks=False,
                                      notebooks=[shared.id])[0])
    read = data(caller.get(f"/notes/{seen.id}"))
    assert read["links"] == [{"target": "Hidden", "form": "wiki"},
                             {"target": "Open", "form": "wiki", "noteId": str(seen.id),
                              "title": "Open"}]
    assert read["backlinks"] == []  # the one linking note is outside the grant
    assert "Private" not in str(read) and str(hidden.id) not in str(read)
    full = data(Caller(Client(), new_key(owner)[0]).get(f"/notes/{seen.id}"))
    assert full["links"][0] == {"target": "Hidden", "form": "wiki", "noteId": str(hidden.id),
                                "title": "Hidden"}
    assert full["backlinks"] == [{"noteId": str(hidden.id), "title": "Hidden",
                                  "context": "Hidden Private Open context."}]


def test_an_imported_account_resolves_its_links_as_the_original_did():
    """`grove import` (the JSON export) maintains links like any save: a note imported
    before the note it links to resolves once that note arrives."""
    from notebooks.services.portability import account_import, export_records

    owner = factories.owner()
    hub = doc(owner, "# Hub\n\nSee [[Zeta]] and [[Nowhere]].")
    zeta = doc(owner, "# Zeta\n\nLast, made after the hub.")
    assert targets(owner, hub.id) == [("Zeta", zeta.id), ("Nowhere", None)]
    fresh = factories.owner()
    account_import(actor=fresh, records=list(export_records(actor=owner)))
    with tenant(fresh):
        links = list(Link.objects.values_list("target", "target_note__content"))
    assert sorted(links, key=str) == sorted([("Zeta", "# Zeta\n\nLast, made after the hub."),
                                             ("Nowhere", None)], key=str)


def test_an_edit_keeps_the_links_it_did_not_change_and_rewrites_the_rest():
    """A save keeps the rows of links that still say the same (their places follow the
    text) and writes the others anew: after edits that add, drop, change and move links,
    the rows are exactly those a save from nothing writes."""
    from links.services import NoteText, links_sync

    owner = factories.owner()
    for name in ("Alpha", "Beta", "Gamma", "Delta"):
        doc(owner, f"# {name}\n\nAbout {name}.")
    hub = doc(owner, "# Hub\n\n[[Alpha]] then [[Beta]] then [[Gamma]].")

    def rows():
        with tenant(owner):
            return list(Link.objects.filter(note_id=hub.id).order_by("position").values_list(
                "id", "position", "start", "end", "target", "target_note_id"))

    first = rows()
    edits = ["# Hub\n\nNow [[Delta]], [[Alpha]] then [[Beta]] then [[Gamma]].",  # one in front
             "# Hub\n\nNow [[Delta]], [[Alpha]] then [[Gamma]].",  # one dropped
             "# Hub\n\nNow [[Delta]], [[Alpha|A]] then [[Gamma]] and [[Nowhere]].",
             "# Hub\n\n[[Gamma]] first. Now [[Delta]], [[Alpha|A]] and [[Nowhere]]."]
    kept_ids = []
    for text in edits:
        before = {row[4]: row[0] for row in rows()}
        services.note_update(actor=owner, operation_id=op(), note_id=hub.id, content=text)
        after = rows()
        kept_ids.append({target for target, row_id in before.items()
                         if row_id in {row[0] for row in after}})
        with tenant(owner):
            links_sync(owner.account_id, [NoteText(hub.id, None, text)], placed=True)
        assert [row[1:] for row in rows()] == [row[1:] for row in after], text
        assert [(row[2], row[3]) for row in after] == [
            (f.start, f.end) for f in extract(text)]
    # The unchanged links kept their rows through each edit; a changed one did not.
    assert kept_ids[0] == {"Alpha", "Beta", "Gamma"} and "Delta" not in kept_ids[0]
    assert kept_ids[1] == {"Delta", "Alpha", "Gamma"}
    assert "Alpha" not in kept_ids[2] and {"Delta", "Gamma"} <= kept_ids[2]
    assert first[0][1:] == (1, 7, 16, "Alpha", first[0][5]) and first[0][5] is not None


def test_hostile_links_are_stored_or_left_unresolved_never_an_error():
    owner = factories.owner()
    long_path = "x" * 8000
    text = (f"# Odd\n\n[long]({long_path}.md) [[{'y' * 400}]] [[#]] [[|]] [[../../up]] "
            f"[deep]({'a/' * 100}b.md) [[ok]]")
    odd = doc(owner, text)
    made = doc(owner, "# ok\n\nHere.")
    assert [target for _, target in targets(owner, odd.id)][-1] == made.id
    assert all(target is None for _, target in targets(owner, odd.id)[:-1])


def test_a_moved_note_resolves_its_own_links_from_its_new_place():
    owner = factories.owner()
    work = factories.notebook(owner, "Work")
    home = factories.notebook(owner, "Home")
    at_work = doc(owner, "# Budget\n\nWork's.", notebook_id=work.id)
    at_home = doc(owner, "# Budget\n\nHome's.", notebook_id=home.id)
    hub = doc(owner, "# Hub\n\nSee [[Budget]].", notebook_id=work.id)
    assert targets(owner, hub.id) == [("Budget", at_work.id)]
    services.note_move(actor=owner, operation_id=op(), note_ids=[hub.id],
                       notebook_id=home.id)
    assert targets(owner, hub.id) == [("Budget", at_home.id)]  # the nearest, from home


def test_renaming_or_moving_a_notebook_moves_the_links_that_name_its_folder():
    owner = factories.owner()
    projects = factories.notebook(owner, "Projects")
    plan = doc(owner, "# Plan\n\nShip.", notebook_id=projects.id)
    hub = doc(owner, "# Hub\n\n[[Projects/Plan]] and [[Ventures/Plan]].")
    assert targets(owner, hub.id) == [("Projects/Plan", plan.id), ("Ventures/Plan", None)]
    services.notebook_update(actor=owner, operation_id=op(), notebook_id=projects.id,
                             name="Ventures")
    assert targets(owner, hub.id) == [("Projects/Plan", None), ("Ventures/Plan", plan.id)]
    outer = factories.notebook(owner, "Outer")
    services.notebook_update(actor=owner, operation_id=op(), notebook_id=projects.id,
                             parent_id=outer.id)
    assert targets(owner, hub.id) == [("Projects/Plan", None), ("Ventures/Plan", plan.id)]
    inner = doc(owner, "# Inner\n\n[the plan](Plan.md)", notebook_id=projects.id)
    assert targets(owner, inner.id) == [("Plan.md", plan.id)]
