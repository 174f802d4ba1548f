"""`grove ingest` (issues 22 and 37, `notebooks.services.ingest`): a folder in, one whole
note per file, kept in step.

Real PostgreSQL, the real services and job queue; the embedder is a recording stand-in
so the test can see every text a model was given."""

import logging
import uuid
from io import StringIO
from pathlib import PurePosixPath

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from grove.interfaces.rendering import note_title
from grove.kernel import jobs
from grove.kernel.errors import Invalid
from grove.kernel.tenancy import tenant
from grove.models import Job
from notebooks import services
from notebooks.models import IngestedChunk, Note, Notebook, Revision
from notebooks.services.indexing import EMBED
from notebooks.services.ingest import ingest_file, ingest_prune, ingest_root
from passages.models import Passage, PassageVector
from tests import factories

pytestmark = pytest.mark.django_db

SECRET = "PIN-4821-never-stored"


@pytest.fixture
def owner():
    return factories.owner("alice")


def write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def paragraphs(word, count):
    return "\n\n".join(f"{word.capitalize()} paragraph {i}: " + " ".join([word] * 40) + "."
                       for i in range(count))


def run(folder, *args):
    out = StringIO()
    call_command("ingest", str(folder), "--notebook", "Vault", "--user", "alice", *args,
                 stdout=out)
    return out.getvalue()


def index_all(actor):
    while jobs.run_batch(account_id=actor.account_id, kind=EMBED):
        pass


def counts(actor):
    with tenant(actor):
        return {"notes": Note.objects.count(), "revisions": Revision.objects.count(),
                "jobs": Job.objects.count(), "ledger": IngestedChunk.objects.count()}


def live_contents(actor, path=None):
    with tenant(actor):
        rows = IngestedChunk.objects.filter(note__status="active").order_by("path", "chunk")
        if path is not None:
            rows = rows.filter(path=path)
        return [row.note.content for row in rows.select_related("note")]


def test_a_folder_comes_in_as_one_whole_note_per_file(tmp_path, owner, embedder):
    guide = ("---\ntags: [glaciers, field-work]\n---\n# Field guide\n\n"
             + paragraphs("moraine", 8) + "\n\n## Camp\n\n" + paragraphs("tent", 4))
    write(tmp_path, {"guide.md": guide + "\n", "notes/short.txt": "A short text note.",
                     "image.png": "not text"})
    output = run(tmp_path)
    assert "2 files into 'Vault'" in output and "skipped (not a text note): 1" in output
    with tenant(owner):
        vault = Notebook.objects.get(name="Vault", parent=None)
        rows = {r.path: r for r in IngestedChunk.objects.filter(root=vault)
                .select_related("note")}
        assert set(rows) == {"guide.md", "notes/short.txt"}
        note = rows["guide.md"].note
        # The file whole — front matter kept — as one document note with its tags.
        assert (note.content, note.kind, note.tags) == (guide, "note",
                                                        ["field-work", "glaciers"])
        assert note.notebook_id == vault.id and note.source_path == "guide.md"
        assert (rows["guide.md"].lead, rows["guide.md"].tail) == ("", "\n")
        passages = list(Passage.objects.filter(note_id=note.id).order_by("position"))
        assert len(passages) > 3 and passages[0].text.startswith("---\ntags:")
        assert passages[1].headings == ["Field guide"]
        assert passages[-1].headings == ["Field guide", "Camp"]
        short = rows["notes/short.txt"].note
        assert short.source_path == "notes/short.txt"
    # Titled by the first heading, else by the file's name.
    assert note_title(note.content, path=note.source_path) == "Field guide"
    assert note_title(short.content, path=short.source_path) == "short"


