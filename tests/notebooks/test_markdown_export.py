"""Files out and back in (issue 22 item 3, issue 37 item 6): the Markdown export — one
file per note named by its title, notebooks as folders — from REST and `grove export
--markdown`, and `grove ingest` of that zip into an empty account giving the same notes
and, exported again, the same bytes. Also a plain
vault as a zip: the same rules as a folder, and members that try to leave the archive."""

from __future__ import annotations

import io
import zipfile
from collections import Counter
from io import StringIO

import pytest
import yaml
from django.core.management import call_command
from django.test import Client

from grove.kernel.tenancy import tenant
from grove.models import Account
from notebooks import services
from notebooks.models import Note, Notebook
from tests import factories
from tests.factories import op
from tests.notebooks.test_ingest import counts

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _model(embedder):
    return embedder


def library(actor) -> None:
    projects = factories.notebook(actor, "Projects")
    grove = factories.notebook(actor, "Grove", parent=projects.id)
    odd = factories.notebook(actor, "a/b: c?", parent=projects.id)
    factories.note(actor, "# Ship ingest\n\nBefore the archive.", kind="decision",
                   notebook_id=grove.id, tags=["release", "ingest"])
    factories.note(actor, "Fix: retry the upload.\n\n- step one\n- step two",
                   kind="solution", notebook_id=grove.id)
    factories.note(actor, "Same title\n\nfirst", notebook_id=grove.id)
    factories.note(actor, "Same title\n\nsecond", notebook_id=grove.id)
    factories.note(actor, 'Name with "quotes" / slashes: and *stars*?', notebook_id=odd.id)
    factories.note(actor, "Resume at step 3.", kind="handoff", task_id="build-42",
                   notebook_id=projects.id)
    factories.note(actor, "My own reminder: water the plants.", tags=["home"])
    archived = factories.note(actor, "An old fact, archived.", notebook_id=projects.id)
    services.note_archive(actor=actor, operation_id=op(), items=[archived.id])


def shape(actor) -> Counter:
    """Each live or archived note as (notebook path, content, kind, tags, task id)."""
    with tenant(actor):
        books = {nb.id: nb for nb in Notebook.objects.filter(deleted_at__isnull=True)}

        def path(notebook_id):
            names = []
            while notebook_id is not None:
                names.insert(0, books[notebook_id].name)
                notebook_id = books[notebook_id].parent_id
            return tuple(names)

        return Counter((path(n.notebook_id), n.content, n.kind, tuple(sorted(n.tags)),
                        n.task_id) for n in Note.objects.exclude(status="deleted"))


def export_files(zip_bytes: bytes) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(zip_bytes))
    return {name: archive.read(name) for name in archive.namelist() if not name.endswith("/")}


def test_the_zip_holds_one_file_per_note_named_by_its_title():
    owner = factories.owner("alice")
    library(owner)
    factories.note(owner, "# Garden plan\n\nBeds by the wall.", kind="note", tags=["home"])
    web = Client()
    web.force_login(Account.objects.get(id=owner.account_id))
    response = web.get("/v1/export/markdown")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    zipped = b"".join(response.streaming_content)
    names = zipfile.ZipFile(io.BytesIO(zipped)).namelist()
    files = export_files(zipped)
    assert len(files) == 9
    assert {"Projects/", "Projects/Grove/", "Projects/a b c/"} <= set(names)
    # A memory record: its kind and tags in `grove-export: 2` front matter, no ids or dates.
    text = files["Projects/Grove/Ship ingest.md"].decode()
    front = yaml.safe_load(text.split("---\n")[1])
    assert front == {"grove-export": 2, "kind": "decision", "tags": ["ingest", "release"]}
    assert text.endswith("---\n# Ship ingest\n\nBefore the archive.\n")
    # Same titles never clash, and need no id to tell them apart: the older keeps the name.
    assert files["Projects/Grove/Same title.md"].endswith(b"Same title\n\nfirst\n")
    assert files["Projects/Grove/Same title (2).md"].endswith(b"Same title\n\nsecond\n")
    assert all(not set('<>:"\\|?*').intersection(n) for n in names)
    assert "My own reminder water the plants.md" in files  # Personal: at the top
    handoff = yaml.safe_load(files["Projects/Resume at step 3.md"].decode().split("---\n")[1])
    assert handoff["task_id"] == "build-42"
    # A document note is its text, its tags added as the front matter it did not have.
    assert files["Garden plan.md"] == \
        b"---\ntags: [home]\n---\n# Garden plan\n\nBeds by the wall.\n"


