"""Conversations and turns keep the client's UUID in `client_id`, unique per account; the
primary key becomes Grove's own (existing rows keep theirs, which equal their client
ids). Before this, a UUID already used by another account could not be used again, and
the refusal told the caller it existed."""

import uuid

from django.conf import settings
from django.db import migrations, models

BACKFILL = """
ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY;
UPDATE {table} SET client_id = id;
ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("ask", "0002_row_level_security"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField("conversation", "client_id",
                            models.UUIDField(editable=False, null=True)),
        migrations.AddField("turn", "client_id", models.UUIDField(editable=False, null=True)),
        # The table owner runs migrations, and FORCE makes row-level security apply even
        # to it: lift it for the copy only.
        migrations.RunSQL(BACKFILL.format(table="ask_conversation"), migrations.RunSQL.noop),
        migrations.RunSQL(BACKFILL.format(table="ask_turn"), migrations.RunSQL.noop),
        migrations.AlterField("conversation", "client_id", models.UUIDField(editable=False)),
        migrations.AlterField("turn", "client_id", models.UUIDField(editable=False)),
        migrations.AlterField("conversation", "id", models.UUIDField(
            default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
        migrations.AlterField("turn", "id", models.UUIDField(
            default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
        migrations.AddConstraint("conversation", models.UniqueConstraint(
            fields=["account", "client_id"], name="conversation_client_id_unique")),
        migrations.AddConstraint("turn", models.UniqueConstraint(
            fields=["account", "client_id"], name="turn_client_id_unique")),
    ]