def test_private_regions_reach_no_table_no_vector_no_log_and_no_model(
        tmp_path, owner, embedder, caplog):
    caplog.set_level(logging.DEBUG)
    write(tmp_path, {"diary.md": f"# Diary\n\nPublic part.\n\n<private>My PIN: {SECRET}"
                                 f"</private>\n\nMore public text.\n<PRIVATE>{SECRET}"})
    run(tmp_path)
    index_all(owner)
    # The model saw the note, and nothing private.
    assert embedder.seen and not any(SECRET in text for text in embedder.seen)
    with tenant(owner), connection.cursor() as cursor:
        for table, column in (("notebooks_note", "content"), ("notebooks_revision", "content"),
                              ("notebooks_note", "search::text")):
            cursor.execute(f"SELECT count(*), count(*) FILTER (WHERE {column} LIKE %s) "  # noqa: S608
                           f"FROM {table}", ["%4821%"])
            assert cursor.fetchone() == (1, 0), table
        assert PassageVector.objects.count() == 1  # the one chunk, embedded
    assert SECRET not in caplog.text
    assert live_contents(owner) == ["# Diary\n\nPublic part.\n\n\n\nMore public text."]


def test_an_unchanged_tree_writes_nothing_the_second_time(tmp_path, owner, embedder):
    write(tmp_path, {"a.md": paragraphs("glacier", 6), "b/c.md": paragraphs("fjord", 3)})
    run(tmp_path, "--subfolders")
    index_all(owner)
    before = counts(owner)
    output = run(tmp_path, "--subfolders")
    assert counts(owner) == before
    assert "0 notes created, 0 updated, 0 retagged" in output
    assert f"{before['ledger']} unchanged" in output


def test_new_tags_are_a_metadata_only_revision_without_a_new_vector(tmp_path, owner, embedder):
    """A memory record the export wrote, whose tags changed and text did not: a tag-only
    revision. (A document's front matter is its text: a change there is an edit.)"""
    body = paragraphs("serac", 2)
    write(tmp_path, {"a.md": "---\ngrove-export: 2\nkind: fact\ntags: [ice]\n---\n" + body})
    run(tmp_path)
    index_all(owner)
    before = counts(owner)
    write(tmp_path, {"a.md": "---\ngrove-export: 2\nkind: fact\ntags: [ice, danger]\n---\n"
                             + body})
    output = run(tmp_path)
    after = counts(owner)
    assert "0 notes created, 0 updated, 1 retagged" in output
    assert after["revisions"] == before["revisions"] + 1
    assert after["jobs"] == before["jobs"]  # nothing to embed again
    with tenant(owner):
        [note] = Note.objects.all()
        assert (note.indexing, note.kind, note.tags) == ("ready", "fact", ["danger", "ice"])
        assert note.content == body


def test_a_changed_section_of_a_long_file_is_one_revision_embedding_only_what_changed(
        tmp_path, owner, embedder):
    sections = [f"## Section {i}\n\n" + paragraphs(f"word{i}", 4) for i in range(12)]
    write(tmp_path, {"book.md": "# Book\n\n" + "\n\n".join(sections)})
    run(tmp_path)
    index_all(owner)
    with tenant(owner):
        [note] = Note.objects.all()
        vectors = set(PassageVector.objects.values_list("id", flat=True))
    assert len(vectors) > 12
    before, seen = counts(owner), len(embedder.seen)
    sections[5] = "## Section 5\n\n" + paragraphs("changed", 4)
    write(tmp_path, {"book.md": "# Book\n\n" + "\n\n".join(sections)})
    assert "0 notes created, 1 updated" in run(tmp_path)
    index_all(owner)
    after = counts(owner)
    assert after["revisions"] == before["revisions"] + 1
    assert after["jobs"] == before["jobs"] + 1
    with tenant(owner):
        kept = vectors & set(PassageVector.objects.values_list("id", flat=True))
        assert Note.objects.get().version == 2
    embedded = len(embedder.seen) - seen
    assert 1 <= embedded <= 3 and len(kept) >= len(vectors) - 3


