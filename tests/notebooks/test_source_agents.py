"""The library's "Saved by" filter: a list of the agents that saved the account's notes
(`source_agent_list`, read by skipping through an index rather than every note), offered
as a select; the filter itself stays the exact match the REST `sourceAgent` filter is."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from grove.kernel.errors import Forbidden
from grove.kernel.tenancy import tenant
from notebooks import services
from notebooks.selectors.source_agents import _DISTINCT_AGENTS, source_agent_list
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def test_the_distinct_agents_of_the_account_in_order(owner):
    for agent in ("cursor", "claude", "cursor", "Claude", "script: backup", "claude"):
        factories.note(owner, f"Saved by {agent} ({op()})", source_agent=agent)
    factories.note(owner, "Saved by nobody in particular")  # no agent: not a choice
    # Each once, in the order a person reads them (case aside).
    assert source_agent_list(actor=owner) == ["Claude", "claude", "cursor", "script: backup"]


def test_another_accounts_agents_never_appear(owner):
    factories.note(owner, "Mine", source_agent="claude")
    stranger = factories.owner()
    # Names that sort before, between and after the owner's.
    for agent in ("aardvark-bot", "chatgpt", "zz-stranger"):
        factories.note(stranger, f"Theirs, by {agent}", source_agent=agent)
    assert source_agent_list(actor=owner) == ["claude"]
    assert source_agent_list(actor=stranger) == ["aardvark-bot", "chatgpt", "zz-stranger"]
    lonely = factories.owner()
    assert source_agent_list(actor=lonely) == []


def test_archived_and_expired_notes_count_deleted_ones_do_not(owner):
    kept = factories.note(owner, "Archived but kept", source_agent="archivist")
    services.note_archive(actor=owner, operation_id=op(), items=[kept.id])
    gone = factories.note(owner, "Deleted", source_agent="shredder")
    services.note_forget(actor=owner, operation_id=op(), items=[gone.id])
    assert source_agent_list(actor=owner) == ["archivist"]


def test_at_most_the_limit(owner):
    for number in range(5):
        factories.note(owner, f"Note {number}", source_agent=f"agent {number}")
    assert source_agent_list(actor=owner, limit=3) == ["agent 0", "agent 1", "agent 2"]


def test_only_the_owners_session_reads_them(owner):
    factories.note(owner, "Mine", source_agent="claude")
    key = factories.connection(owner, all_notebooks=True, personal=True)
    with pytest.raises(Forbidden):
        source_agent_list(actor=key)


def test_it_jumps_through_the_index_not_every_note(owner):
    """One index probe per agent: the work does not grow with the number of notes."""
    with tenant(owner), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO notebooks_note (id, account_id, content, kind, source_agent, "
            "capture, pinned, importance, status, version, created_at, updated_at, "
            "content_hash, indexing) SELECT gen_random_uuid(), %s, 'Bulk note ' || g, "
            "'fact', (ARRAY['claude', 'cursor', 'script'])[1 + g %% 3], 'explicit', false, "
            "0.5, 'active', 1, now(), now(), '', 'ready' FROM generate_series(1, 5000) g",
            [owner.account_id])
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + _DISTINCT_AGENTS,
                       {"account": owner.account_id, "limit": 200})
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "using note_source_agents on notebooks_note" in plan, plan
    assert "Seq Scan" not in plan and "Sort" not in plan, plan
    probes = [int(n) for n in re.findall(r"Index Searches: (\d+)", plan)]
    assert sum(probes) <= 4 + 1, plan  # the first agent, each next one, and the end
    assert source_agent_list(actor=owner) == ["claude", "cursor", "script"]


# -- the library's select ------------------------------------------------------------------------


def _options(html: str) -> list[tuple[str, str, bool]]:
    select = re.search(r'<select name="agent">(.*?)</select>', html, re.S)
    assert select, "no Saved by select"
    return [(value, label, bool(selected)) for value, selected, label in re.findall(
        r'<option value="([^"]*)"( selected)?>([^<]*)</option>', select.group(1))]


def test_the_library_offers_the_agents_as_a_select(owner, web):
    factories.note(owner, "From Claude", source_agent="claude")
    factories.note(owner, "From Cursor", source_agent="Cursor")
    web.post("/notes/new", {"operation_id": str(op()), "content": "Mine", "kind": "fact"})
    factories.note(factories.owner(), "A stranger's", source_agent="stranger-bot")
    html = web.get("/").content.decode()
    assert 'name="agent" value=' not in html  # no free-text box any more
    options = _options(html)
    assert options[0] == ("", "Any agent", False)
    assert options[1:] == [("claude", "claude", False), ("Cursor", "Cursor", False),
                           ("website", "you (website)", False)]

    # Picking one filters by exactly that agent (case and all), and shows it picked.
    picked = web.get("/", {"agent": "Cursor"}).content.decode()
    assert "From Cursor" in picked and "From Claude" not in picked
    assert ("Cursor", "Cursor", True) in _options(picked)
    assert "Showing 1 of 1 note" in picked


def test_a_filter_on_an_agent_without_notes_stays_visible(owner, web):
    factories.note(owner, "From Claude", source_agent="claude")
    html = web.get("/", {"agent": "retired-bot"}).content.decode()
    assert ("retired-bot", "retired-bot", True) in _options(html)
    assert "No notes match these filters." in html


def test_search_as_you_type_does_not_read_the_agents_again(owner, web):
    """The select is outside the partial a search or a filter change swaps in."""
    factories.note(owner, "From Claude", source_agent="claude")
    web.get("/", {"q": "claude"}, **HTMX)  # warm the session
    with CaptureQueriesContext(connection) as partial:
        body = web.get("/", {"q": "claude", "agent": "claude"}, **HTMX).content.decode()
    assert "From Claude" in body and '<select name="agent"' not in body
    assert not any("WITH RECURSIVE agents" in q["sql"] for q in partial.captured_queries)


def test_the_rest_filter_is_unchanged(owner):
    """The API's sourceAgent filter is the same exact match (the select only offers
    values that exist)."""
    from notebooks.selectors.search import note_search

    factories.note(owner, "From Claude", source_agent="claude")
    factories.note(owner, "From CLAUDE", source_agent="CLAUDE")
    found = note_search(actor=owner, source_agent="claude")
    assert [item.note.content for item in found.data] == ["From Claude"]
    assert note_search(actor=owner, source_agent=" claude ").meta.available == 1
