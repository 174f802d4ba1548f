# What a save does with a credential it holds, by where the text comes from, and the
# owner's own credential patterns (Settings → Credentials). Existing accounts get the
# defaults: redact on ingest and explicit saves, refuse automatic captures. The runtime
# role may update the columns: they are in grove.runtime.dbroles.ACCOUNT_UPDATABLE_COLUMNS,
# granted after every migrate.

from django.db import migrations, models


def _action(default):
    return models.CharField(choices=[('redact', 'Redact'), ('refuse', 'Refuse')],
                            db_default=default, default=default, max_length=8)


class Migration(migrations.Migration):

    dependencies = [
        ('grove', '0011_key_lookup'),
    ]

    operations = [
        migrations.AddField(model_name='account', name='secrets_on_ingest',
                            field=_action('redact')),
        migrations.AddField(model_name='account', name='secrets_on_automatic',
                            field=_action('refuse')),
        migrations.AddField(model_name='account', name='secrets_on_explicit',
                            field=_action('redact')),
        migrations.AddField(model_name='account', name='secret_patterns',
                            field=models.JSONField(blank=True, db_default=[], default=list)),
    ]
