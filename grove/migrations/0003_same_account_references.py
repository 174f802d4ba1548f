from django.db import migrations


class Migration(migrations.Migration):
    """References between account-owned rows stay inside one account, enforced by the
    database: foreign-key checks bypass row-level security, so a plain FK would accept
    another account's id. Composite keys (account_id, id) close that."""

    dependencies = [("grove", "0002_row_level_security")]

    operations = [
        migrations.RunSQL(
            [
                "ALTER TABLE grove_connection ADD CONSTRAINT connection_account_id_key "
                "UNIQUE (account_id, id)",
                "ALTER TABLE grove_operation ADD CONSTRAINT operation_connection_same_account "
                "FOREIGN KEY (account_id, connection_id) "
                "REFERENCES grove_connection (account_id, id)",
            ],
            [
                "ALTER TABLE grove_operation DROP CONSTRAINT operation_connection_same_account",
                "ALTER TABLE grove_connection DROP CONSTRAINT connection_account_id_key",
            ],
        ),
    ]
