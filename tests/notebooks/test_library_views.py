"""The library pages and their HTMX partials: status, template, key content; a
stranger's ids are 404 everywhere; the library page's query count does not grow with
the number of notes."""

from __future__ import annotations

import io
import json
import re
import uuid

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from grove.kernel.tenancy import tenant
from grove.models import Account
from notebooks import selectors, services
from notebooks.models import Note
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def templates(response) -> list[str]:
    return [t.name for t in response.templates if t.name]


# -- the library -------------------------------------------------------------------------------


def test_library_lists_notes_with_honest_counts_and_a_next_page(owner, web):
    for number in range(30):
        factories.note(owner, f"Entry {number:02d}\n\nbody of entry {number}")
    page = web.get("/")
    html = page.content.decode()
    assert page.status_code == 200 and "notebooks/home.html" in templates(page)
    assert "Showing 25 of 30 notes" in html
    assert html.count('class="note"') == 25
    more = re.search(r'<li class="more"><a href="([^"]+)"', html).group(1).replace("&amp;", "&")
    assert "cursor=" in more and "shown=25" in more

    # Without JavaScript the link is a whole page; with HTMX only the rows and the count.
    rest = web.get("/" + more, **HTMX)
    body = rest.content.decode()
    assert rest.status_code == 200 and "<html" not in body
    assert body.count('class="note"') == 5 and 'class="more"' not in body
    assert 'id="count" hx-swap-oob="true"' in body and "Showing 30 of 30 notes" in body
    titles = re.findall(r'class="title" href="[^"]+">([^<]+)<', html + body)
    assert len(set(titles)) == 30


