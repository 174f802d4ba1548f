from django.db import migrations

from grove.kernel.rls import same_account_references

# (table, constraint, columns, referenced table)
REFERENCES = [
    ("notebooks_notebook", "notebook_parent_same_account", "parent_id", "notebooks_notebook"),
    ("notebooks_note", "note_notebook_same_account", "notebook_id", "notebooks_notebook"),
    ("notebooks_note", "note_created_by_same_account", "created_by_id", "grove_connection"),
    ("notebooks_revision", "revision_note_same_account", "note_id", "notebooks_note"),
    ("notebooks_revision", "revision_notebook_same_account", "notebook_id", "notebooks_notebook"),
    ("notebooks_revision", "revision_connection_same_account", "connection_id",
     "grove_connection"),
]


class Migration(migrations.Migration):
    """See grove 0003: a note, revision or notebook can only point at rows of its own
    account, whatever code writes it."""

    dependencies = [
        ("notebooks", "0002_row_level_security"),
        ("grove", "0003_same_account_references"),
    ]

    operations = [
        same_account_references(REFERENCES, keys=[
            ("notebooks_notebook", "notebook_account_id_key"),
            ("notebooks_note", "note_account_id_key")]),
    ]
