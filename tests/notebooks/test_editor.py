"""The editor (title line + text, saved through the ordinary services), its live preview
(the note page's own sanitised renderer, limited per body and per session) and the
task-list boxes ticked on the note page (an ordinary update fenced by the version shown)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from grove.interfaces.rendering import render_markdown
from grove.interfaces.tasklists import task_items, with_task_set
from grove.kernel.errors import Conflict, Invalid
from grove.kernel.tenancy import tenant
from grove.models import Account
from notebooks import services
from notebooks.forms import join_title, split_title
from notebooks.views import editor
from tests import factories
from tests.factories import op
from tests.notebooks.test_rendering import ATTACKS, ActiveParts

pytestmark = pytest.mark.django_db

ROUND_TRIPS = [
    "One line",
    "# Oven calibration\n\nSet the dial 10 °C low.",
    "## Second-level title  \n    indented code\n\n\n- [ ] a task",
    "Title\n\n\n\nafter blank lines\n  trailing spaces kept  \nend",
    "*emphasis* title with `code`\n> quote",
]


@pytest.mark.parametrize("content", ROUND_TRIPS)
def test_title_and_text_round_trip_exactly(content):
    """The title is the first line as written; the text the rest: joined back, the note
    is unchanged — with a browser's "\\r\\n" line breaks too."""
    title, body = split_title(content)
    assert "\n" not in title and join_title(title, body).strip() == content
    assert join_title(title, body.replace("\n", "\r\n")).strip() == content


def save(web, note_id, title, content, version, kind="fact"):
    return web.post(f"/notes/{note_id}/edit", {
        "operation_id": str(uuid.uuid4()), "expected_version": version, "title": title,
        "content": content, "kind": kind})


@pytest.mark.parametrize("content", ROUND_TRIPS)
def test_the_editor_shows_a_note_so_that_saving_it_changes_nothing(owner, web, content):
    import re
    from html import unescape

    note = factories.note(owner, content)
    page = web.get(f"/notes/{note.id}/").content.decode()
    title = unescape(re.search(r'<input type="text" name="title" value="([^"]*)"', page)[1])
    body = unescape(re.search(r'<textarea name="content"[^>]*>(.*?)</textarea>', page,
                              re.S)[1])
    body = body.removeprefix("\n")  # a browser drops the newline right after <textarea>
    assert save(web, note.id, title, body.replace("\n", "\r\n"), 1).status_code == 302
    row = factories.note_row(owner, note.id)
    assert (row.content, row.version) == (content, 1)  # the same text: no new version


def test_a_title_and_text_save_as_one_note(owner, web):
    note = factories.note(owner, "Old title\nold text")
    assert save(web, note.id, "# New title", "\r\nNew text.", 1).status_code == 302
    assert factories.note_row(owner, note.id).content == "# New title\n\nNew text."
    created = web.post("/notes/new", {"operation_id": str(uuid.uuid4()), "title": "Shopping",
                                      "content": "- [ ] flour", "kind": "fact"})
    assert created.status_code == 302
    [new] = [n for n in services_notes(owner) if n.id != note.id]
    assert new.content == "Shopping\n- [ ] flour"


def services_notes(owner):
    from notebooks import selectors

    return selectors.note_list(actor=owner)


def test_a_post_without_a_title_saves_the_whole_text(owner, web):
    """The text field alone is the whole note (a form or script that knows no title)."""
    note = factories.note(owner, "first")
    response = web.post(f"/notes/{note.id}/edit", {
        "operation_id": str(uuid.uuid4()), "expected_version": 1,
        "content": "# All of it\nin one field", "kind": "fact"})
    assert response.status_code == 302
    assert factories.note_row(owner, note.id).content == "# All of it\nin one field"


def test_a_title_with_a_line_break_or_an_empty_note_is_refused_in_place(owner, web):
    note = factories.note(owner, "keep me")
    broken = save(web, note.id, "two\nlines", "text", 1)
    assert broken.status_code == 400 and "The title is one line." in broken.content.decode()
    empty = save(web, note.id, "  ", "\r\n", 1)
    assert empty.status_code == 400
    assert "Write something first" in empty.content.decode()
    assert 'id="edit"' in empty.content.decode() and "data-unsaved" in empty.content.decode()
    assert factories.note_row(owner, note.id).content == "keep me"
    new = web.post("/notes/new", {"operation_id": str(uuid.uuid4()), "title": "",
                                  "content": "", "kind": "fact"})
    assert new.status_code == 400 and "Write something first" in new.content.decode()


