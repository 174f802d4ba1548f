# Folder and zip uploads on the website (issue 22): the upload, ingested by a background
# job, and its files waiting their turn — under row-level security, pointing only at
# their own account's rows.

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from grove.kernel.rls import enable_rls, same_account_references

REFERENCES = [
    ("notebooks_ingestupload", "ingestupload_root_same_account", "root_id",
     "notebooks_notebook"),
    ("notebooks_ingestuploadfile", "ingestuploadfile_upload_same_account", "upload_id",
     "notebooks_ingestupload"),
]


class Migration(migrations.Migration):

    dependencies = [
        ('notebooks', '0028_ingest_ledger'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='IngestUpload',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('name', models.TextField()),
                ('kind', models.CharField(max_length=16)),
                ('subfolders', models.BooleanField(default=False)),
                ('state', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], default='queued', max_length=8)),
                ('total_files', models.PositiveIntegerField(default=0)),
                ('done_files', models.PositiveIntegerField(default=0)),
                ('failed_files', models.PositiveIntegerField(default=0)),
                ('counts', models.JSONField(default=dict)),
                ('redacted', models.JSONField(default=dict)),
                ('skipped', models.JSONField(default=dict)),
                ('warnings', models.JSONField(default=list)),
                ('error', models.TextField(blank=True, default='')),
                ('runner', models.UUIDField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('account', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('root', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='notebooks.notebook')),
            ],
            options={
                'db_table': 'notebooks_ingestupload',
            },
        ),
        migrations.CreateModel(
            name='IngestUploadFile',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('path', models.TextField()),
                ('content', models.BinaryField()),
                ('account', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('upload', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='files', to='notebooks.ingestupload')),
            ],
            options={
                'db_table': 'notebooks_ingestuploadfile',
            },
        ),
        migrations.AddIndex(
            model_name='ingestupload',
            index=models.Index(fields=['account', '-created_at'], name='ingestupload_recent'),
        ),
        migrations.AddIndex(
            model_name='ingestuploadfile',
            index=models.Index(fields=['upload', 'id'], name='ingestuploadfile_next'),
        ),
        enable_rls("notebooks_ingestupload"),
        enable_rls("notebooks_ingestuploadfile"),
        same_account_references(REFERENCES, keys=[("notebooks_ingestupload",
                                                   "ingestupload_account_key")]),
    ]
