# Document notes (SPEC §3, issue 37): kind `note`, up to 1,000,000 characters at the
# database (the configured limit, 200,000 by default, is the services'); memory records
# keep 6,000. Only loosens: every row an older release writes still passes. And the
# content hash each note's passages were cut from (`passages_hash`, filled by passages
# 0001), with the index that finds the notes whose passages fell behind.

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('notebooks', '0031_search_words'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='note',
            name='note_content_length',
        ),
        migrations.RemoveConstraint(
            model_name='note',
            name='note_kind_valid',
        ),
        migrations.RemoveConstraint(
            model_name='revision',
            name='revision_content_length',
        ),
        migrations.RemoveConstraint(
            model_name='revision',
            name='revision_kind_valid',
        ),
        migrations.AddField(
            model_name='note',
            name='passages_hash',
            field=models.CharField(blank=True, db_default='', default='', max_length=64),
        ),
        migrations.AlterField(
            model_name='note',
            name='kind',
            field=models.CharField(choices=[('note', 'Note'), ('preference', 'Preference'), ('fact', 'Fact'), ('decision', 'Decision'), ('solution', 'Solution'), ('handoff', 'Handoff')], max_length=16),
        ),
        migrations.AlterField(
            model_name='revision',
            name='kind',
            field=models.CharField(choices=[('note', 'Note'), ('preference', 'Preference'), ('fact', 'Fact'), ('decision', 'Decision'), ('solution', 'Solution'), ('handoff', 'Handoff')], max_length=16),
        ),
        migrations.AddIndex(
            model_name='note',
            index=models.Index(condition=models.Q(('passages_hash', models.F('content_hash')), _negated=True), fields=['account'], name='note_passages_stale'),
        ),
        migrations.AddConstraint(
            model_name='note',
            constraint=models.CheckConstraint(condition=models.Q(('content__regex', '^\\S'), ('content__regex', '\\S$'), ('content__length__lte', 1000000), models.Q(('kind', 'note'), ('content__length__lte', 6000), _connector='OR')), name='note_content_length'),
        ),
        migrations.AddConstraint(
            model_name='note',
            constraint=models.CheckConstraint(condition=models.Q(('kind__in', ['note', 'preference', 'fact', 'decision', 'solution', 'handoff'])), name='note_kind_valid'),
        ),
        migrations.AddConstraint(
            model_name='revision',
            constraint=models.CheckConstraint(condition=models.Q(('content__regex', '^\\S'), ('content__regex', '\\S$'), ('content__length__lte', 1000000), models.Q(('kind', 'note'), ('content__length__lte', 6000), _connector='OR')), name='revision_content_length'),
        ),
        migrations.AddConstraint(
            model_name='revision',
            constraint=models.CheckConstraint(condition=models.Q(('kind__in', ['note', 'preference', 'fact', 'decision', 'solution', 'handoff'])), name='revision_kind_valid'),
        ),
    ]
