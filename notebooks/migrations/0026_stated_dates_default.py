"""`notebooks_note.stated_dates` defaults to no days in the database too (0024 added it
with a default of Django's only): rows written by SQL alone — the benchmarks' bulk
loads, tests that insert notes directly — state no dates rather than break the NOT
NULL constraint. The saves keep writing the column themselves."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [("notebooks", "0025_lexical_bm25")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE notebooks_note ALTER COLUMN stated_dates SET DEFAULT '{}'",
            "ALTER TABLE notebooks_note ALTER COLUMN stated_dates DROP DEFAULT",
        ),
    ]
