# The ingest ledger (issue 22, SPEC §13): one row per chunk of each file a folder brought
# into a notebook, with the note holding it and the hashes a rerun compares — under
# row-level security, pointing only at its own account's notebooks and notes.

import django.contrib.postgres.fields
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from grove.kernel.rls import enable_rls, same_account_references

REFERENCES = [
    ("notebooks_ingestedchunk", "ingestedchunk_root_same_account", "root_id",
     "notebooks_notebook"),
    ("notebooks_ingestedchunk", "ingestedchunk_note_same_account", "note_id",
     "notebooks_note"),
]


class Migration(migrations.Migration):

    dependencies = [
        ("notebooks", "0027_lexical_clauses"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="IngestedChunk",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("path", models.TextField()),
                ("chunk", models.PositiveIntegerField()),
                ("headings", django.contrib.postgres.fields.ArrayField(
                    base_field=models.TextField(), blank=True, default=list, size=None)),
                ("file_hash", models.CharField(max_length=64)),
                ("content_hash", models.CharField(max_length=64)),
                ("ingested_at", models.DateTimeField()),
                ("gone_at", models.DateTimeField(blank=True, null=True)),
                ("account", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                              related_name="+", to=settings.AUTH_USER_MODEL)),
                ("note", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                           related_name="+", to="notebooks.note")),
                ("root", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                           related_name="+", to="notebooks.notebook")),
            ],
            options={
                "db_table": "notebooks_ingestedchunk",
                "indexes": [models.Index(fields=["account", "note"],
                                         name="ingestedchunk_by_note")],
                "constraints": [models.UniqueConstraint(fields=("root", "path", "chunk"),
                                                        name="ingestedchunk_once")],
            },
        ),
        enable_rls("notebooks_ingestedchunk"),
        same_account_references(REFERENCES),
    ]
