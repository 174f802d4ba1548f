# The library's "Saved by" picker lists the distinct agents of the account's notes
# (notebooks.selectors.source_agents): this index lets it jump from one agent to the next
# instead of reading every note. Deleted notes are not in it: the library never shows them.

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('notebooks', '0018_note_tags'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name='note',
            index=models.Index(condition=models.Q(('source_agent__isnull', False), models.Q(('status', 'deleted'), _negated=True)), fields=['account', 'source_agent'], name='note_source_agents'),
        ),
    ]