def test_search_partial_highlights_matches(owner, web):
    factories.note(owner, "Sourdough\n\nThe starter needs feeding twice a day.")
    factories.note(owner, "Bicycle\n\nPump the tyres to 4 bar.")
    response = web.get("/", {"q": "starter"}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    assert body.startswith('\n<section id="results"') or body.lstrip().startswith(
        '<section id="results"')
    assert "Showing 1 of 1 note matching “starter”" in body
    assert "<mark>starter</mark> needs feeding twice a day" in body and "Bicycle" not in body
    # The full page for the same URL (a reload, or no JavaScript) has the box filled.
    full = web.get("/", {"q": "starter"}).content.decode()
    assert 'value="starter"' in full and "<mark>starter</mark>" in full


def test_search_text_in_notes_is_escaped_around_highlights(owner, web):
    factories.note(owner, "x\n\n<b>bold</b> starter & <script>alert(1)</script>")
    body = web.get("/", {"q": "starter"}).content.decode()
    assert "<script>alert" not in body and "<b>bold</b>" not in body
    assert "<mark>starter</mark>" in body


def test_filters_status_kind_agent_lifetime_and_sort(owner, web):
    archived = factories.note(owner, "Old plan", kind="decision")
    services.note_archive(actor=owner, operation_id=op(), items=[archived.id])
    factories.note(owner, "A fact from an agent", source_agent="claude")
    factories.note(owner, "Short-lived", retention_days=3)
    default = web.get("/").content.decode()
    assert "Old plan" not in default and "Showing 2 of 2 notes" in default
    shown = web.get("/", {"status": "archived"}).content.decode()
    assert "Old plan" in shown and "Showing 1 of 1 archived note" in shown
    by_agent = web.get("/", {"agent": "claude"}).content.decode()
    assert "A fact from an agent" in by_agent and "Short-lived" not in by_agent
    ephemeral = web.get("/", {"lifetime": "ephemeral"}).content.decode()
    assert "Short-lived" in ephemeral and "A fact" not in ephemeral
    kinds = web.get("/", {"kind": "decision", "status": "archived"}).content.decode()
    assert "Old plan" in kinds
    oldest = web.get("/", {"sort": "updated_asc"}).content.decode()
    assert oldest.index("A fact from an agent") < oldest.index("Short-lived")


def test_place_personal_and_notebook(owner, web):
    notebook = factories.notebook(owner, "Garden")
    factories.note(owner, "Tomatoes in May", notebook_id=notebook.id)
    factories.note(owner, "My own thought")
    garden = web.get("/", {"notebook": str(notebook.id)}).content.decode()
    assert "Tomatoes in May" in garden and "My own thought" not in garden
    assert "<h1>Garden</h1>" in garden and f"/notebooks/{notebook.id}/" in garden
    personal = web.get("/", {"notebook": "personal"}).content.decode()
    assert "My own thought" in personal and "Tomatoes" not in personal


@pytest.mark.parametrize("params", [
    {"status": "deleted"}, {"kind": "poem"}, {"cursor": "not-a-cursor"},
    {"lifetime": "forever"}, {"q": "x" * 501},  # relevance with no search: the default order
])
def test_bad_filters_are_a_friendly_400(owner, web, params):
    response = web.get("/", params)
    assert response.status_code == 400 and "error.html" in templates(response)
    assert 'data-code="' in response.content.decode()
    partial = web.get("/", params, **HTMX)
    assert partial.status_code == 400 and partial["HX-Retarget"] == "#flash"
    assert "<html" not in partial.content.decode()


def test_a_cursor_from_another_search_is_refused(owner, web):
    for number in range(30):
        factories.note(owner, f"Entry {number}")
    html = web.get("/").content.decode()
    cursor = re.search(r"cursor=([^&\"]+)", html).group(1)
    response = web.get("/", {"cursor": cursor, "kind": "fact", "q": "Entry"})
    assert response.status_code == 400


def test_library_query_count_does_not_grow_with_notes(owner, web):
    notebook = factories.notebook(owner, "Box")
    factories.note(owner, "one", notebook_id=notebook.id)
    web.get("/")  # warm the session and content types

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert web.get("/").status_code == 200
        return len(queries)

    few = count()
    for number in range(20):
        factories.note(owner, f"note {number}", notebook_id=notebook.id,
                       source_agent=f"agent {number}")
        factories.notebook(owner, f"Box {number}")
    assert count() == few
    # (The tenant transaction costs two: it reads the transaction's identity, then sets
    # the context and its MAC, grove.kernel.tenancy; in a test each is also a savepoint
    # and its release. Two transactions: the notes (the page and its count, from the
    # kept counts), and the sidebar's notebooks with their note counts, the Pinned and
    # tag counts and the "Saved by" agents.)
    assert few <= 18, few


# -- creating --------------------------------------------------------------------------------


def test_new_note_page_preselects_the_notebook_and_saves(owner, web):
    notebook = factories.notebook(owner, "Ideas")
    page = web.get("/notes/new", {"notebook": str(notebook.id)})
    assert page.status_code == 200 and "notebooks/new_note.html" in templates(page)
    assert f'<option value="{notebook.id}" selected>Ideas</option>' in page.content.decode()
    saved = web.post("/notes/new", {"operation_id": str(uuid.uuid4()), "content": "Fly",
                                    "kind": "fact", "notebook": str(notebook.id)})
    [note] = selectors.note_list(actor=owner)
    assert saved.status_code == 302 and saved["Location"] == f"/notes/{note.id}/"
    assert note.notebook_id == notebook.id


def test_new_notebook_page_offers_parents_as_paths(owner, web):
    top = factories.notebook(owner, "Top")
    factories.notebook(owner, "Sub", parent=top.id)
    page = web.get("/notebooks/new", {"parent": str(top.id)})
    html = page.content.decode()
    assert page.status_code == 200 and ">Top / Sub</option>" in html
    assert f'<option value="{top.id}" selected>Top</option>' in html
    made = web.post("/notebooks/new", {"operation_id": str(uuid.uuid4()), "name": "Child",
                                       "parent": str(top.id)})
    child = next(nb for nb in selectors.notebook_list(actor=owner) if nb.name == "Child")
    assert made.status_code == 302 and made["Location"] == f"/?notebook={child.id}"


# -- the note page: diff, move, indexing retry ---------------------------------------------------


def test_diff_between_any_two_revisions(owner, web):
    note = factories.note(owner, "line one\nline two\nline three")
    services.note_update(actor=owner, operation_id=op(), note_id=note.id, expected_version=1,
                         content="line one\nline 2\nline three")
    services.note_update(actor=owner, operation_id=op(), note_id=note.id, expected_version=2,
                         content="line one\nline 2\nline three\nline four")
    partial = web.get(f"/notes/{note.id}/diff", {"a": 1, "b": 3}, **HTMX)
    body = partial.content.decode()
    assert partial.status_code == 200 and body.lstrip().startswith('<div id="diff"')
    assert '<span class="del">- line two</span>' in body
    assert '<span class="add">+ line 2</span>' in body
    assert '<span class="add">+ line four</span>' in body
    assert '<span class="same">  line one</span>' in body
    backwards = web.get(f"/notes/{note.id}/diff", {"a": 3, "b": 2}).content.decode()
    assert '<span class="del">- line four</span>' in backwards and "<html" in backwards
    missing = web.get(f"/notes/{note.id}/diff", {"a": 1, "b": 9}, **HTMX)
    assert missing.status_code == 400 and "versions 1 to 3" in missing.content.decode()


def test_move_note_with_the_picker(owner, web):
    note = factories.note(owner, "wandering")
    notebook = factories.notebook(owner, "Home")
    page = web.get(f"/notes/{note.id}/").content.decode()
    assert f'<option value="{notebook.id}">Home</option>' in page
    moved = web.post(f"/notes/{note.id}/move", {"operation_id": str(uuid.uuid4()),
                                                 "destination": str(notebook.id)})
    assert moved.status_code == 302
    assert selectors.note_get(actor=owner, note_id=note.id).notebook_id == notebook.id
    back = web.post(f"/notes/{note.id}/move", {"operation_id": str(uuid.uuid4()),
                                                "destination": ""})
    assert back.status_code == 302
    assert selectors.note_get(actor=owner, note_id=note.id).notebook_id is None


def test_failed_indexing_can_be_retried_from_the_page(owner, web):
    note = factories.note(owner, "needs vectors")
    with tenant(owner):
        Note.objects.filter(id=note.id).update(indexing="failed")
    page = web.get(f"/notes/{note.id}/").content.decode()
    assert "Retry indexing" in page
    retried = web.post(f"/notes/{note.id}/retry-indexing")
    assert retried.status_code == 302
    assert selectors.note_get(actor=owner, note_id=note.id).indexing == "pending"
    again = web.post(f"/notes/{note.id}/retry-indexing", follow=True)  # idempotent
    assert again.status_code == 200 and "Indexing queued again." in again.content.decode()
    assert selectors.note_get(actor=owner, note_id=note.id).indexing == "pending"


def test_note_page_shows_metadata(owner, web):
    note = factories.note(owner, "kept a while", source_agent="cursor", retention_days=7,
                          task_id="t-1", kind="handoff")
    html = web.get(f"/notes/{note.id}/").content.decode()
    for text in ("7 days", "expires", "cursor", "t-1", "handoff", note.versioned_id):
        assert text in html, text


# -- notebooks -------------------------------------------------------------------------------


def test_notebook_page_shows_exact_counts_and_acts_on_confirmation(owner, web):
    top = factories.notebook(owner, "Top")
    child = factories.notebook(owner, "Child", parent=top.id)
    for text in ("a", "b"):
        factories.note(owner, text, notebook_id=child.id)
    factories.note(owner, "c", notebook_id=top.id)
    page = web.get(f"/notebooks/{top.id}/")
    html = page.content.decode()
    assert page.status_code == 200 and "notebooks/notebook.html" in templates(page)
    assert '<strong data-count="notebooks">2</strong>' in html
    assert '<strong data-count="notes">3</strong>' in html
    unconfirmed = web.post(f"/notebooks/{top.id}/archive", {})
    assert unconfirmed.status_code == 400
    assert "Tick the confirmation" in unconfirmed.content.decode()
    assert selectors.notebook_get(actor=owner, notebook_id=top.id).archived_at is None
    archived = web.post(f"/notebooks/{top.id}/archive", {"confirm": "on"}, follow=True)
    assert "Archived 2 notebooks and 3 notes." in archived.content.decode()
    assert selectors.notebook_get(actor=owner, notebook_id=child.id).archived_at is not None


def test_notebook_rename_move_and_cycle_refused(owner, web):
    top = factories.notebook(owner, "Top")
    child = factories.notebook(owner, "Child", parent=top.id)
    other = factories.notebook(owner, "Other")
    page = web.get(f"/notebooks/{top.id}/").content.decode()
    assert ">Top / Child</option>" not in page and ">Other</option>" in page
    renamed = web.post(f"/notebooks/{top.id}/", {"operation_id": str(uuid.uuid4()),
                                                 "name": "Top renamed", "parent": str(other.id)})
    assert renamed.status_code == 302
    moved = selectors.notebook_get(actor=owner, notebook_id=top.id)
    assert (moved.name, moved.parent_id) == ("Top renamed", other.id)
    cycle = web.post(f"/notebooks/{top.id}/", {"operation_id": str(uuid.uuid4()),
                                               "name": "Top renamed", "parent": str(child.id)})
    assert cycle.status_code == 409 and "inside itself" in cycle.content.decode()


# -- settings: capture pause, providers, import ---------------------------------------------------


def test_settings_page_pause_and_provider_status(owner, web):
    page = web.get("/settings/")
    html = page.content.decode()
    assert page.status_code == 200 and "grove/settings.html" in templates(page)
    assert 'data-capture="on"' in html and "dimensions" in html
    assert "not configured" in html and 'href="/v1/export"' in html
    assert web.post("/settings/", {"capture": "paused"}).status_code == 302
    assert Account.objects.get(id=owner.account_id).capture_paused_at is not None
    assert 'data-capture="paused"' in web.get("/settings/").content.decode()
    web.post("/settings/", {"capture": "on"})
    assert Account.objects.get(id=owner.account_id).capture_paused_at is None


def test_export_downloads_with_the_session(owner, web):
    factories.note(owner, "exported")
    response = web.get("/v1/export")
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert response.status_code == 200 and any(r.get("content") == "exported" for r in lines)


def test_import_upload_all_or_nothing(owner, web):
    source = factories.owner("source")
    notebook = factories.notebook(source, "Moved")
    factories.note(source, "travels", notebook_id=notebook.id)
    from notebooks.services.portability import export_records

    ndjson = "".join(json.dumps(r, default=str) + "\n" for r in export_records(actor=source))
    upload = io.BytesIO(ndjson.encode())
    upload.name = "export.ndjson"
    done = web.post("/settings/import", {"file": upload}, follow=True)
    assert "Imported 1 notebooks, 1 notes, 1 revisions and 0 visions." in done.content.decode()
    assert [n.content for n in selectors.note_list(actor=owner)] == ["travels"]

    broken = io.BytesIO((ndjson + "{not json\n").encode())
    broken.name = "broken.ndjson"
    refused = web.post("/settings/import", {"file": broken})
    assert refused.status_code == 400 and "is not JSON" in refused.content.decode()
    assert len(selectors.note_list(actor=owner)) == 1  # nothing from the broken file


# -- strangers, CSRF, errors -------------------------------------------------------------------


def test_a_stranger_gets_404_on_every_page_and_action(owner):
    notebook = factories.notebook(owner, "Private")
    note = factories.note(owner, "secret", notebook_id=notebook.id)
    stranger = Client()
    stranger.force_login(Account.objects.create_user(username="stranger", password="x" * 20))
    gets = [f"/notes/{note.id}/", f"/notes/{note.id}/diff?a=1&b=1",
            f"/notebooks/{notebook.id}/", f"/?notebook={notebook.id}"]
    posts = [f"/notes/{note.id}/edit", f"/notes/{note.id}/move", f"/notes/{note.id}/archive",
             f"/notes/{note.id}/retry-indexing", f"/notes/{note.id}/revisions/1/restore",
             f"/notebooks/{notebook.id}/", f"/notebooks/{notebook.id}/archive",
             f"/notebooks/{notebook.id}/delete"]
    form = {"expected_version": 1, "content": "x", "kind": "fact", "name": "x",
            "confirm": "on", "destination": ""}
    for path in gets:
        response = stranger.get(path)
        assert response.status_code == 404, path
        assert "secret" not in response.content.decode() and "Private" not in \
            response.content.decode()
    for path in posts:
        response = stranger.post(path, {**form, "operation_id": str(uuid.uuid4())})
        assert response.status_code == 404, path
    assert selectors.note_get(actor=owner, note_id=note.id).content == "secret"
    assert selectors.notebook_get(actor=owner, notebook_id=notebook.id).archived_at is None


def test_every_post_needs_the_csrf_token(owner):
    note = factories.note(owner, "guarded")
    client = Client(enforce_csrf_checks=True)
    client.force_login(Account.objects.get(id=owner.account_id))
    response = client.post(f"/notes/{note.id}/archive", {})
    assert response.status_code == 403 and "This form expired" in response.content.decode()
    assert selectors.note_get(actor=owner, note_id=note.id).status == "active"


def test_pages_carry_security_headers_and_no_inline_script(owner, web):
    note = factories.note(owner, "| a |\n|:-:|\n| b |")
    notebook = factories.notebook(owner, "N")
    for path in ("/", f"/notes/{note.id}/", f"/notebooks/{notebook.id}/", "/notes/new",
                 "/notebooks/new", "/connections/", "/settings/", "/nowhere/"):
        response = web.get(path)
        csp = response["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "style-src 'self'" in csp, path
        assert "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
        assert response["X-Frame-Options"] == "DENY"
        assert response["Referrer-Policy"] == "same-origin"
        html = response.content.decode()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), path
        assert not re.search(r"\son[a-z]+\s*=", html), path
        assert not re.search(r"\sstyle\s*=", html), path
