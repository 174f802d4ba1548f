from django.db import migrations

# Links on a share page (issue 38): the links a shared note writes, each with its target
# only when that target is a note of the same share — a link to any other note comes
# back with no id, so a page can draw it only as text and nothing of a note outside the
# share (its id, its title) reaches a visitor. A security definer like the other read
# functions (the visitor has no account context), taking the link's token; a note that
# is not a member of the share has no links here at all. The function's owner reads the
# links table through a policy of its own (as sharing 0002 reads notebooks), never the
# runtime role.
FUNCTIONS = """
CREATE FUNCTION grove_share_links(p_token text, p_note uuid)
RETURNS TABLE (form text, target text, target_id uuid)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH members AS (SELECT m.id FROM public.grove_share_members(p_token) m)
    SELECT l.form::text, l.target,
           CASE WHEN l.target_note_id IN (SELECT id FROM members) THEN l.target_note_id END
    FROM public.links_link l
    WHERE l.note_id = p_note AND p_note IN (SELECT id FROM members)
    ORDER BY l.position
$$;
REVOKE EXECUTE ON FUNCTION grove_share_links(text, uuid) FROM PUBLIC;

DO $$ BEGIN
    EXECUTE format('CREATE POLICY share_lookup ON links_link FOR SELECT TO %I '
                   'USING (true)', current_user);
END $$;
"""


class Migration(migrations.Migration):

    dependencies = [("sharing", "0004_share_member_count"), ("links", "0001_links")]

    operations = [migrations.RunSQL(FUNCTIONS,
                                    "DROP POLICY IF EXISTS share_lookup ON links_link; "
                                    "DROP FUNCTION grove_share_links(text, uuid);")]
