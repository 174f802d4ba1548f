# Background parts say they are alive (`grove_heartbeat`: the worker, every
# GROVE_HEARTBEAT_SECONDS), so `/readyz` can tell a stopped worker from a quiet one.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('grove', '0012_account_secret_rules'),
    ]

    operations = [
        migrations.CreateModel(
            name='Heartbeat',
            fields=[
                ('name', models.CharField(max_length=32, primary_key=True, serialize=False)),
                ('at', models.DateTimeField()),
                ('detail', models.JSONField(default=dict)),
            ],
            options={
                'db_table': 'grove_heartbeat',
            },
        ),
    ]
