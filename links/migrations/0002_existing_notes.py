# Links and names of the notes that exist (issue 38, docs/architecture.md "Links between
# notes"): every note's names first, then its links, each resolved against all of them.
# The owner migrates; FORCE row-level security would hide every row from it too.

from django.db import migrations

TABLES = ["notebooks_note", "notebooks_notebook", "links_link", "links_linkname"]
BATCH = 2000


def backfill(apps, schema_editor):
    from links.services import NoteText, links_backfill

    with schema_editor.connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
        cursor.execute("SELECT DISTINCT account_id FROM notebooks_note")
        accounts = [row[0] for row in cursor.fetchall()]
    for account_id in accounts:
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("SELECT id, notebook_id, content, source_path FROM notebooks_note "
                           "WHERE account_id = %s ORDER BY created_at, id", [account_id])
            notes = [NoteText(*row) for row in cursor.fetchall()]
        links_backfill(account_id, notes, schema_editor.connection.alias)
    with schema_editor.connection.cursor() as cursor:
        # The rows' deferred key checks run now: a table with pending ones cannot change.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for table in TABLES:
            cursor.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")


class Migration(migrations.Migration):

    dependencies = [("links", "0001_links")]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
