# Passages (issue 37, docs/architecture.md "Documents and passages"): every note cut into
# passages with their vectors. Existing notes are memory records of at most 6,000
# characters: each becomes one passage (its whole text, no heading trail) and takes the
# vector already made from that text — nothing is embedded again.

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
import django.contrib.postgres.search
import django.db.models.deletion
import django.utils.timezone
import pgvector.django
from django.conf import settings
from django.db import migrations, models

from grove.kernel.rls import enable_rls
from passages.vectors import hnsw_index_sql

# The owner migrates; FORCE row-level security would hide every row from it too.
BACKFILL = r"""
ALTER TABLE notebooks_note NO FORCE ROW LEVEL SECURITY;
ALTER TABLE notebooks_noteembedding NO FORCE ROW LEVEL SECURITY;
INSERT INTO passages_passage (account_id, note_id, position, start, "end", headings, trail,
                              text, hash)
SELECT account_id, id, 1, 0, length(content), '{}', '', content,
       encode(sha256(convert_to(E'\n\n' || content, 'UTF8')), 'hex')
FROM notebooks_note;
INSERT INTO passages_passagevector (account_id, passage_id, note_id, profile, dimension,
                                    embedding, created_at)
SELECT e.account_id, p.id, e.note_id, e.profile, e.dimension, e.embedding, e.created_at
FROM notebooks_noteembedding e
JOIN notebooks_note n ON n.id = e.note_id AND n.content_hash = e.content_hash
JOIN passages_passage p ON p.note_id = e.note_id AND p.position = 1;
UPDATE notebooks_note SET passages_hash = content_hash;
ALTER TABLE notebooks_noteembedding FORCE ROW LEVEL SECURITY;
ALTER TABLE notebooks_note FORCE ROW LEVEL SECURITY;
"""

# Every reference stays within its account, and goes with what it points at.
SAME_ACCOUNT = [
    "ALTER TABLE passages_passage ADD CONSTRAINT passage_account_id_key UNIQUE (account_id, id)",
    "ALTER TABLE passages_passage ADD CONSTRAINT passage_note_same_account FOREIGN KEY "
    "(account_id, note_id) REFERENCES notebooks_note (account_id, id) ON DELETE CASCADE",
    "ALTER TABLE passages_passagevector ADD CONSTRAINT passagevector_passage_same_account "
    "FOREIGN KEY (account_id, passage_id) REFERENCES passages_passage (account_id, id) "
    "ON DELETE CASCADE",
    "ALTER TABLE passages_passagevector ADD CONSTRAINT passagevector_note_same_account "
    "FOREIGN KEY (account_id, note_id) REFERENCES notebooks_note (account_id, id) "
    "ON DELETE CASCADE",
]


def vector_indexes(apps, schema_editor):
    """An HNSW index for each dimension the copied vectors have (384: the local model)."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT dimension FROM passages_passagevector")
        dimensions = {row[0] for row in cursor.fetchall()} | {384}
        for dimension in sorted(dimensions):
            cursor.execute(hnsw_index_sql(dimension))


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("notebooks", "0032_document_notes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Passage",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("position", models.PositiveIntegerField()),
                ("start", models.PositiveIntegerField()),
                ("end", models.PositiveIntegerField()),
                ("headings", django.contrib.postgres.fields.ArrayField(
                    base_field=models.TextField(), blank=True, default=list, size=None)),
                ("trail", models.TextField(blank=True, default="")),
                ("text", models.TextField()),
                ("hash", models.CharField(max_length=64)),
                ("search", models.GeneratedField(
                    db_persist=True,
                    expression=django.contrib.postgres.search.SearchVector(
                        "trail", "text", config="english"),
                    output_field=django.contrib.postgres.search.SearchVectorField())),
                ("account", models.ForeignKey(on_delete=django.db.models.deletion.DO_NOTHING,
                                              related_name="+", to=settings.AUTH_USER_MODEL)),
                ("note", models.ForeignKey(on_delete=django.db.models.deletion.DO_NOTHING,
                                           related_name="passages", to="notebooks.note")),
            ],
            options={
                "db_table": "passages_passage",
                "indexes": [
                    models.Index(fields=["note", "hash"], name="passage_by_hash"),
                    django.contrib.postgres.indexes.GinIndex(fields=["search"],
                                                             name="passage_search"),
                ],
                "constraints": [
                    models.UniqueConstraint(deferrable=models.Deferrable["DEFERRED"],
                                            fields=("note", "position"),
                                            name="passage_position_once"),
                    models.CheckConstraint(condition=models.Q(position__gte=1),
                                           name="passage_position_positive"),
                    models.CheckConstraint(condition=models.Q(start__lt=models.F("end")),
                                           name="passage_span_not_empty"),
                ],
            },
        ),
        migrations.CreateModel(
            name="PassageVector",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("profile", models.CharField(max_length=200)),
                ("dimension", models.PositiveIntegerField()),
                ("embedding", pgvector.django.VectorField()),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("account", models.ForeignKey(on_delete=django.db.models.deletion.DO_NOTHING,
                                              related_name="+", to=settings.AUTH_USER_MODEL)),
                ("note", models.ForeignKey(on_delete=django.db.models.deletion.DO_NOTHING, related_name="+",
                                           to="notebooks.note")),
                ("passage", models.ForeignKey(on_delete=django.db.models.deletion.DO_NOTHING,
                                              related_name="vectors", to="passages.passage")),
            ],
            options={
                "db_table": "passages_passagevector",
                "indexes": [models.Index(fields=["note", "profile"],
                                         name="passage_vector_note")],
                "constraints": [models.UniqueConstraint(fields=("passage", "profile"),
                                                        name="passage_vector_per_profile")],
            },
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        enable_rls("passages_passage"),
        enable_rls("passages_passagevector"),
        migrations.RunSQL(SAME_ACCOUNT, [
            "ALTER TABLE passages_passagevector DROP CONSTRAINT passagevector_note_same_account",
            "ALTER TABLE passages_passagevector DROP CONSTRAINT "
            "passagevector_passage_same_account",
            "ALTER TABLE passages_passage DROP CONSTRAINT passage_note_same_account",
            "ALTER TABLE passages_passage DROP CONSTRAINT passage_account_id_key",
        ]),
        migrations.RunPython(vector_indexes, migrations.RunPython.noop),
    ]
