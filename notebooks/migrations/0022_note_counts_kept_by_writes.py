import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from grove.kernel.rls import enable_rls

# Live note counts kept by the writes, per notebook and Personal (issue 20: the library
# at 100k notes).
#
# The library sidebar showed each notebook's live notes by counting them — a grouped
# index-only scan over every active note of the account (~20 ms at 100k notes) on every
# page — and an unfiltered list counted its "of N" the same way. Now the writes keep the
# counts, as they keep the term statistics (0011): statement-level triggers on
# notebooks_note turn each statement's changed rows into one +n/-n per place (notebook,
# or NULL for Personal) whenever notes enter or leave `status = 'active'` or an active
# note moves. Every write path — saves, corrections, moves, batches, expiry, trash,
# imports, restored revisions, notebook deletes that delete their notes — is an INSERT
# or UPDATE of notebooks_note, so none of them can forget to count.
#
# The changes are appended, not added to one row per place: a counter row per notebook
# would make concurrent saves into one notebook wait for each other until commit, and
# two batches moving notes between two notebooks in opposite orders deadlock (measured
# for the term statistics: docs/benchmarks.md, "Why the statistics are appended").
# Readers sum a place's rows; notebooks.services.note_counts_compact folds them into one
# row per place periodically.
#
# What the counts leave to their readers (notebooks.selectors.note_counts): a note
# past its expiry stays `active` until the expire job runs, and a notebook's own state
# (archived, deleted) is not a note's — both are read beside the counts.
#
# The functions run as the caller, inside the write's tenant transaction, so row-level
# security checks each row against the same account as the note. As in 0011 there is
# no DELETE trigger: notes are hard-deleted only with their account, which takes its
# counts along.
TRIGGERS = """
CREATE FUNCTION grove_note_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.notebooks_notecount (account_id, notebook_id, notes)
    SELECT n.account_id, n.notebook_id, count(*)
    FROM grove_new_notes n
    WHERE n.status = 'active'
    GROUP BY n.account_id, n.notebook_id;
    RETURN NULL;
END $$;

CREATE FUNCTION grove_note_counts_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.notebooks_notecount (account_id, notebook_id, notes)
    SELECT account_id, notebook_id, sum(change) FROM (
        SELECT o.account_id, o.notebook_id, -1 AS change
        FROM grove_old_notes o JOIN grove_new_notes n ON n.id = o.id
        WHERE o.status = 'active'
          AND (n.status <> 'active' OR n.notebook_id IS DISTINCT FROM o.notebook_id)
        UNION ALL
        SELECT n.account_id, n.notebook_id, 1
        FROM grove_old_notes o JOIN grove_new_notes n ON n.id = o.id
        WHERE n.status = 'active'
          AND (o.status <> 'active' OR n.notebook_id IS DISTINCT FROM o.notebook_id)
    ) changes
    GROUP BY account_id, notebook_id
    HAVING sum(change) <> 0;
    RETURN NULL;
END $$;

CREATE TRIGGER note_counts_inserted AFTER INSERT ON notebooks_note
    REFERENCING NEW TABLE AS grove_new_notes
    FOR EACH STATEMENT EXECUTE FUNCTION grove_note_counts_inserted();
CREATE TRIGGER note_counts_updated AFTER UPDATE ON notebooks_note
    REFERENCING OLD TABLE AS grove_old_notes NEW TABLE AS grove_new_notes
    FOR EACH STATEMENT EXECUTE FUNCTION grove_note_counts_updated();
"""

# Existing data: count every account once. The migration holds the lock the triggers'
# creation took on notebooks_note, so no write slips between the count and the
# triggers. The owner runs migrations and reads every note (the `lexical_lookup` policy
# of 0007); row-level security is forced on the new table even for the owner, so it is
# lifted for this one statement (as in 0020).
BACKFILL = """
ALTER TABLE notebooks_notecount NO FORCE ROW LEVEL SECURITY;
DELETE FROM notebooks_notecount;
INSERT INTO notebooks_notecount (account_id, notebook_id, notes)
SELECT account_id, notebook_id, count(*) FROM notebooks_note
WHERE status = 'active'
GROUP BY account_id, notebook_id;
ALTER TABLE notebooks_notecount FORCE ROW LEVEL SECURITY;
"""

DROP = """
DROP TRIGGER IF EXISTS note_counts_inserted ON notebooks_note;
DROP TRIGGER IF EXISTS note_counts_updated ON notebooks_note;
DROP FUNCTION IF EXISTS grove_note_counts_inserted();
DROP FUNCTION IF EXISTS grove_note_counts_updated();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('notebooks', '0021_recall_tag'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='NoteCount',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('notebook_id', models.UUIDField(blank=True, null=True)),
                ('notes', models.IntegerField()),
                ('account', models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'notebooks_notecount',
                'indexes': [models.Index(fields=['account', 'notebook_id'], name='notecount_place')],
            },
        ),
        enable_rls("notebooks_notecount"),
        migrations.RunSQL(TRIGGERS + BACKFILL, DROP),
    ]
