from django.db import migrations

from grove.kernel.rls import enable_rls
from notebooks.vectors import hnsw_index_sql

BACKFILL_HASHES = """
ALTER TABLE notebooks_note NO FORCE ROW LEVEL SECURITY;
UPDATE notebooks_note SET content_hash = encode(sha256(convert_to(content, 'UTF8')), 'hex')
WHERE content_hash = '';
ALTER TABLE notebooks_note FORCE ROW LEVEL SECURITY;
"""


class Migration(migrations.Migration):
    """Vectors are account-owned like everything else; each dimension in use gets an
    HNSW index (384 for the default local model)."""

    dependencies = [
        ("notebooks", "0004_search_and_embeddings"),
        ("grove", "0005_job_row_level_security"),
    ]

    operations = [
        enable_rls("notebooks_noteembedding"),
        migrations.RunSQL(
            "ALTER TABLE notebooks_noteembedding ADD CONSTRAINT embedding_note_same_account "
            "FOREIGN KEY (account_id, note_id) REFERENCES notebooks_note (account_id, id) "
            "ON DELETE CASCADE",
            "ALTER TABLE notebooks_noteembedding DROP CONSTRAINT embedding_note_same_account",
        ),
        migrations.RunSQL(hnsw_index_sql(384), "DROP INDEX IF EXISTS note_embedding_hnsw_384"),
        migrations.RunSQL(BACKFILL_HASHES, migrations.RunSQL.noop),
    ]
