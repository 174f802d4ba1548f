"""Files kept whole (issue 37): a note's source path; the ingest ledger's envelope,
folder mode and top-level root (docs/architecture.md, "Files in and out")."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('notebooks', '0032_document_notes'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='ingestedchunk',
            name='lead',
            field=models.TextField(blank=True, db_default='', default=''),
        ),
        migrations.AddField(
            model_name='ingestedchunk',
            name='subfolders',
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name='ingestedchunk',
            name='tail',
            field=models.TextField(blank=True, db_default='', default=''),
        ),
        migrations.AddField(
            model_name='note',
            name='source_path',
            field=models.TextField(blank=True, db_default='', default=''),
        ),
        migrations.AlterField(
            model_name='ingestedchunk',
            name='root',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='notebooks.notebook'),
        ),
        migrations.AddConstraint(
            model_name='ingestedchunk',
            constraint=models.UniqueConstraint(condition=models.Q(('root__isnull', True)), fields=('account', 'path', 'chunk'), name='ingestedchunk_top_once'),
        ),
    ]
