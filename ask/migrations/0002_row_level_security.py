from django.db import migrations

from grove.kernel.rls import enable_rls, same_account_references

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
        same_account_references(REFERENCES, keys=[("ask_conversation",
                                                    "conversation_account_id_key")]),
    ]
