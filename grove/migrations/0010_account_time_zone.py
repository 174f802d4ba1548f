# The time zone the website shows the owner's times in (Settings). Existing accounts keep
# UTC, which every page showed until now. The runtime role may update the column: it is
# in grove.runtime.dbroles.ACCOUNT_UPDATABLE_COLUMNS, granted after every migrate.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('grove', '0009_unforgeable_context'),
    ]

    operations = [
        migrations.AddField(
            model_name='account',
            name='time_zone',
            field=models.CharField(db_default='UTC', default='UTC', max_length=64),
        ),
    ]
