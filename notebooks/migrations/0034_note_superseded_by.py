from django.db import migrations, models


class Migration(migrations.Migration):
    """A note replaced by a newer memory (`remember` with `supersedes`, issue 39) names
    the note that replaced it; existing notes have none."""

    dependencies = [
        ("notebooks", "0033_files_whole"),
    ]

    operations = [
        migrations.AddField(
            model_name="note",
            name="superseded_by_id",
            field=models.UUIDField(blank=True, null=True),
        ),
    ]