def test_a_file_longer_than_a_memory_kind_holds_is_skipped_with_the_reason(
        tmp_path, owner, embedder):
    write(tmp_path, {"long.md": paragraphs("tundra", 40), "short.md": "A fact."})
    output = run(tmp_path, "--kind", "fact")
    assert "skipped (too long for a fact" in output and "long.md" in output
    assert live_contents(owner) == ["A fact."]


def test_changed_text_is_a_revision_of_the_same_note_and_embedded_again(
        tmp_path, owner, embedder):
    write(tmp_path, {"a.md": "First version of the note."})
    run(tmp_path)
    index_all(owner)
    [first] = live_contents(owner)
    write(tmp_path, {"a.md": "Second version of the note."})
    assert "0 notes created, 1 updated" in run(tmp_path)
    with tenant(owner):
        [note] = Note.objects.all()
        assert (note.content, note.version) == ("Second version of the note.", 2)
        assert note.indexing != "ready"  # waits for its new vector
    assert first == "First version of the note."


def test_an_earlier_releases_part_notes_fold_into_one_note_keeping_history_shares_citations(
        tmp_path, owner, embedder):
    """Before issue 37 a long file was one note per chunk ("Part N"), one ledger row
    each. The next ingest folds them: chunk 0's note holds the file (a new revision, its
    history kept), the others are archived with theirs — a citation of one still reads —
    and a share link of a part now shows the whole file's note."""
    from notebooks.selectors.note_reads import note_read
    from notebooks.services.notes_many import NewNote, notes_create_many
    from sharing.services import share_create, share_visit

    text = "# Plan\n\n" + paragraphs("garden", 3)
    write(tmp_path, {"plan.md": text})
    vault = ingest_root(owner, "Vault")
    with tenant(owner):
        parts = notes_create_many(actor=owner, notebook_id=vault.id, kind="fact", items=[
            NewNote(f"Part {i}: " + paragraphs("garden", 1), []) for i in range(3)])
        IngestedChunk.objects.bulk_create([IngestedChunk(
            account_id=owner.account_id, root=vault, path="plan.md", chunk=i, note_id=note,
            file_hash="0" * 64, content_hash="0" * 64, ingested_at=timezone.now())
            for i, note in enumerate(parts)])
    link, _ = share_create(actor=owner, note_id=parts[2])
    output = run(tmp_path)
    assert "0 notes created, 1 updated" in output and "2 earlier parts folded" in output
    assert "a share link of an earlier part now shows the whole file's note" in output
    with tenant(owner):
        first = Note.objects.get(id=parts[0])
        assert (first.content, first.version, first.kind, first.status) == (
            text, 2, "note", "active")
        assert first.source_path == "plan.md"
        assert set(Note.objects.filter(id__in=parts[1:]).values_list("status", flat=True)) \
            == {"archived"}
        [row] = IngestedChunk.objects.filter(path="plan.md")
        assert (row.chunk, row.note_id) == (0, parts[0])
    # History and citations: every version of every part still reads.
    assert note_read(actor=owner, note_id=parts[0], version=1).content.startswith("Part 0")
    assert note_read(actor=owner, note_id=parts[2], version=1).content.startswith("Part 2")
    # The share link opens the whole file's note now.
    assert share_visit(token=link.token).note.content == text
    # And the next run writes nothing.
    before = counts(owner)
    assert "1 unchanged" in run(tmp_path) and counts(owner) == before


def test_without_a_notebook_a_folder_comes_in_at_the_top_level(tmp_path, owner, embedder):
    write(tmp_path, {"inbox.md": "Loose note.", "Work/plan.md": "# Plan\n\nShip.",
                     "Work/Q3/review.md": "Review."})
    out = StringIO()
    call_command("ingest", str(tmp_path), "--user", "alice", stdout=out)
    assert "3 files into the top level: 3 notes created" in out.getvalue()
    with tenant(owner):
        where = {n.source_path: n.notebook for n in Note.objects.select_related("notebook")}
        assert where["inbox.md"] is None  # Personal
        assert where["Work/plan.md"].name == "Work" and where["Work/plan.md"].parent is None
        assert where["Work/Q3/review.md"].parent == where["Work/plan.md"]
        assert IngestedChunk.objects.filter(root=None).count() == 3
    again = StringIO()
    call_command("ingest", str(tmp_path), "--user", "alice", stdout=again)
    assert "3 unchanged" in again.getvalue()


