"""Time-aware recall (SPEC §4): the days a note states, and a window in the lexical arm.

* `notebooks_note.stated_dates` (`datemultirange`): the days the content states
  (`notebooks.dates.stated_dates`), written by the saves with `content_hash`; a partial
  GiST index over the notes that state any. Existing notes are read here, once: only
  notes whose text holds a year-like number (19xx/20xx) can state a date, and the
  owner role lifts forced row-level security for these statements, as in 0020.
* `grove_lexical_matches` takes the query's window — the days (`daterange`, for the
  stated dates) and the same span as instants in the caller's time zone (`tstzrange`,
  for `created_at` / `updated_at`) — and either keeps only the notes in it
  (`window_filter`) or takes them first; it says which matches are in it. Same body as
  0021 otherwise; without a window the order is 0021's.
"""

import importlib

import django.contrib.postgres.indexes
from django.db import migrations, models

import notebooks.models.notes

PREVIOUS_FORM = importlib.import_module("notebooks.migrations.0021_recall_tag").LEXICAL_MATCHES

IN_WINDOW = ("(n.stated_dates && window_days OR n.updated_at <@ window_span"
             " OR n.created_at <@ window_span)")

LEXICAL_MATCHES = """
DROP FUNCTION IF EXISTS grove_lexical_matches(
    tsquery[], float8[], tsquery[], float8[], uuid[], boolean, integer, integer, text);
CREATE FUNCTION grove_lexical_matches(
    distinctive tsquery[], distinctive_weights float8[],
    common tsquery[], common_weights float8[],
    notebook_ids uuid[], include_personal boolean, rescore integer, max_rows integer,
    tag text, window_days daterange, window_span tstzrange, window_filter boolean)
RETURNS TABLE (note_id uuid, score float8, total bigint, in_window boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH candidates AS (
        SELECT n.id, sum(t.weight) AS score,
               bool_or(window_days IS NOT NULL AND {IN_WINDOW}) AS in_window
        FROM unnest(distinctive, distinctive_weights) AS t(query, weight)
        JOIN public.notebooks_note n ON n.search @@ t.query
        WHERE n.account_id = (SELECT public.grove_current_account())
          AND n.status = 'active'
          AND (n.expires_at IS NULL OR n.expires_at > now())
          AND (n.notebook_id = ANY(notebook_ids)
               OR (include_personal AND n.notebook_id IS NULL))
          AND (tag IS NULL OR n.tags @> ARRAY[tag]::varchar[])
          AND (window_days IS NULL OR NOT window_filter OR {IN_WINDOW})
        GROUP BY n.id
    ),
    head AS (
        SELECT id, score, in_window FROM candidates
        ORDER BY in_window DESC, score DESC, id LIMIT rescore
    ),
    rescored AS (
        SELECT h.id, h.in_window, h.score + coalesce((
            SELECT sum(c.weight) FROM unnest(common, common_weights) AS c(query, weight)
            WHERE n.search @@ c.query), 0) AS score
        FROM head h
        JOIN public.notebooks_note n
          ON n.id = h.id AND n.account_id = (SELECT public.grove_current_account())
    )
    SELECT r.id, r.score, (SELECT count(*) FROM candidates), r.in_window
    FROM rescored r
    ORDER BY r.in_window DESC, r.score DESC, r.id
    LIMIT max_rows
$$;
REVOKE EXECUTE ON FUNCTION grove_lexical_matches(
    tsquery[], float8[], tsquery[], float8[], uuid[], boolean, integer, integer, text,
    daterange, tstzrange, boolean) FROM PUBLIC;
""".replace("{IN_WINDOW}", IN_WINDOW)

DROP_NEW = """
DROP FUNCTION IF EXISTS grove_lexical_matches(
    tsquery[], float8[], tsquery[], float8[], uuid[], boolean, integer, integer, text,
    daterange, tstzrange, boolean);
"""

BATCH = 2000


def read_stated_dates(apps, schema_editor):
    from notebooks.dates import stated_dates

    connection = schema_editor.connection
    field = notebooks.models.notes.DateMultirangeField()
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE notebooks_note NO FORCE ROW LEVEL SECURITY")
        after = None
        while True:  # in batches by id, so a large library is never held in memory
            cursor.execute(
                "SELECT id, content FROM notebooks_note "
                "WHERE content ~ '(19|20)[0-9][0-9]' AND (%s::uuid IS NULL OR id > %s::uuid) "
                "ORDER BY id LIMIT %s", [after, after, BATCH])
            rows = cursor.fetchall()
            if not rows:
                break
            after = rows[-1][0]
            ids, values = [], []
            for note_id, content in rows:
                found = stated_dates(content)
                if found:
                    ids.append(note_id)
                    values.append(field.get_db_prep_value(found, connection))
            if ids:
                cursor.execute(
                    "UPDATE notebooks_note n SET stated_dates = v.d::datemultirange "
                    "FROM unnest(%s::uuid[], %s::text[]) AS v(id, d) WHERE n.id = v.id",
                    [ids, values])
        cursor.execute("ALTER TABLE notebooks_note FORCE ROW LEVEL SECURITY")


class Migration(migrations.Migration):

    dependencies = [
        ('notebooks', '0023_search_functions_check_the_account_once'),
    ]

    operations = [
        migrations.AddField(
            model_name='note',
            name='stated_dates',
            field=notebooks.models.notes.DateMultirangeField(default=list),
        ),
        migrations.AddIndex(
            model_name='note',
            index=django.contrib.postgres.indexes.GistIndex(condition=models.Q(('stated_dates', []), _negated=True), fields=['stated_dates'], name='note_stated_dates'),
        ),
        migrations.RunPython(read_stated_dates, migrations.RunPython.noop),
        migrations.RunSQL(LEXICAL_MATCHES, DROP_NEW + PREVIOUS_FORM),
    ]
