"""Vision cards on the website (SPEC §10, §11): a notebook's on its page, the account's
on Settings — rendered safely, with version, date, author and history; saved by
post/redirect/get; a stale save keeps the draft beside the newer text (409); a too
long one keeps it too (400); foreign and unknown notebooks are 404."""

from __future__ import annotations

import html
import re
import uuid

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from grove.models import Account
from notebooks import selectors, services
from notebooks.models import VISION_MAX_CHARS
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.django_db

HOSTILE = ("# Feed four people\n\nBy **2027**. <script>window.pwned = 1</script>\n\n"
           "![plan](https://evil.example/x.png) <img src=https://evil.example/y>")


def templates(response) -> list[str]:
    return [t.name for t in response.templates if t.name]


def card(page: str) -> str:
    """The vision card's HTML."""
    start = page.index('<section class="card vision"')
    return page[start:page.index("</section>", start)]


def hidden(page: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', card(page)).group(1)


def textarea(page: str) -> str:
    found = re.search(r'<textarea id="vision-content" name="content" rows="8">\n(.*?)</textarea>',
                      card(page), re.S)
    return html.unescape(found.group(1))


def post(web: Client, url: str, page: str, content: str, **changes):
    """Submit the card's form as the page holds it (hidden fields included)."""
    form = {"operation_id": hidden(page, "operation_id"),
            "expected_version": hidden(page, "expected_version"), "content": content}
    form.update(changes)
    return web.post(url, form)


# -- the notebook page -------------------------------------------------------------------------


def test_a_notebook_without_a_vision_invites_one(owner, web):
    garden = factories.notebook(owner, "Garden")
    page = web.get(f"/notebooks/{garden.id}/").content.decode()
    shown = card(page)
    assert "No vision yet." in shown and 'data-version="0"' in shown
    assert '<details class="vision-edit" open>' in shown
    assert hidden(page, "expected_version") == "0"
    assert f'action="/notebooks/{garden.id}/vision"' in shown
    assert "History" not in shown


def test_the_notebook_vision_is_rendered_safely_with_its_history(owner, web):
    garden = factories.notebook(owner, "Garden")
    services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                           content="First idea: grow tomatoes.")
    agent = factories.connection(owner, all_notebooks=True, personal=True)
    services.vision_update(actor=agent, operation_id=op(), notebook_id=garden.id,
                           content=HOSTILE, expected_version=1)
    response = web.get(f"/notebooks/{garden.id}/")
    page = response.content.decode()
    assert response.status_code == 200 and "notebooks/_vision.html" in templates(response)
    shown = card(page)
    assert '<h1>Feed four people</h1>' in shown and "<strong>2027</strong>" in shown
    assert "<script>" not in shown and "&lt;script&gt;" in shown
    assert "evil.example" in shown and not re.search(r"<img[^>]+evil", shown)
    name = selectors.whoami(actor=agent).connection_name
    assert "v2 ·" in shown and f"by {name}" in shown and " UTC" in shown
    # History: every version with date and author; the older one's text, escaped.
    assert '<li data-version="2"><strong>v2</strong>' in shown and "current" in shown
    older = shown[shown.index('<li data-version="1">'):]
    assert "by you" in older and "<pre>First idea: grow tomatoes.</pre>" in older
    # The form holds the current text, version and a fresh operation id.
    assert textarea(page) == HOSTILE and hidden(page, "expected_version") == "2"
    uuid.UUID(hidden(page, "operation_id"))
    assert '<details class="vision-edit">' in shown  # closed: the text is above


