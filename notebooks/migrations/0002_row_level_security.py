from django.db import migrations

from grove.kernel.rls import enable_rls


class Migration(migrations.Migration):
    dependencies = [("notebooks", "0001_initial"), ("grove", "0002_row_level_security")]

    operations = [
        enable_rls("notebooks_notebook"),
        enable_rls("notebooks_note"),
        enable_rls("notebooks_revision"),
    ]