# -- the preview ----------------------------------------------------------------------------


def preview(client, title="", content="", **extra):
    return client.post("/notes/preview", {"title": title, "content": content},
                       HTTP_HX_REQUEST="true", **extra)


def test_the_preview_is_the_note_pages_rendering(owner, web):
    text = "# Plan\n\n| a | b |\n|:-|-:|\n| 1 | ~~2~~ |\n\n- [x] done\n- [ ] todo"
    title, body = split_title(text)
    response = preview(web, title, body)
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    assert response.content.decode() == str(render_markdown(text))
    empty = preview(web)
    assert empty.status_code == 200 and "The preview shows here" in empty.content.decode()


def test_the_preview_never_renders_anything_active(owner, web):
    hostile = "\n\n".join([*ATTACKS, "![chart](https://evil.example/c.png)",
                           '<img src="http://evil.example/x">'])
    html = preview(web, "<script>alert(1)</script>", hostile).content.decode()
    assert ActiveParts(html).found == []
    assert "<img" not in html and "<script" not in html  # shown as text, escaped
    assert '<a href="javascript' not in html.lower()  # ActiveParts checks every attribute
    assert "Image: chart — evil.example" in html  # a link to click, never a fetch


def test_preview_limits_size_rate_and_requires_a_session(owner, web):
    too_big = preview(web, content="x" * (editor.PREVIEW_MAX_BYTES + 1))
    assert too_big.status_code == 413 and "Too long to preview" in too_big.content.decode()
    too_long = preview(web, content="word " * 40_100)  # past 200,000 characters, not bytes
    # Drawn still (it is being written), under what saving it would say.
    assert too_long.status_code == 200 and "Content is 200,499 characters; no note holds " \
        "more than 200,000.</p><h1>word word" in too_long.content.decode()
    past = preview(web, content="x" * 201_500)  # beyond any note's limit and its slack
    assert past.status_code == 413 and "Content is 201,500 characters" in past.content.decode()
    broken = preview(web, title="a\nb", content="x")
    assert broken.status_code == 400 and "one line" in broken.content.decode()
    assert web.get("/notes/preview").status_code == 405
    signed_out = Client().post("/notes/preview", {"content": "x"})
    assert signed_out.status_code == 403 and "sign in again" in signed_out.content.decode()
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(Account.objects.get(id=owner.account_id))
    assert strict.post("/notes/preview", {"content": "x"}).status_code == 403  # CSRF
    for _ in range(editor.PREVIEW_RATE_LIMIT - 3):  # three were counted (not the 413 by size)
        assert preview(web, content="fine").status_code == 200
    limited = preview(web, content="one too many")
    assert limited.status_code == 429 and int(limited["Retry-After"]) >= 1
    assert "paused" in limited.content.decode()


def test_preview_costs_no_query_beyond_the_session(owner, web, django_assert_num_queries):
    preview(web, content="warm")
    with django_assert_num_queries(2):  # the session and the account
        assert preview(web, "# T", "- [ ] a").status_code == 200


# -- task-list boxes --------------------------------------------------------------------------

CHECKLIST = "# Bake\n\n- [ ] flour\n- [x] oven on\n  - [ ] nested\n\n`- [ ] not a box`"


def test_task_items_match_the_rendered_boxes():
    boxes = str(render_markdown(CHECKLIST)).count('type="checkbox"')
    items = task_items(CHECKLIST)
    assert [(i.done, i.text) for i in items] == [(False, "flour"), (True, "oven on"),
                                                 (False, "nested")]
    assert len(items) == boxes
    assert with_task_set(CHECKLIST, 2, True) == CHECKLIST.replace("  - [ ] nested",
                                                                  "  - [x] nested")
    assert with_task_set(CHECKLIST, 1, False) == CHECKLIST.replace("[x] oven", "[ ] oven")
    assert with_task_set(CHECKLIST, 0, False) == CHECKLIST  # already clear
    assert with_task_set(CHECKLIST, 3, True) is None
    crlf = CHECKLIST.replace("\n", "\r\n")
    assert with_task_set(crlf, 2, True) == crlf.replace("- [ ] nested", "- [x] nested")