def test_prune_archives_the_notes_of_files_gone_and_remove_deletes_them(
        tmp_path, owner, embedder):
    write(tmp_path, {"keep.md": "Kept.", "gone.md": "Gone soon.", "later.md": "Also gone."})
    run(tmp_path)
    (tmp_path / "gone.md").unlink()
    output = run(tmp_path)
    assert "files gone" not in output  # without --prune nothing happens to it
    assert len(live_contents(owner)) == 3
    output = run(tmp_path, "--prune")
    assert "1 files gone from the folder: 1 notes archived" in output
    assert "gone: gone.md" in output
    with tenant(owner):
        row = IngestedChunk.objects.select_related("note").get(path="gone.md")
        assert row.note.status == "archived" and row.gone_at is not None
    # Archived once: a second prune does not count it again.
    assert "0 files gone" in run(tmp_path, "--prune")
    (tmp_path / "later.md").unlink()
    output = run(tmp_path, "--prune", "--remove")
    assert "2 files gone from the folder: 2 notes deleted" in output
    with tenant(owner):
        assert set(IngestedChunk.objects.values_list("path", flat=True)) == {"keep.md"}
        assert Note.objects.filter(status="deleted").count() == 2


def test_a_file_back_from_the_dead_comes_back(tmp_path, owner, embedder):
    write(tmp_path, {"a.md": "Here."})
    run(tmp_path)
    (tmp_path / "a.md").unlink()
    run(tmp_path, "--prune")
    write(tmp_path, {"a.md": "Here."})
    output = run(tmp_path)
    assert "1 notes created" in output
    assert live_contents(owner) == ["Here."]


def test_subfolders_become_sub_notebooks(tmp_path, owner, embedder):
    write(tmp_path, {"top.md": "Top.", "ice/glaciers/alps.md": "Alps.", "ice/poles.md": "Poles."})
    run(tmp_path, "--subfolders")
    with tenant(owner):
        where = {n.content: n.notebook for n in Note.objects.select_related("notebook")}
        assert where["Top."].name == "Vault"
        assert where["Poles."].name == "ice" and where["Poles."].parent.name == "Vault"
        assert where["Alps."].name == "glaciers" and where["Alps."].parent == where["Poles."]


def test_one_file_is_one_transaction_and_a_rerun_finishes_the_work(tmp_path, owner, embedder,
                                                                   monkeypatch):
    """A run that fails part way through a file (here: right after its notes were
    inserted) leaves nothing of that file and the other files done; running again
    finishes the work."""
    write(tmp_path, {f"{i:02}.md": paragraphs(f"word{i}", 12) for i in range(5)})
    import notebooks.services.ingest as service

    real = service.notes_create_many
    calls = {"n": 0}
    per_file = 1

    def dies_in_the_third_file(**kwargs):
        calls["n"] += 1
        made = real(**kwargs)
        if calls["n"] == 3:
            raise OSError("killed")
        return made

    monkeypatch.setattr(service, "notes_create_many", dies_in_the_third_file)
    with pytest.raises(CommandError, match="1 files could not be ingested"):
        run(tmp_path)
    with tenant(owner):
        done = sorted(set(IngestedChunk.objects.values_list("path", flat=True)))
        assert done == ["00.md", "01.md", "03.md", "04.md"]
        assert Note.objects.count() == IngestedChunk.objects.count() == 4 * per_file
    monkeypatch.setattr(service, "notes_create_many", real)
    assert f"{per_file} notes created, 0 updated, 0 retagged, {4 * per_file} unchanged" in (
        run(tmp_path))
    with tenant(owner):
        assert Note.objects.count() == IngestedChunk.objects.count() == 5 * per_file


