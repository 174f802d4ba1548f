# A zip or folder uploaded on the website is stored by the request as it came, in parts,
# and unpacked by the upload's job (issue 36 item 2.6): the parts, under row-level
# security, pointing only at their own account's upload.
#
# Expand only (docs/architecture.md, "Upgrades"): a new table; an older web process
# keeps storing files the old way, and the job ingests those as before.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from grove.kernel.rls import enable_rls, same_account_references

REFERENCES = [
    ("notebooks_ingestuploadpart", "ingestuploadpart_upload_same_account", "upload_id",
     "notebooks_ingestupload"),
]


class Migration(migrations.Migration):

    dependencies = [
        ('notebooks', '0029_ingest_uploads'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='IngestUploadPart',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('data', models.BinaryField()),
                ('account', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('upload', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='parts', to='notebooks.ingestupload')),
            ],
            options={
                'db_table': 'notebooks_ingestuploadpart',
            },
        ),
        migrations.AddIndex(
            model_name='ingestuploadpart',
            index=models.Index(fields=['upload', 'id'], name='ingestuploadpart_next'),
        ),
        enable_rls("notebooks_ingestuploadpart"),
        same_account_references(REFERENCES),
    ]