def test_export_then_ingest_into_an_empty_account_gives_the_same_notes_and_files(tmp_path):
    alice = factories.owner("alice")
    library(alice)
    factories.note(alice, "---\naliases: [plan]\n---\n# Garden plan\n\nBeds.", kind="note",
                   tags=["home"])
    bundle = tmp_path / "alice.zip"
    err = StringIO()
    call_command("export", "--user", "alice", "--markdown", str(bundle), stderr=err)
    assert "9 notes in 3 notebooks" in err.getvalue()
    bob = factories.owner("bob")
    out = StringIO()
    # No --notebook: the export's top level is the account's (Personal, then notebooks).
    call_command("ingest", str(bundle), "--user", "bob", stdout=out)
    assert "9 notes created" in out.getvalue(), out.getvalue()
    mine = shape(bob)
    theirs = shape(alice)
    # The same notes in the same notebook tree; the document note's file gained its tags
    # in its front matter (the one thing a file adds), so its text says them now.
    garden = next(key for key in theirs if key[1].startswith("---\naliases"))
    tagged = (garden[0], "---\naliases: [plan]\ntags: [home]\n---\n# Garden plan\n\nBeds.",
              *garden[2:])
    # A notebook whose name no file system takes ("a/b: c?") comes back by its folder's.
    renamed = Counter({(tuple("a b c" if name == "a/b: c?" else name for name in path), *rest): n
                       for (path, *rest), n in theirs.items()})
    assert mine == renamed - Counter([garden]) + Counter([tagged])
    # … and a second export writes the same bytes.
    again = tmp_path / "bob.zip"
    call_command("export", "--user", "bob", "--markdown", str(again), stderr=StringIO())
    assert export_files(again.read_bytes()) == export_files(bundle.read_bytes())
    # A second run of the ingest changes nothing.
    before = counts(bob)
    rerun = StringIO()
    call_command("ingest", str(bundle), "--user", "bob", stdout=rerun)
    assert "9 unchanged" in rerun.getvalue() and counts(bob) == before


def test_files_of_the_first_export_format_still_come_back_whole(tmp_path):
    """`grove-export: 1` files (before issue 37: ids, notebook path) are still read: a
    memory record again, in the notebook path its front matter names."""
    factories.owner("dave")
    bundle = tmp_path / "old.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("Projects/Grove/Ship ingest 2f1c9a0b.md",
                         "---\ngrove-export: 1\nid: 2f1c9a0b-0000-4000-8000-000000000000\n"
                         "kind: decision\ntags: [release]\nnotebook: [Projects, Grove]\n"
                         "version: 3\nstatus: active\n---\nShip the ingest first.\n")
    out = StringIO()
    call_command("ingest", str(bundle), "--notebook", "Old", "--user", "dave", stdout=out)
    assert "1 notes created" in out.getvalue()
    with tenant(_actor("dave")):
        note = Note.objects.select_related("notebook__parent__parent").get()
        assert (note.content, note.kind, note.tags) == ("Ship the ingest first.", "decision",
                                                        ["release"])
        assert [note.notebook.parent.parent.name, note.notebook.parent.name,
                note.notebook.name] == ["Old", "Projects", "Grove"]


def test_a_vault_zip_follows_the_folder_rules_and_members_cannot_leave_it(tmp_path):
    factories.owner("carol")
    bundle = tmp_path / "vault.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr(".groundignore", "drafts/\n*.tmp.md\n")
        archive.writestr("guide.md", "# Guide\n\nKeep the moraine samples dry.")
        archive.writestr("drafts/idea.md", "not ready")
        archive.writestr("notes/scratch.tmp.md", "scratch")
        archive.writestr(".obsidian/app.md", "settings")
        archive.writestr("../escape.md", "outside")
        archive.writestr("/etc/abs.md", "absolute")
        archive.writestr("image.png", "png")
        archive.writestr("notes/field.md", "Field day on the glacier.")
    out = StringIO()
    call_command("ingest", str(bundle), "--notebook", "Vault", "--user", "carol",
                 "--subfolders", stdout=out)
    text = out.getvalue()
    assert "2 files into 'Vault'" in text
    assert "skipped (ignored): 2" in text
    assert "skipped (absolute path): 1\n  /etc/abs.md" in text
    assert "skipped (leaves the folder (..)): 1\n  ../escape.md" in text
    assert "skipped (hidden): 1" in text and "skipped (not a text note): 1" in text
    with tenant(_actor("carol")):
        notebooks = set(Notebook.objects.values_list("name", flat=True))
        contents = set(Note.objects.values_list("content", flat=True))
    assert notebooks == {"Vault", "notes"}
    assert contents == {"# Guide\n\nKeep the moraine samples dry.", "Field day on the glacier."}


