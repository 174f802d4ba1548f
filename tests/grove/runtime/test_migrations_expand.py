"""Migrations after the previous release only expand the schema (README, "Upgrading"):
an older web process or worker still running during a rolling upgrade must find every
table and column it uses, and be able to insert rows without naming new columns."""

from __future__ import annotations

import subprocess
from pathlib import Path

from django.db import migrations, models
from django.db.migrations.loader import MigrationLoader
from django.db.models.fields import NOT_PROVIDED

ROOT = Path(__file__).resolve().parents[3]
PREVIOUS_RELEASE = (Path(__file__).with_name("previous_release")).read_text().split()[0]
APPS = ("grove", "passages", "links", "notebooks", "ask", "sharing")

# Operations an older release's code cannot notice.
EXPANDING = (migrations.CreateModel, migrations.AddIndex, migrations.AlterModelOptions)
# Operations that may or may not: SQL and code can do anything, a new constraint can
# refuse the old release's writes, a removed one can drop a uniqueness it relies on.
# Each migration holding one is reviewed and listed here with why it expands only.
REVIEWED = {
    ("grove", "0014_account_tombstone"):
        "grove_current_account() keeps its signature and only answers NULL for a deleted "
        "account; a trigger refuses changing a tombstone, which no release did",
    ("grove", "0015_sessions_keyed_by_mac"):
        "no schema change: existing session keys become the MAC the new store looks up; "
        "an old process still reads and writes the same table (its sessions are not shared "
        "with the new release's during the rollout: visitors sign in again)",
    ("grove", "0016_oauth_codes_hashed"):
        "no schema change: unredeemed codes become their SHA-256 and token columns that "
        "still held a token are emptied (the toolkit looks tokens up by checksum); an old "
        "process's codes and the new one's are not interchangeable for the minute a code "
        "lives",
    ("grove", "0017_connection_home"):
        "a new key-lookup function beside the old one, which the old release keeps "
        "calling, unchanged and still granted; a nullable column it never writes",
    ("notebooks", "0030_ingest_upload_parts"):
        "a new table's row-level security and its same-account foreign key; nothing an "
        "older release reads or writes changes",
    ("sharing", "0004_share_member_count"):
        "adds grove_share_members and grove_share_count; grove_share_notes keeps its "
        "signature and its answers (its conditions moved into grove_share_members)",
    ("notebooks", "0032_document_notes"):
        "loosens the content and kind checks (a new kind, `note`, may hold up to 1,000,000 "
        "characters; every other kind still 6,000) — every row the old release writes "
        "passes; the kind fields' AlterField changes only Django's choices, not the column",
    ("notebooks", "0033_files_whole"):
        "the ingest ledger's root may be null (the account's top level; the old release "
        "always writes one) and a partial unique constraint over those rows only, which "
        "the old release never writes",
    ("passages", "0001_initial"):
        "new tables (passages and their vectors) with their row-level security, same-account "
        "keys, a backfill from the notes and the old vectors, and HNSW indexes; the old "
        "release never reads them and its tables stay as they were",
    ("passages", "0002_lexical_passages"):
        "term statistics count passages: the note triggers' functions keep their names and "
        "an older release calls neither; a new function for the arm over passages, the old "
        "one left as it was; a read policy for the schema owner on the new table; a trigger "
        "on the old vectors' table that only marks a note's passages as behind (the old "
        "release's writes to it go through unchanged)",
    ("links", "0001_links"):
        "new tables (links and the names notes answer to) with their row-level security "
        "and same-account keys; the old release never reads or writes them",
    ("links", "0002_existing_notes"):
        "fills the new tables from the notes' text; the old release's tables are read, "
        "not changed (row-level security is lifted for the owner during the backfill and "
        "forced again, as passages 0001 does)",
    ("sharing", "0005_share_links"):
        "a new read function for share pages and a read policy for the schema owner on "
        "the new links table; nothing the old release calls changes",
    ("notebooks", "0031_search_words"):
        "adds the unaccent extension, new functions (grove_words, grove_lookup, "
        "grove_lookup_matches), a generated column the old release never names (its "
        "inserts leave it to the database), an index and a text search configuration; "
        "nothing the old release calls changes",
}


def contracting(operation: migrations.operations.base.Operation,
                reviewed: str | None = None) -> str | None:
    """Why an operation would break a process of the previous release, or None."""
    if isinstance(operation, migrations.AddField):
        field = operation.field
        if field.null or field.db_default is not NOT_PROVIDED or field.many_to_many:
            return None
        return (f"AddField {operation.model_name}.{operation.name} is NOT NULL without "
                "db_default: the old release's inserts fail")
    if isinstance(operation, EXPANDING):
        return None
    if isinstance(operation, migrations.RunSQL | migrations.RunPython | migrations.AddConstraint
                  | migrations.RemoveConstraint | migrations.RemoveIndex
                  | migrations.AlterField) and reviewed:
        return None
    return f"{type(operation).__name__} removes or changes what the old release may use"


def released_migrations() -> set[tuple[str, str]]:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", PREVIOUS_RELEASE, "--",
         *(f"{app}/migrations" for app in APPS)], capture_output=True, text=True, check=False)
    assert listed.returncode == 0, (
        f"the previous release {PREVIOUS_RELEASE} is not in this clone's history: "
        f"{listed.stderr}")
    found = set()
    for path in listed.stdout.split():
        app, _, name = path.split("/")
        if name.endswith(".py") and name[0].isdigit():
            found.add((app, name[:-3]))
    assert found, "the previous release has no migrations?"
    return found


def test_migrations_since_the_previous_release_only_expand():
    loader = MigrationLoader(None, ignore_no_migrations=True)
    released = released_migrations()
    new = sorted(key for key in loader.disk_migrations
                 if key[0] in APPS and key not in released)
    problems = [f"{app}.{name}: {why}"
                for app, name in new
                for operation in loader.disk_migrations[(app, name)].operations
                if (why := contracting(operation, REVIEWED.get((app, name))))]
    assert problems == []
    assert released <= set(loader.disk_migrations), "a released migration was removed"


def test_the_check_refuses_contracting_operations():
    assert contracting(migrations.RemoveField("note", "content"))
    assert contracting(migrations.RenameField("note", "content", "body"))
    assert contracting(migrations.DeleteModel("Note"))
    assert contracting(migrations.AlterField("note", "content", models.TextField()))
    assert contracting(migrations.AddField("note", "x", models.IntegerField(default=0)))
    assert contracting(migrations.AddField("note", "x", models.IntegerField(null=True))) is None
    assert contracting(migrations.AddField(
        "note", "x", models.IntegerField(default=0, db_default=0))) is None
    drop = migrations.RunSQL("ALTER TABLE notebooks_note DROP COLUMN content")
    assert contracting(drop)
    assert contracting(drop, reviewed="a reason") is None
    assert contracting(migrations.RemoveConstraint("operation", "operation_unique"))
    assert contracting(migrations.AddConstraint("note", models.CheckConstraint(
        condition=models.Q(version__gte=1), name="v")))
