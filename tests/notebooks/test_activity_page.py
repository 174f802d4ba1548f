"""The Activity page (SPEC §10, §11): what changed and who changed it — each row's time
(UTC, named), author, change, note (linked to that revision), kind and notebook;
filtered by connection and time; paged by the signed cursor (HTMX rows, a plain link
without JavaScript); an empty state; the owner's own account only."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connections
from django.test import Client
from django.utils import timezone

from grove.kernel.tenancy import tenant
from grove.models import Account, Connection
from notebooks import services
from tests import factories
from tests.factories import op

db = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def templates(response) -> list[str]:
    return [t.name for t in response.templates if t.name]


def rows(page: str) -> list[str]:
    return re.findall(r'<li class="change".*?</li>', page, re.S)


def titles(page: str) -> list[str]:
    return re.findall(r'class="title" href="[^"]+">([^<]+)<', page)


def named(owner, name: str, **grant):
    agent = factories.connection(owner, **grant)
    with tenant(owner):
        Connection.objects.filter(id=agent.connection_id).update(name=name)
    return agent


def backdate(owner, note_id, days: int) -> None:
    """Rows that merely need an older date (revisions are append-only for the runtime
    role: the schema owner moves them, on committed rows)."""
    with tenant(owner, using="owner"), connections["owner"].cursor() as cursor:
        cursor.execute("UPDATE notebooks_revision SET created_at = %s WHERE note_id = %s",
                       [timezone.now() - dt.timedelta(days=days), note_id])
        assert cursor.rowcount == 1


@db
def test_an_agents_change_is_listed_with_who_what_and_where(owner, web):
    claude = named(owner, "Claude", all_notebooks=True, personal=True)
    garden = factories.notebook(owner, "Garden")
    note = factories.note(owner, "Water at dawn.", notebook_id=garden.id, kind="preference")
    services.note_update(actor=claude, operation_id=op(), note_id=note.id,
                         content="Water at dawn, never at noon.")
    response = web.get("/activity/")
    page = response.content.decode()
    assert response.status_code == 200 and "notebooks/activity.html" in templates(response)
    assert 'aria-current="page">Activity</a>' in page
    assert 'href="/agents/brief/"' in page  # "What your agents read", from the header
    newest, oldest = rows(page)
    assert 'data-change="update"' in newest and f'data-by="{claude.connection_id}"' in newest
    assert f'href="/notes/{note.id}/?v=2">Water at dawn, never at noon.</a>' in newest
    assert "by <strong class=\"who\">Claude</strong>" in newest
    assert '<span class="kind">preference</span> · Garden · v2' in newest
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d <abbr [^>]*>UTC</abbr>", newest)
    assert 'data-change="create"' in oldest and "you (website)" in oldest
    assert f'href="/notes/{note.id}/?v=1">Water at dawn.</a>' in oldest
    assert "Showing 2 of 2 changes since" in page
    # The link opens that revision's text.
    revision = web.get(f"/notes/{note.id}/", {"v": 1}).content.decode()
    assert 'data-viewing="1"' in revision


@db
def test_filters_by_connection_and_website(owner, web):
    claude = named(owner, "Claude", all_notebooks=True, personal=True)
    cursor_app = named(owner, "Cursor", all_notebooks=True, personal=True)
    factories.note(claude, "From Claude.")
    factories.note(cursor_app, "From Cursor.")
    factories.note(owner, "From me.")
    page = web.get("/activity/").content.decode()
    assert titles(page) == ["From me.", "From Cursor.", "From Claude."]
    assert f'<option value="{claude.connection_id}">Claude</option>' in page
    only = web.get("/activity/", {"connection": str(claude.connection_id)}).content.decode()
    assert titles(only) == ["From Claude."] and "(filtered)" in only
    assert f'<option value="{claude.connection_id}" selected>Claude</option>' in only
    mine = web.get("/activity/", {"connection": "website"}).content.decode()
    assert titles(mine) == ["From me."]
    assert '<option value="website" selected>Website (you)</option>' in mine
    # A revoked connection's past changes can still be looked at.
    from grove.identity import services as identity

    identity.connection_revoke(actor=owner, connection_id=cursor_app.connection_id)
    revoked = web.get("/activity/", {"connection": str(cursor_app.connection_id)})
    assert titles(revoked.content.decode()) == ["From Cursor."]
    assert "Cursor (revoked)" in revoked.content.decode()


def test_since_today_a_week_a_month_or_a_day(committed, owner, web):
    old = factories.note(owner, "Twenty days ago.")
    backdate(owner, old.id, 20)
    week = factories.note(owner, "Three days ago.")
    backdate(owner, week.id, 3)
    factories.note(owner, "Just now.")
    assert titles(web.get("/activity/").content.decode()) == ["Just now.", "Three days ago."]
    assert titles(web.get("/activity/", {"since": "today"}).content.decode()) == ["Just now."]
    month = web.get("/activity/", {"since": "30d"}).content.decode()
    assert titles(month) == ["Just now.", "Three days ago.", "Twenty days ago."]
    assert '<option value="30d" selected>' in month
    day = (timezone.now() - dt.timedelta(days=5)).date()
    by_day = web.get("/activity/", {"day": day.isoformat()}).content.decode()
    assert titles(by_day) == ["Just now.", "Three days ago."]
    assert f"since {day.isoformat()} 00:00 UTC" in by_day


@db
def test_two_pages_with_htmx_and_without(owner, web):
    for number in range(5):
        factories.note(owner, f"Change {number}")
    first = web.get("/activity/", {"limit": 3}).content.decode()
    assert titles(first) == ["Change 4", "Change 3", "Change 2"]
    assert "Showing 3 of 5 changes" in first
    more = re.search(r'<li class="more"><a href="([^"]+)"', first).group(1)
    more = more.replace("&amp;", "&")
    assert "cursor=" in more and "limit=3" in more and "anchor=" in more
    assert 'hx-trigger="revealed, click"' in first
    rest = web.get("/activity/" + more, **HTMX)
    body = rest.content.decode()
    assert rest.status_code == 200 and "<html" not in body
    assert titles(body) == ["Change 1", "Change 0"] and 'class="more"' not in body
    assert 'id="count" hx-swap-oob="true"' in body and "Showing 5 of 5 changes" in body
    # Without JavaScript the link is a whole page.
    plain = web.get("/activity/" + more).content.decode()
    assert "<html" in plain and titles(plain) == ["Change 1", "Change 0"]
    # A filter change with HTMX gets the results only.
    results = web.get("/activity/", {"since": "today"}, **HTMX).content.decode()
    assert results.lstrip().startswith('<section id="results"') and "<html" not in results


@db
def test_empty_state_and_deleted_notes(owner, web):
    page = web.get("/activity/").content.decode()
    assert "No changes since" in page and "it shows up here" in page
    note = factories.note(owner, "Soon gone.")
    services.note_forget(actor=owner, operation_id=op(), items=[note.id])
    page = web.get("/activity/").content.decode()
    assert "(a deleted note)" in page and "Soon gone." not in page
    assert 'data-change="delete"' in page and f"/notes/{note.id}/" not in page
    quiet = web.get("/activity/", {"connection": "website", "since": "today"})
    assert "No changes" not in quiet.content.decode()


@db
def test_bad_filters_are_a_friendly_400(owner, web):
    for params in ({"connection": "someone"}, {"since": "forever"}, {"day": "soon"},
                   {"cursor": "forged"}, {"limit": 0}, {"anchor": "x"}):
        response = web.get("/activity/", params)
        assert response.status_code == 400, params
        assert "error.html" in templates(response)
        partial = web.get("/activity/", params, **HTMX)
        assert partial.status_code == 400 and partial["HX-Retarget"] == "#flash"


@db
def test_only_the_owners_own_account(owner, web):
    factories.note(owner, "Mine alone.")
    stranger = Client()
    stranger.force_login(Account.objects.create_user(username="stranger", password="x" * 20))
    page = stranger.get("/activity/").content.decode()
    assert "Mine alone." not in page and "No changes since" in page


@db
def test_the_new_pages_carry_the_csp_and_no_inline_script_or_style(owner, web):
    garden = factories.notebook(owner, "Garden")
    services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                           content="| a | b |\n|:-:|--:|\n| 1 | 2 |")
    services.vision_update(actor=owner, operation_id=op(), content="Grow food.")
    agent = named(owner, "Claude", all_notebooks=True, personal=True)
    factories.note(agent, "An agent's note.", notebook_id=garden.id)
    for path in (f"/notebooks/{garden.id}/", "/settings/", "/agents/brief/",
                 f"/agents/brief/?connection=website&notebook={garden.id}", "/activity/",
                 f"/activity/?connection={agent.connection_id}"):
        response = web.get(path)
        assert response.status_code == 200, path
        csp = response["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp, path
        page = response.content.decode()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page), path
        assert not re.search(r"\son[a-z]+\s*=", page), path
        assert not re.search(r"\sstyle\s*=", page), path