def _actor(username):
    from grove.kernel.actor import Actor

    return Actor.for_session(Account.objects.get(username=username).id)


def test_files_whose_names_differ_only_in_case_come_back_at_their_own_paths(tmp_path):
    """A vault from a case-sensitive disk: each file keeps its exact path (one that
    clashes with nothing is never renumbered); a note written in Grove whose title
    matches one of them in another case takes a free name instead. The zip's folders
    and files carry modes any unzip tool can enter and read."""
    owner = factories.owner("carol")
    vault = tmp_path / "vault"
    (vault / "Inbox").mkdir(parents=True)
    names = ["Case.md", "case.md", "case (2).md", "CASE.md"]
    for name in names:
        (vault / "Inbox" / name).write_text(f"# {name}\n\nfrom {name}\n")
    call_command("ingest", str(vault), "--user", "carol", stdout=StringIO())
    with tenant(owner):
        inbox = Notebook.objects.get(name="Inbox")
    factories.note(owner, "case\n\nwritten in Grove", kind="note", notebook_id=inbox.id)
    bundle = tmp_path / "carol.zip"
    call_command("export", "--user", "carol", "--markdown", str(bundle), stderr=StringIO())
    files = export_files(bundle.read_bytes())
    for name in names:
        assert files[f"Inbox/{name}"] == (vault / "Inbox" / name).read_bytes()
    assert files["Inbox/case (3).md"].endswith(b"written in Grove\n")
    assert len(files) == 5
    modes = {info.filename: info.external_attr >> 16
             for info in zipfile.ZipFile(bundle).infolist()}
    assert modes["Inbox/"] == 0o40755 and modes["Inbox/Case.md"] == 0o100644


def test_tags_changed_in_grove_go_out_in_the_files_front_matter(tmp_path):
    """A tag added in Grove to an ingested file whose front matter lists tags is written
    into that list (the rest of the block byte for byte), so ingesting the export keeps
    it; a file whose tags were not changed comes back as it was; front matter that is
    not YAML is left alone."""
    owner = factories.owner("dora")
    vault = tmp_path / "vault"
    vault.mkdir()
    plan = ("---\r\ntitle: Plan\r\ntags:\r\n  - Garden\r\n  - \"#home\"\r\n"
            "status: draft\r\n---\r\n# Plan\r\n")
    files = {"plan.md": plan, "same.md": "---\ntags: [garden]\n---\n# Same\n",
             "odd.md": "---\n: not yaml [\n---\n# Odd\n"}
    for name, text in files.items():
        (vault / name).write_bytes(text.encode())
    call_command("ingest", str(vault), "--user", "dora", stdout=StringIO())
    with tenant(owner):
        notes = {n.source_path: n for n in Note.objects.all()}
    for path, tags in (("plan.md", ["extra", "garden", "home"]), ("odd.md", ["added"])):
        services.note_update(actor=owner, operation_id=op(), note_id=notes[path].id,
                             tags=tags)
    bundle = tmp_path / "dora.zip"
    call_command("export", "--user", "dora", "--markdown", str(bundle), stderr=StringIO())
    out = export_files(bundle.read_bytes())
    assert out["plan.md"] == (b"---\r\ntitle: Plan\r\ntags: [extra, garden, home]\r\n"
                              b"status: draft\r\n---\r\n# Plan\r\n")
    assert out["same.md"] == files["same.md"].encode()
    assert out["odd.md"] == files["odd.md"].encode()
    factories.owner("erin")
    call_command("ingest", str(bundle), "--user", "erin", stdout=StringIO())
    erin = _actor("erin")
    with tenant(erin):
        assert Note.objects.get(source_path="plan.md").tags == ["extra", "garden", "home"]
