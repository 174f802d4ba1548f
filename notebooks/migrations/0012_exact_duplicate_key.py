# The exact-duplicate key of a note (SPEC §8 Tidy-up): md5 of its content lower-cased with
# whitespace runs made one space, kept by PostgreSQL as a stored generated column, and an
# index to find a notebook's notes with one key. A plain column, not an expression index:
# under row-level security the runtime role can use an index only for leakproof
# conditions, and `content_key = %s` is one while `md5(lower(…)) = %s` is not.

import django.db.models.functions.text
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('notebooks', '0011_term_stats_kept_by_writes'),
    ]

    operations = [
        migrations.AddField(
            model_name='note',
            name='content_key',
            field=models.GeneratedField(db_persist=True, expression=django.db.models.functions.text.MD5(django.db.models.functions.text.Lower(models.Func(models.F('content'), models.Value('\\s+'), models.Value(' '), models.Value('g'), function='REGEXP_REPLACE', output_field=models.TextField()))), output_field=models.CharField(max_length=32)),
        ),
        migrations.AddIndex(
            model_name='note',
            index=models.Index(fields=['account', 'notebook', 'content_key'], name='note_content_key'),
        ),
    ]