def test_the_root_is_an_id_or_a_name_and_bad_input_changes_nothing(tmp_path, owner):
    book = factories.notebook(owner, "Existing")
    assert ingest_root(owner, str(book.id)).id == book.id
    assert ingest_root(owner, "Existing").id == book.id
    with pytest.raises(CommandError, match="no such file"):
        run(tmp_path / "missing")
    with pytest.raises(CommandError, match="no active account"):
        call_command("ingest", str(tmp_path), "--notebook", "X", "--user", "nobody")
    with pytest.raises(CommandError, match="not_found|No live notebook"):
        call_command("ingest", str(tmp_path), "--notebook", str(uuid.uuid4()),
                     "--user", "alice")
    with pytest.raises(CommandError, match="--remove goes with --prune"):
        run(tmp_path, "--remove")


def test_a_file_that_is_not_utf8_is_skipped_with_its_reason(tmp_path, owner, embedder):
    (tmp_path / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "ok.md").write_text("Fine.")
    output = run(tmp_path)
    assert "skipped (not UTF-8 text): 1" in output and "latin1.md" in output
    assert live_contents(owner) == ["Fine."]


def test_another_account_cannot_see_the_ledger(tmp_path, owner, embedder):
    write(tmp_path, {"a.md": "Mine."})
    run(tmp_path)
    stranger = factories.owner()
    with tenant(stranger):
        assert IngestedChunk.objects.count() == 0
    root = ingest_root(owner, "Vault")
    outcome = ingest_file(actor=owner, root=root, path=PurePosixPath("a.md"), raw=b"Mine.")
    assert outcome.unchanged == 1 and outcome.writes == 0
    assert ingest_prune(actor=owner, root=root, present={"a.md"}, remove=False).files == []


def test_many_notes_at_once_follow_the_rules_of_one(owner, embedder):
    """`notes_create_many`, ingest's write: cleaned and screened text, a revision and an
    embed job per note; the owner only, no handoff, no archived notebook."""
    from grove.kernel.errors import Conflict, Forbidden
    from notebooks.services.notes_many import NewNote, notes_create_many

    book = factories.notebook(owner, "Bulk")
    key = "AKIA" + "Z4QW8RT2NV6XKP3M"
    with tenant(owner):
        ids = notes_create_many(actor=owner, notebook_id=book.id, kind="fact", items=[
            NewNote("  First note.  ", ["Field"]), NewNote(f"Key {key} here.", [])])
    with tenant(owner):
        notes = {n.id: n for n in Note.objects.filter(id__in=ids)}
        assert [notes[i].content for i in ids] == ["First note.",
                                                   "Key [redacted: aws-access-key] here."]
        assert notes[ids[0]].tags == ["field"] and notes[ids[0]].version == 1
        assert Revision.objects.filter(note_id__in=ids, version=1).count() == 2
        assert Job.objects.filter(target_id__in=ids, kind=EMBED).count() == 2
    index_all(owner)
    assert embedder.seen and not any(key in text for text in embedder.seen)
    agent = factories.connection(owner, all_notebooks=True)
    with pytest.raises(Forbidden), tenant(agent):
        notes_create_many(actor=agent, notebook_id=book.id, kind="fact",
                          items=[NewNote("x", [])])
    with pytest.raises(Invalid), tenant(owner):
        notes_create_many(actor=owner, notebook_id=book.id, kind="handoff",
                          items=[NewNote("x", [])])
    services.notebook_archive(actor=owner, operation_id=factories.op(), notebook_id=book.id)
    with pytest.raises(Conflict), tenant(owner):
        notes_create_many(actor=owner, notebook_id=book.id, kind="fact",
                          items=[NewNote("x", [])])