def test_saving_a_notebook_vision_redirects_back(owner, web):
    garden = factories.notebook(owner, "Garden")
    url = f"/notebooks/{garden.id}/vision"
    page = web.get(f"/notebooks/{garden.id}/").content.decode()
    saved = post(web, url, page, "  Feed four people by 2027.  ")
    assert saved.status_code == 302 and saved["Location"] == f"/notebooks/{garden.id}/#vision"
    vision = selectors.vision_get(actor=owner, notebook_id=garden.id)
    assert (vision.version, vision.content) == (1, "Feed four people by 2027.")
    after = web.get(f"/notebooks/{garden.id}/").content.decode()
    assert "Vision saved." in after and "<p>Feed four people by 2027.</p>" in card(after)
    # A double submit (the same operation id) saves once.
    again = post(web, url, page, "  Feed four people by 2027.  ")
    assert again.status_code == 302
    assert selectors.vision_get(actor=owner, notebook_id=garden.id).version == 1
    # Empty clears it, as a new version.
    page = web.get(f"/notebooks/{garden.id}/").content.decode()
    cleared = post(web, url, page, "")
    assert cleared.status_code == 302
    after = web.get(f"/notebooks/{garden.id}/").content.decode()
    assert "Vision cleared." in after and "No vision: it was cleared in v2." in card(after)
    assert [r.version for r in selectors.vision_revisions(actor=owner,
                                                          notebook_id=garden.id)] == [2, 1]


def test_a_stale_save_keeps_the_draft_beside_the_newer_text(owner, web):
    garden = factories.notebook(owner, "Garden")
    services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                           content="Feed four people.")
    url = f"/notebooks/{garden.id}/vision"
    page = web.get(f"/notebooks/{garden.id}/").content.decode()  # read at v1
    services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                           content="Feed six people.", expected_version=1)  # another tab
    stale = post(web, url, page, "Feed five people.")
    body = stale.content.decode()
    assert stale.status_code == 409 and "notebooks/notebook.html" in templates(stale)
    shown = card(body)
    assert "changed this vision while you were editing" in shown and 'role="alert"' in shown
    assert "<p>Feed six people.</p>" in shown  # the newer text, above
    assert textarea(body) == "Feed five people."  # the draft, kept
    assert hidden(body, "expected_version") == "2"
    assert '<details class="vision-edit" open>' in shown and "Your draft" in shown
    assert selectors.vision_get(actor=owner, notebook_id=garden.id).content == \
        "Feed six people."
    # Saving again replaces the newer text knowingly.
    replaced = post(web, url, body, textarea(body))
    assert replaced.status_code == 302
    vision = selectors.vision_get(actor=owner, notebook_id=garden.id)
    assert (vision.version, vision.content) == (3, "Feed five people.")


def test_a_too_long_vision_is_refused_with_the_draft_kept(owner, web):
    garden = factories.notebook(owner, "Garden")
    url = f"/notebooks/{garden.id}/vision"
    page = web.get(f"/notebooks/{garden.id}/").content.decode()
    long = "x" * (VISION_MAX_CHARS + 1)
    refused = post(web, url, page, long)
    body = refused.content.decode()
    assert refused.status_code == 400
    assert f"the limit is {VISION_MAX_CHARS}" in card(body) and textarea(body) == long
    assert selectors.vision_get(actor=owner, notebook_id=garden.id).version == 0
    broken = web.post(url, {"operation_id": "nope", "expected_version": "x", "content": "y"})
    assert broken.status_code == 400 and textarea(broken.content.decode()) == "y"
    # Digits Python's int() refuses ("²") or will not read (thousands of them): a 400
    # with the draft, as any bad form.
    for odd in ("²", "9" * 5000):
        shown = web.post(url, {"operation_id": "nope", "expected_version": odd,
                               "content": "z"})
        assert shown.status_code == 400 and textarea(shown.content.decode()) == "z"
    assert selectors.vision_get(actor=owner, notebook_id=garden.id).version == 0


def test_an_archived_notebook_shows_its_vision_read_only(owner, web):
    garden = factories.notebook(owner, "Garden")
    services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                           content="Feed four people.")
    page = web.get(f"/notebooks/{garden.id}/").content.decode()
    services.notebook_archive(actor=owner, operation_id=op(), notebook_id=garden.id)
    archived = web.get(f"/notebooks/{garden.id}/").content.decode()
    assert "<p>Feed four people.</p>" in card(archived) and "<form" not in card(archived)
    refused = post(web, f"/notebooks/{garden.id}/vision", page, "Feed six.")
    assert refused.status_code == 409 and "archived" in card(refused.content.decode())
    assert selectors.vision_get(actor=owner, notebook_id=garden.id).version == 1


