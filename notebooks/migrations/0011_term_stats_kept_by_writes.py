import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from grove.kernel.rls import enable_rls

# Term statistics current with the notes (recall's lexical arm weighs terms by them).
#
# Before, a periodic task recounted them every 10 minutes, so a person who imported notes
# and asked at once was answered with the statistics of an almost empty library (SciFact
# test nDCG@10 0.543 right after an import against 0.716 after a recount). Now the writes
# keep them: statement-level triggers on notebooks_note turn each statement's changed
# rows (transition tables) into one aggregated +1/-1 per distinct lexeme — and for the
# empty lexeme, the number of active notes — whenever a note enters or leaves
# `status = 'active'` or an active note's `search` vector changes. A bulk archive or
# expiry of thousands of notes is one insert, not one per row.
#
# The changes are *appended* to notebooks_termdelta rather than added to the counter
# rows: every save of an account touches the note-count row and the account's common
# lexemes, so updating counters in place would make concurrent saves of one account
# wait for each other until commit, and deadlock when two multi-note transactions
# (batches lock their notes one after the other) reach shared lexemes in different
# orders. Appends take no lock anyone else needs. Readers sum TermStat and TermDelta in
# one statement (notebooks.selectors.recall.term_counts); notebooks.services.term_stats_compact
# folds the deltas into TermStat periodically.
#
# The functions run as the caller (the runtime role, inside the tenant transaction of
# the write), so row-level security checks each delta against the same account as the
# note. Hard deletes of notes only happen with their account, which takes its term
# statistics along, so there is no DELETE trigger (a DELETE trigger would even break
# account deletion: Django may delete the account's TermStat rows before its notes,
# and the deltas written then would point at the deleted account).
TRIGGERS = """
CREATE FUNCTION grove_term_stats_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.notebooks_termdelta (account_id, lexeme, ndoc)
    SELECT n.account_id, l.lexeme, count(*)
    FROM grove_new_notes n
    CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(n.search), '')) AS l(lexeme)
    WHERE n.status = 'active'
    GROUP BY n.account_id, l.lexeme;
    RETURN NULL;
END $$;

CREATE FUNCTION grove_term_stats_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.notebooks_termdelta (account_id, lexeme, ndoc)
    SELECT account_id, lexeme, sum(change) FROM (
        SELECT o.account_id, l.lexeme, -1 AS change
        FROM grove_old_notes o JOIN grove_new_notes n ON n.id = o.id
        CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(o.search), '')) AS l(lexeme)
        WHERE o.status = 'active' AND (n.status <> 'active' OR n.search <> o.search)
        UNION ALL
        SELECT n.account_id, l.lexeme, 1
        FROM grove_old_notes o JOIN grove_new_notes n ON n.id = o.id
        CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(n.search), '')) AS l(lexeme)
        WHERE n.status = 'active' AND (o.status <> 'active' OR n.search <> o.search)
    ) changes
    GROUP BY account_id, lexeme
    HAVING sum(change) <> 0;
    RETURN NULL;
END $$;

CREATE TRIGGER term_stats_inserted AFTER INSERT ON notebooks_note
    REFERENCING NEW TABLE AS grove_new_notes
    FOR EACH STATEMENT EXECUTE FUNCTION grove_term_stats_inserted();
CREATE TRIGGER term_stats_updated AFTER UPDATE ON notebooks_note
    REFERENCING OLD TABLE AS grove_old_notes NEW TABLE AS grove_new_notes
    FOR EACH STATEMENT EXECUTE FUNCTION grove_term_stats_updated();
"""

# Existing data: recount every account once (the migration holds the lock the trigger's
# creation took on notebooks_note, so no write slips between the count and the trigger).
# As the schema owner, row-level security still applies to the statistics tables: act
# as each account in turn. The owner reads every note (the `lexical_lookup` policy of
# 0007), hence the explicit account filter.
BACKFILL = """
DO $$
DECLARE
    acct uuid;
BEGIN
    FOR acct IN SELECT id FROM grove_account LOOP
        PERFORM set_config('grove.account_id', acct::text, true);
        DELETE FROM notebooks_termstat WHERE account_id = acct;
        INSERT INTO notebooks_termstat (account_id, lexeme, ndoc)
        SELECT acct, l.lexeme, count(*)
        FROM notebooks_note n
        CROSS JOIN LATERAL unnest(array_append(tsvector_to_array(n.search), '')) AS l(lexeme)
        WHERE n.account_id = acct AND n.status = 'active'
        GROUP BY l.lexeme;
    END LOOP;
    PERFORM set_config('grove.account_id', '', true);
END $$;
"""

DROP = """
DROP TRIGGER IF EXISTS term_stats_inserted ON notebooks_note;
DROP TRIGGER IF EXISTS term_stats_updated ON notebooks_note;
DROP FUNCTION IF EXISTS grove_term_stats_inserted();
DROP FUNCTION IF EXISTS grove_term_stats_updated();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('notebooks', '0010_search_matches'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='TermDelta',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('lexeme', models.TextField()),
                ('ndoc', models.IntegerField()),
                ('account', models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'notebooks_termdelta',
                'indexes': [models.Index(fields=['account', 'lexeme'], name='termdelta_lexeme')],
            },
        ),
        enable_rls("notebooks_termdelta"),
        migrations.RunSQL(TRIGGERS + BACKFILL, DROP),
    ]
