import uuid

import django.db.models.functions.comparison
import django.db.models.functions.text
from django.conf import settings
from django.db import migrations, models

# Two live notebooks under one parent cannot share a name (SPEC §3), in lower case; the
# services refuse it (`notebook_name_taken`) and this index is the floor under them.
#
# Accounts may hold such twins from before: the index could not be built over them. So
# first, in each account, every live notebook whose name a live sibling created earlier
# already has (in lower case) is renamed with the first free " (2)", " (3)", … suffix —
# the oldest keeps its name; nothing else changes, no notebook is merged or hidden. The
# owner role runs migrations, and row-level security is forced on the table even for
# it (`grove.kernel.rls.enable_rls`): it is lifted for this one statement, as in 0005.
RENAME_TWINS = """
ALTER TABLE notebooks_notebook NO FORCE ROW LEVEL SECURITY;
DO $$
DECLARE
    twin record;
    suffix text;
    n integer;
BEGIN
    FOR twin IN
        SELECT id, account_id, parent_id, name FROM (
            SELECT id, account_id, parent_id, name, row_number() OVER (
                PARTITION BY account_id, parent_id, lower(name)
                ORDER BY created_at, id) AS rank
            FROM notebooks_notebook
            WHERE archived_at IS NULL AND deleted_at IS NULL
        ) ranked
        WHERE rank > 1
        ORDER BY account_id, parent_id, lower(name), rank
    LOOP
        n := 2;
        LOOP
            suffix := ' (' || n || ')';
            EXIT WHEN NOT EXISTS (
                SELECT 1 FROM notebooks_notebook
                WHERE account_id = twin.account_id
                  AND parent_id IS NOT DISTINCT FROM twin.parent_id
                  AND archived_at IS NULL AND deleted_at IS NULL
                  AND lower(name) = lower(left(twin.name, 200 - length(suffix)) || suffix));
            n := n + 1;
        END LOOP;
        UPDATE notebooks_notebook
        SET name = left(twin.name, 200 - length(suffix)) || suffix, updated_at = now()
        WHERE id = twin.id;
    END LOOP;
END
$$;
ALTER TABLE notebooks_notebook FORCE ROW LEVEL SECURITY;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('notebooks', '0019_source_agent_index'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunSQL(RENAME_TWINS, migrations.RunSQL.noop),
        migrations.AddConstraint(
            model_name='notebook',
            constraint=models.UniqueConstraint(models.F('account'), django.db.models.functions.comparison.Coalesce(models.F('parent'), models.Value(uuid.UUID('00000000-0000-0000-0000-000000000000')), output_field=models.UUIDField()), django.db.models.functions.text.Lower('name'), condition=models.Q(('archived_at__isnull', True), ('deleted_at__isnull', True)), name='notebook_live_name_unique'),
        ),
    ]
