"""RLS for a connection that never set the tenant context (real commits, so it runs
outside the per-test transaction)."""

from tests import factories
from tests.grove.kernel.test_rls import account_tables, populate


def test_a_session_that_never_set_the_context_sees_nothing(committed):
    """A fresh connection where grove.account_id was never defined (NULL, not '')."""
    import psycopg
    from django.conf import settings

    populate(factories.owner())
    db = settings.DATABASES["default"]
    with psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"],
                         password=db["PASSWORD"] or None, dbname=db["NAME"]) as conn:
        assert conn.execute("SELECT current_setting('grove.account_id', true)").fetchone() \
            == (None,)
        for table in account_tables():
            assert conn.execute(f'SELECT count(*) FROM "{table}"').fetchone() == (0,), table  # noqa: S608 - names from information_schema