def tick(web, note_id, index, version, done=True, operation_id=None):
    return web.post(f"/notes/{note_id}/tasks/{index}", {
        "operation_id": str(operation_id or uuid.uuid4()), "expected_version": version,
        "done": "1" if done else "0"})


def test_ticking_a_box_saves_a_new_revision(owner, web):
    note = factories.note(owner, CHECKLIST)
    page = web.get(f"/notes/{note.id}/").content.decode()
    assert page.count('class="task-tick"') == 3 and 'role="checkbox"' in page
    assert f'action="/notes/{note.id}/tasks/2"' in page
    response = tick(web, note.id, 0, 1)
    assert response.status_code == 302
    assert response["Location"] == f"/notes/{note.id}/#task-0"
    row = factories.note_row(owner, note.id)
    assert (row.version, row.content) == (2, CHECKLIST.replace("[ ] flour", "[x] flour"))
    assert factories.revisions(owner, note.id)[-1].reason == "update"
    assert tick(web, note.id, 1, 2, done=False).status_code == 302
    assert factories.note_row(owner, note.id).content.count("[x]") == 1


def test_only_the_task_lists_own_boxes_become_forms(owner, web):
    """Text that spells a checkbox — in code, in a link's title, as raw HTML — stays
    text: only the renderer's boxes are found, and they are the ones made tickable."""
    marker = '<input class="task-list-item-checkbox" disabled="disabled" type="checkbox">'
    text = (f"- [ ] real\n\n`{marker}`\n\n[x](https://example.org '{marker}')\n\n{marker}"
            "\n\n- [x] also real")
    note = factories.note(owner, text)
    page = web.get(f"/notes/{note.id}/").content.decode()
    content = page[page.index('<div class="content markdown">'):page.index('<dl class="facts">')]
    assert content.count('class="task-tick"') == 2
    assert content.count("<input") == 2 * 4  # the two forms' hidden fields, nothing else
    assert ActiveParts(content).found == []
    assert tick(web, note.id, 1, 1, done=False).status_code == 302
    assert factories.note_row(owner, note.id).content == text.replace("[x] also", "[ ] also")


def test_a_repeated_tick_saves_once(owner, web):
    note = factories.note(owner, CHECKLIST)
    same = uuid.uuid4()
    assert tick(web, note.id, 0, 1, operation_id=same).status_code == 302
    assert tick(web, note.id, 0, 1, operation_id=same).status_code == 302  # a double click
    assert factories.note_row(owner, note.id).version == 2


def test_a_stale_tick_is_a_conflict_that_changes_nothing(owner, web):
    note = factories.note(owner, CHECKLIST)
    services.note_update(actor=owner, operation_id=op(), note_id=note.id,
                         content=CHECKLIST + "\n\nAdded in another tab.")
    stale = tick(web, note.id, 0, 1)
    assert stale.status_code == 409
    page = stale.content.decode()
    assert "nothing was ticked" in page and "Added in another tab." in page
    assert 'name="expected_version" value="2"' in page  # the boxes to tick again
    row = factories.note_row(owner, note.id)
    assert row.version == 2 and "[ ] flour" in row.content
    assert tick(web, note.id, 0, 99).status_code == 409  # a version it never had


