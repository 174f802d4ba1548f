from django.db import migrations

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
        migrations.RunSQL(
            [
                "ALTER TABLE notebooks_notebook ADD CONSTRAINT notebook_account_id_key "
                "UNIQUE (account_id, id)",
                "ALTER TABLE notebooks_note ADD CONSTRAINT note_account_id_key "
                "UNIQUE (account_id, id)",
                *[
                    f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY (account_id, {column}) "
                    f"REFERENCES {target} (account_id, id)"
                    for table, name, column, target in REFERENCES
                ],
            ],
            [
                *[f"ALTER TABLE {table} DROP CONSTRAINT {name}"
                  for table, name, _, _ in REFERENCES],
                "ALTER TABLE notebooks_note DROP CONSTRAINT note_account_id_key",
                "ALTER TABLE notebooks_notebook DROP CONSTRAINT notebook_account_id_key",
            ],
        ),
    ]
