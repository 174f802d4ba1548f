from django.db import migrations

from grove.kernel.rls import enable_rls

# (table, constraint, columns, referenced table)
REFERENCES = [
    ("ask_conversation", "conversation_notebook_same_account", "notebook_id",
     "notebooks_notebook"),
    ("ask_conversation", "conversation_connection_same_account", "connection_id",
     "grove_connection"),
    ("ask_turn", "turn_conversation_same_account", "conversation_id", "ask_conversation"),
    ("ask_turn", "turn_connection_same_account", "connection_id", "grove_connection"),
]


class Migration(migrations.Migration):
    """Conversations and turns are account rows like notes: row-level security, and
    references only to rows of the same account (see grove 0003)."""

    dependencies = [
        ("ask", "0001_conversations"),
        ("grove", "0003_same_account_references"),
        ("notebooks", "0003_same_account_references"),
    ]

    operations = [
        enable_rls("ask_conversation"),
        enable_rls("ask_turn"),
        migrations.RunSQL(
            [
                "ALTER TABLE ask_conversation ADD CONSTRAINT conversation_account_id_key "
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
                "ALTER TABLE ask_conversation DROP CONSTRAINT conversation_account_id_key",
            ],
        ),
    ]