def test_bad_ticks_are_4xx_and_change_nothing(owner, web):
    note = factories.note(owner, CHECKLIST)
    missing = tick(web, note.id, 3, 1)
    assert missing.status_code == 400 and "no task-list box" in missing.content.decode()
    assert tick(web, note.id, 10**12, 1).status_code == 400
    malformed = web.post(f"/notes/{note.id}/tasks/0", {"expected_version": "x", "done": "1"})
    assert malformed.status_code == 400
    assert web.get(f"/notes/{note.id}/tasks/0").status_code == 405
    stranger = Client()
    stranger.force_login(Account.objects.get(id=factories.owner().account_id))
    assert tick(stranger, note.id, 0, 1).status_code == 404
    assert tick(web, uuid.uuid4(), 0, 1).status_code == 404
    services.note_archive(actor=owner, operation_id=op(), items=[{"id": note.id}])
    assert tick(web, note.id, 0, 2).status_code == 409  # archived: restore it first
    assert factories.note_row(owner, note.id).content == CHECKLIST


def test_the_tick_service_refuses_what_it_cannot_do(owner):
    note = factories.note(owner, CHECKLIST)
    with pytest.raises(Invalid):
        services.note_task_set(actor=owner, operation_id=op(), note_id=note.id, index=-1,
                               done=True, expected_version=1)
    with pytest.raises(Invalid):
        services.note_task_set(actor=owner, operation_id=op(), note_id=note.id, index=0,
                               done="yes", expected_version=1)  # type: ignore[arg-type]
    with pytest.raises(Conflict):
        services.note_task_set(actor=owner, operation_id=op(), note_id=note.id, index=0,
                               done=True, expected_version=5)
    done = services.note_task_set(actor=owner, operation_id=op(), note_id=note.id, index=2,
                                  done=True, expected_version=1)
    assert done.version == 2 and "  - [x] nested" in done.content


# -- the note page -----------------------------------------------------------------------------


def test_the_tab_is_named_after_the_note_and_an_old_version_says_so(owner, web):
    note = factories.note(owner, "# Oven calibration\n\nv1")
    for n in range(2, 6):
        services.note_update(actor=owner, operation_id=op(), note_id=note.id,
                             content=f"# Oven calibration\n\nv{n}")
    page = web.get(f"/notes/{note.id}/").content.decode()
    assert "<title>Oven calibration · Grove</title>" in page
    old = web.get(f"/notes/{note.id}/?v=3").content.decode()
    assert "<title>Oven calibration (v3 of 5) · Grove</title>" in old
    assert '<span class="badge version-of"' in old and "v3 of 5</span>" in old
    assert 'class="version-of">v3 of 5</strong>' in old
    assert 'class="task-tick"' not in old  # an old version's boxes cannot be ticked


def test_the_toolbar_offers_what_the_notes_state_allows(owner, web):
    note = factories.note(owner, "# Active\n\n- [ ] box")
    page = web.get(f"/notes/{note.id}/").content.decode()
    for part in ('data-panel="edit"', 'data-panel="move"', 'data-panel="history"',
                 'data-panel="share"', 'data-panel="delete"', "Archive</button>",
                 'id="edit"', 'id="move"', 'class="task-tick"'):
        assert part in page, part
    services.note_archive(actor=owner, operation_id=op(), items=[{"id": note.id}])
    archived = web.get(f"/notes/{note.id}/").content.decode()
    assert "Restore</button>" in archived and 'data-panel="history"' in archived
    for part in ('data-panel="edit"', 'data-panel="move"', 'id="edit"', 'id="move"',
                 "Archive</button>", "Restore this revision", 'class="task-tick"'):
        assert part not in archived, part
    assert 'data-panel="delete"' in archived


def test_an_expired_note_offers_restore(owner, web):
    from notebooks.models import Note

    note = factories.note(owner, "brief", retention_days=1)
    with tenant(owner):
        Note.objects.filter(id=note.id).update(expires_at=timezone.now() - timedelta(hours=1))
    page = web.get(f"/notes/{note.id}/").content.decode()
    assert "Restore</button>" in page and 'data-panel="edit"' not in page
    assert web.post(f"/notes/{note.id}/restore").status_code == 302
    assert factories.note_row(owner, note.id).expires_at > timezone.now()


def test_refused_actions_open_their_panel(owner, web):
    note = factories.note(owner, "panels")
    unconfirmed = web.post(f"/notes/{note.id}/delete").content.decode()
    assert 'class="panel danger-zone open" id="delete"' in unconfirmed
    diff = web.get(f"/notes/{note.id}/diff?a=1&b=1").content.decode()
    assert 'class="panel open" id="history"' in diff