def test_foreign_and_unknown_notebooks_are_404(owner, web):
    secret = factories.notebook(owner, "Secret")
    services.vision_update(actor=owner, operation_id=op(), notebook_id=secret.id,
                           content="The secret plan.")
    stranger = Client()
    stranger.force_login(Account.objects.create_user(username="stranger", password="x" * 20))
    form = {"operation_id": str(uuid.uuid4()), "expected_version": 1, "content": "mine now"}
    for client, notebook_id in ((stranger, secret.id), (web, uuid.uuid4())):
        for response in (client.get(f"/notebooks/{notebook_id}/"),
                         client.post(f"/notebooks/{notebook_id}/vision", form)):
            assert response.status_code == 404
            assert "secret plan" not in response.content.decode()
    assert selectors.vision_get(actor=owner, notebook_id=secret.id).content == \
        "The secret plan."
    # The stranger's own account vision is theirs; the owner's is untouched.
    stranger.post("/vision/", {**form, "expected_version": 0})
    assert selectors.vision_get(actor=owner).version == 0


def test_the_notebook_page_reads_in_a_fixed_number_of_queries(owner, web):
    garden = factories.notebook(owner, "Garden")
    services.vision_update(actor=owner, operation_id=op(), notebook_id=garden.id,
                           content="First")
    web.get(f"/notebooks/{garden.id}/")  # warm the session and content types

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert web.get(f"/notebooks/{garden.id}/").status_code == 200
        return len(queries)

    few = count()
    agent = factories.connection(owner, all_notebooks=True)
    for number in range(12):  # more than the card lists, by another author too
        services.vision_update(actor=agent if number % 2 else owner, operation_id=op(),
                               notebook_id=garden.id, content=f"Version {number}")
    assert count() == few
    page = web.get(f"/notebooks/{garden.id}/").content.decode()
    assert card(page).count("<li data-version=") == 10 and "and 3 older versions" in page


# -- the account's vision on Settings ----------------------------------------------------------


def test_settings_shows_and_saves_the_account_vision(owner, web):
    response = web.get("/settings/")
    page = response.content.decode()
    assert response.status_code == 200 and "notebooks/_vision.html" in templates(response)
    shown = card(page)
    assert "<h2>Account vision</h2>" in shown and "No vision yet." in shown
    assert 'action="/vision/"' in shown and 'data-capture="on"' in page  # the rest stays
    saved = post(web, "/vision/", page, "Grow food, *not* lawns. <script>x()</script>")
    assert saved.status_code == 302 and saved["Location"] == "/settings/#vision"
    after = web.get("/settings/").content.decode()
    shown = card(after)
    assert "Vision saved." in after and "<em>not</em>" in shown and "<script>" not in shown
    assert "v1 ·" in shown and "by you" in shown
    assert selectors.vision_get(actor=owner).content.startswith("Grow food")


def test_a_stale_account_vision_save_shows_settings_again_with_the_draft(owner, web):
    services.vision_update(actor=owner, operation_id=op(), content="Grow food.")
    page = web.get("/settings/").content.decode()
    services.vision_update(actor=owner, operation_id=op(), content="Grow more food.",
                           expected_version=1)
    stale = post(web, "/vision/", page, "Grow flowers.")
    body = stale.content.decode()
    assert stale.status_code == 409 and "grove/settings.html" in templates(stale)
    assert "<p>Grow more food.</p>" in card(body) and textarea(body) == "Grow flowers."
    assert hidden(body, "expected_version") == "2" and 'id="capture"' in body
    long = post(web, "/vision/", body, "y" * (VISION_MAX_CHARS + 5))
    assert long.status_code == 400 and "the limit is" in card(long.content.decode())
    assert selectors.vision_get(actor=owner).content == "Grow more food."


def test_vision_posts_need_the_csrf_token(owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(Account.objects.get(id=owner.account_id))
    response = client.post("/vision/", {"operation_id": str(uuid.uuid4()),
                                        "expected_version": 0, "content": "x"})
    assert response.status_code == 403
    assert selectors.vision_get(actor=owner).version == 0
