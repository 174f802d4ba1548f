import django.contrib.postgres.fields
import django.contrib.postgres.indexes
from django.db import migrations, models

# Tags (SPEC §3): a short list of normalised labels on a note, part of every revision.
# Existing notes and revisions get none (a constant default: no table rewrite).
#
# As for search (0010), `tags @> ARRAY[...]` is not LEAKPROOF: under row-level security
# the GIN index could not be used and a tag filter would read every note. The
# security-definer functions below, run by the schema owner (the `lexical_lookup`
# policy of 0007 lifts the barrier for it), find the account's tagged notes through the
# index; the caller's own query, under RLS with its grant and filters, keeps those it may
# see. `grove_tag_counts` counts the account's live notes per tag for the sidebar.
TAG_LOOKUPS = """
CREATE FUNCTION grove_tagged(tag text)
RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT n.id FROM public.notebooks_note n
    WHERE n.account_id = public.grove_current_account()
      AND n.status <> 'deleted'
      AND n.tags @> ARRAY[tag]::varchar[]
$$;
REVOKE EXECUTE ON FUNCTION grove_tagged(text) FROM PUBLIC;

CREATE FUNCTION grove_tag_counts(max_rows integer)
RETURNS TABLE (tag text, notes bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.tag, count(*) FROM public.notebooks_note n
    CROSS JOIN LATERAL unnest(n.tags) AS t(tag)
    LEFT JOIN public.notebooks_notebook b ON b.id = n.notebook_id
    WHERE n.account_id = public.grove_current_account()
      AND n.tags <> '{}'
      AND n.status = 'active'
      AND (n.expires_at IS NULL OR n.expires_at > now())
      AND (b.id IS NULL OR (b.archived_at IS NULL AND b.deleted_at IS NULL))
    GROUP BY t.tag
    ORDER BY count(*) DESC, t.tag
    LIMIT max_rows
$$;
REVOKE EXECUTE ON FUNCTION grove_tag_counts(integer) FROM PUBLIC;
"""

DROP = """
DROP FUNCTION IF EXISTS grove_tag_counts(integer);
DROP FUNCTION IF EXISTS grove_tagged(text);
"""


def _tags() -> django.contrib.postgres.fields.ArrayField:
    return django.contrib.postgres.fields.ArrayField(
        base_field=models.CharField(max_length=32), blank=True, default=list,
        db_default=models.Value([], output_field=django.contrib.postgres.fields.ArrayField(
            models.CharField(max_length=32))), size=None)


class Migration(migrations.Migration):
    dependencies = [("notebooks", "0017_search_as_you_type")]

    operations = [
        migrations.AddField(model_name="note", name="tags", field=_tags()),
        migrations.AddField(model_name="revision", name="tags", field=_tags()),
        migrations.AddConstraint(
            model_name="note",
            constraint=models.CheckConstraint(condition=models.Q(tags__len__lte=10),
                                              name="note_tags_few")),
        migrations.AddConstraint(
            model_name="revision",
            constraint=models.CheckConstraint(condition=models.Q(tags__len__lte=10),
                                              name="revision_tags_few")),
        migrations.AddIndex(
            model_name="note",
            index=django.contrib.postgres.indexes.GinIndex(fields=["tags"], name="note_tags")),
        # Only tagged notes are read to count tags.
        migrations.AddIndex(
            model_name="note",
            index=models.Index(fields=["account"], condition=~models.Q(tags=[]),
                               name="note_tagged")),
        migrations.RunSQL(TAG_LOOKUPS, DROP),
    ]