# -- a note's limit (issue 36 item 3.4): stated, counted and refused the same everywhere -----

def _attribute(page: str, name: str, attribute: str) -> str:
    import re
    from html import unescape

    tag = re.search(rf'<(?:input|textarea)[^>]* name="{name}"[^>]*>', page)
    assert tag is not None, name
    found = re.search(rf'{attribute}="([^"]*)"', tag[0])
    assert found is not None, (name, attribute, tag[0])
    return unescape(found[1])


def test_the_editor_holds_the_text_to_its_kinds_limit(owner, web, monkeypatch):
    """The limit is the rules' per kind (`rules.content_max_chars`) — the fields'
    maxlength, the limit the page states and the counter's limits — never a number of
    the template's; and the save holds each kind to its own, a change of kind too."""
    import json

    from notebooks import rules

    monkeypatch.setattr(rules, "content_max_chars",
                        lambda kind: {"note": 80, "fact": 40, "decision": 60}.get(kind, 6000))
    page = web.get("/notes/new").content.decode()  # a new note is a document at first
    assert _attribute(page, "content", "maxlength") == "80"
    assert _attribute(page, "title", "maxlength") == "80"
    assert json.loads(_attribute(page, "content", "data-limits")) == rules.content_limits()
    assert "A note holds up to 80 characters, title included." in page
    decision = factories.note(owner, "A short decision", kind="decision")
    page = web.get(f"/notes/{decision.id}/").content.decode()
    assert _attribute(page, "content", "maxlength") == "60"
    assert "A decision holds up to 60 characters" in page

    def create(kind, text):
        return web.post("/notes/new", {"operation_id": str(uuid.uuid4()), "title": "",
                                       "content": text, "kind": kind, "notebook": ""})

    refused = create("fact", "x" * 50)
    assert refused.status_code == 400
    assert "Content is 50 characters; a fact holds at most 40." in refused.content.decode()
    assert create("decision", "x" * 50).status_code == 302
    longer = factories.note(owner, "y" * 50, kind="decision")
    as_fact = save(web, longer.id, "", "y" * 50, 1, kind="fact")
    assert as_fact.status_code == 400
    assert "Content is 50 characters; a fact holds at most 40." in as_fact.content.decode()
    assert factories.note_row(owner, longer.id).kind == "decision"


def test_text_over_the_limit_gets_one_message_everywhere(owner, web):
    """The website, REST and MCP refuse text over its kind's limit with the cleaner's
    one message, word for word — the field named as the API names it, capitalised."""
    from html import unescape

    from notebooks import rules
    from tests.api.conftest import Caller, new_key
    from tests.mcp.helpers import handshake

    limit = rules.content_max_chars("fact")
    text = "x" * (limit + 12)
    expected = f"Content is {limit + 12:,} characters; a fact holds at most {limit:,}."
    note = factories.note(owner, "A fact to correct")
    key, _ = new_key(owner)
    api = Caller(Client(), key)
    said = {
        "web new note": unescape(web.post("/notes/new", {
            "operation_id": str(uuid.uuid4()), "title": "", "content": text, "kind": "fact",
            "notebook": ""}).content.decode()),
        "web edit": unescape(save(web, note.id, "", text, 1).content.decode()),
        "REST remember": api.post("/notes", {"content": text, "kind": "fact"}).json(),
        "REST correct": api.patch(f"/notes/{note.id}", {"content": text}).json(),
        "MCP remember": handshake(key, "tools/call", {"name": "remember", "arguments": {
            "content": text, "kind": "fact"}}).json()["result"],
        "MCP correct": handshake(key, "tools/call", {"name": "update_memory", "arguments": {
            "noteId": str(note.id), "content": text}}).json()["result"],
    }
    for where, answer in said.items():
        if where.startswith("web"):
            assert expected in answer, where
        elif where.startswith("REST"):
            assert answer["error"] == {**answer["error"], "code": "content_too_long",
                                       "message": expected}, where
        else:
            assert answer["isError"] and answer["content"][0]["text"] == expected, where
    assert factories.note_row(owner, note.id).content == "A fact to correct"
