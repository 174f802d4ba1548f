from django.db import migrations

from grove.kernel.rls import enable_rls


class Migration(migrations.Migration):
    dependencies = [("grove", "0004_embeddingprofile_job")]

    operations = [enable_rls("grove_job")]
