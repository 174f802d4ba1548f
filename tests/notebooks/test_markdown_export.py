"""Files out and back in (issue 22 item 3): the Markdown export — one file per note with
YAML front matter, notebooks as folders — from REST and `grove export --markdown`, and
`grove ingest` of that zip into an empty account giving the same notes. Also a plain
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


def test_the_zip_holds_one_file_per_note_with_front_matter():
    owner = factories.owner("alice")
    library(owner)
    web = Client()
    web.force_login(Account.objects.get(id=owner.account_id))
    response = web.get("/v1/export/markdown")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    names = archive.namelist()
    files = [n for n in names if n.endswith(".md")]
    assert len(files) == 8
    assert {"Projects/", "Projects/Grove/", "Projects/a b c/"} <= set(names)
    ship = next(n for n in files if n.startswith("Projects/Grove/Ship ingest "))
    text = archive.read(ship).decode()
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["grove-export"] == 1 and front["kind"] == "decision"
    assert sorted(front["tags"]) == ["ingest", "release"]
    assert front["notebook"] == ["Projects", "Grove"] and front["version"] == 1
    assert {"id", "created", "updated", "status"} <= set(front)
    assert text.endswith("# Ship ingest\n\nBefore the archive.\n")
    # Same titles never clash; unsafe characters never reach a name.
    same = [n for n in files if "/Same title " in n]
    assert len(same) == 2 and len(set(same)) == 2
    assert all(not set('<>:"\\|?*').intersection(n) for n in names)
    assert any(n.startswith("My own reminder") for n in files)  # Personal: at the top
    archived = next(n for n in files if "An old fact" in n)
    assert yaml.safe_load(archive.read(archived).decode().split("---\n")[1])["status"] \
        == "archived"


def test_export_then_ingest_into_an_empty_account_gives_the_same_notes(tmp_path):
    alice = factories.owner("alice")
    library(alice)
    bundle = tmp_path / "alice.zip"
    err = StringIO()
    call_command("export", "--user", "alice", "--markdown", str(bundle), stderr=err)
    assert "8 notes in 3 notebooks" in err.getvalue()
    bob = factories.owner("bob")
    out = StringIO()
    call_command("ingest", str(bundle), "--notebook", "From Alice", "--user", "bob",
                 stdout=out)
    assert "8 notes created" in out.getvalue()
    mine = shape(bob)
    # The same notes, in the same notebook tree, under the notebook ingest was given.
    expected = Counter({(("From Alice", *path), content, kind, tags, task): n
                        for (path, content, kind, tags, task), n in shape(alice).items()})
    assert mine == expected
    # A second run changes nothing.
    before = counts(bob)
    again = StringIO()
    call_command("ingest", str(bundle), "--notebook", "From Alice", "--user", "bob",
                 stdout=again)
    assert "8 unchanged" in again.getvalue() and counts(bob) == before


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
