from django.db import migrations
from pgvector.django import VectorExtension

from grove.kernel.rls import CURRENT_ACCOUNT_FUNCTION, enable_rls


class Migration(migrations.Migration):
    dependencies = [("grove", "0001_initial")]

    operations = [
        VectorExtension(),
        migrations.RunSQL(CURRENT_ACCOUNT_FUNCTION, "DROP FUNCTION grove_current_account()"),
        enable_rls("grove_connection"),
        enable_rls("grove_operation"),
    ]
