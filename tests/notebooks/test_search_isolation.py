"""Library search finds matches through a security-definer function (the GIN index is
unusable under RLS from the runtime role). The function only narrows to the current
account; the caller's query under RLS and its grant decide the rest."""

from __future__ import annotations

import pytest
from django.db import connection

from grove.runtime.dbroles import DEFINER_FUNCTIONS
from notebooks import services
from notebooks.selectors import search
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db
CALLS = ["SELECT count(*) FROM grove_search_matches('walnut'::tsquery)",
         "SELECT count(*) FROM grove_lookup_matches('walnut'::tsquery)",
         "SELECT count(*) FROM grove_lookup_matches('walnut'::tsquery, 10)"]


@pytest.mark.parametrize("call", CALLS)
def test_the_function_sees_only_the_current_account(call):
    alice, bob = factories.owner("alice"), factories.owner("bob")
    factories.note(alice, "walnut bread")
    for _ in range(2):
        factories.note(bob, "walnut cake")
    with connection.cursor() as cursor:
        cursor.execute(call)
        assert cursor.fetchone()[0] == 0  # no tenant: nothing
    with factories.tenant(alice), connection.cursor() as cursor:
        cursor.execute(call)
        assert cursor.fetchone()[0] == 1
    with factories.tenant(bob), connection.cursor() as cursor:
        cursor.execute(call)
        assert cursor.fetchone()[0] == 2


def test_search_still_honours_grants_status_and_deletion():
    owner = factories.owner()
    shared = factories.notebook(owner, "Shared")
    hidden = factories.notebook(owner, "Hidden")
    factories.note(owner, "walnut in shared", notebook_id=shared.id)
    factories.note(owner, "walnut in hidden", notebook_id=hidden.id)
    factories.note(owner, "walnut personal")
    gone = factories.note(owner, "walnut deleted", notebook_id=shared.id)
    services.note_forget(actor=owner, operation_id=op(), items=[gone.id])
    archived = factories.note(owner, "walnut archived", notebook_id=shared.id)
    services.note_archive(actor=owner, operation_id=op(), items=[archived.id])
    agent = factories.connection(owner, notebooks=[shared.id], personal=False)

    seen = search.note_search(actor=agent, query="walnut")
    assert [i.note.content for i in seen.data] == ["walnut in shared"]
    assert seen.meta.available == 1
    everything = search.note_search(actor=owner, query="walnut")
    assert {i.note.content for i in everything.data} == {
        "walnut in shared", "walnut in hidden", "walnut personal"}
    archived_only = search.note_search(actor=agent, query="walnut", status="archived")
    assert [i.note.content for i in archived_only.data] == ["walnut archived"]


def test_the_function_is_not_executable_by_public():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.grantee FROM pg_proc p, aclexplode(p.proacl) a "
            "WHERE p.oid = to_regprocedure('grove_search_matches(tsquery)')")
        grantees = {row[0] for row in cursor.fetchall()}
        cursor.execute("SELECT oid FROM pg_roles WHERE rolname = current_user")
        runtime = cursor.fetchone()[0]
    assert runtime in grantees and 0 not in grantees  # 0 = PUBLIC


LEXICAL_MATCHES = next(f for f in DEFINER_FUNCTIONS if f.startswith("grove_lexical_matches("))


@pytest.mark.parametrize("function", [
    "grove_search_matches(tsquery)", "grove_search_matches(tsquery, integer)",
    "grove_lookup_matches(tsquery)", "grove_lookup_matches(tsquery, integer)",
    "grove_search_variants(text, text, float8, integer)", "grove_tagged(text)",
    "grove_tag_counts(integer)",
    LEXICAL_MATCHES])
def test_the_lookups_verify_the_account_once_per_statement(function):
    """Each call of grove_current_account() recomputes the context's MAC: as a plain
    call in a filter it ran for every candidate row (most of search as you type's
    lookup at 100k notes); as a sub-select it runs once (migration 0023)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_functiondef(%s::regprocedure)", [function])
        body = cursor.fetchone()[0]
    calls = body.count("grove_current_account()")
    assert calls and calls == body.count("(SELECT public.grove_current_account())"), body
