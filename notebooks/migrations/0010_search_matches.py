from django.db import migrations

# Library search (notebooks.selectors.search.note_search) under row-level security: `tsvector @@
# tsquery` is not LEAKPROOF, so from the runtime role PostgreSQL applies the policy first
# and matches by reading every note's row (1.2 s at 100k notes) instead of using the GIN
# index. As for recall (see 0007), a security-definer function run by the schema owner
# — for whom the SELECT-only `lexical_lookup` policy lifts the barrier — finds the
# matching ids through the index. It only narrows: the account comes from the same
# transaction setting the policies use, and the caller's query (under RLS, with the
# connection's grant and every filter) decides which of those ids it may see.
SEARCH_MATCHES = """
CREATE FUNCTION grove_search_matches(query tsquery)
RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT n.id FROM public.notebooks_note n
    WHERE n.account_id = public.grove_current_account()
      AND n.status <> 'deleted'
      AND n.search @@ query
$$;
REVOKE EXECUTE ON FUNCTION grove_search_matches(tsquery) FROM PUBLIC;
"""

DROP = "DROP FUNCTION IF EXISTS grove_search_matches(tsquery);"


class Migration(migrations.Migration):
    dependencies = [("notebooks", "0009_library_order_and_count")]

    operations = [migrations.RunSQL(SEARCH_MATCHES, DROP)]
