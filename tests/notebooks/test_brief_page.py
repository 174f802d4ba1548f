""""What your agents read" (SPEC §10, §11): the brief a connection gets, shown to the owner
as that connection reads it — the same document, byte for byte, as `GET /v1/brief` and
the `brief` tool give it — within its grant; text, never HTML; a pending or revoked
connection is said plainly."""

from __future__ import annotations

import html
import re
import uuid

import pytest
from django.test import Client

from grove.identity import services as identity
from grove.models import Account, Connection
from notebooks import services
from tests import factories
from tests.api.conftest import Caller, data, new_key
from tests.factories import op
from tests.mcp.test_protocol import call

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def templates(response) -> list[str]:
    return [t.name for t in response.templates if t.name]


def brief_text(page: str) -> str:
    """The brief as the page shows it: the <pre>'s text."""
    found = re.search(r'<pre class="brief-text" data-brief>(.*?)</pre>', page, re.S)
    assert found, page[-2000:]
    return html.unescape(found.group(1))


def connection_id(key: str) -> uuid.UUID:
    actor = identity.connection_authenticate(key)
    assert actor is not None and actor.connection_id is not None
    return actor.connection_id


@pytest.fixture
def library(owner):
    """Two notebooks, each with a note; a Personal note; an account vision."""
    garden = factories.notebook(owner, "Garden")
    taxes = factories.notebook(owner, "Taxes")
    factories.note(owner, "Tomatoes need eight hours of sun.", notebook_id=garden.id)
    factories.note(owner, "The tax return is due on 31 January.", notebook_id=taxes.id)
    factories.note(owner, "I prefer short answers.", kind="preference")
    services.vision_update(actor=owner, operation_id=op(), content="Grow food, not lawns.")
    return garden, taxes


def test_the_page_shows_what_a_connection_limited_to_one_notebook_reads(owner, web, library):
    garden, taxes = library
    key, _ = new_key(owner, personal=False, all_notebooks=False, notebooks=[garden.id])
    response = web.get("/agents/brief/", {"connection": str(connection_id(key))})
    page = response.content.decode()
    assert response.status_code == 200 and "notebooks/agent_brief.html" in templates(response)
    text = brief_text(page)
    assert text.startswith("# Brief for test key — ")
    assert "Tomatoes need eight hours" in text and "Grow food, not lawns." in text
    assert "tax return" not in text and "short answers" not in text  # not in its grant
    assert "As read by <strong>test key</strong> · 1 notebook" in page
    assert '<dd data-meta="returned">1</dd>' in page and 'data-meta="tokens"' in page
    assert "tokens counted with all-MiniLM-L6-v2" in page
    # A notebook outside its grant is said plainly, without its notes.
    outside = web.get("/agents/brief/", {"connection": str(connection_id(key)),
                                         "notebook": str(taxes.id)}).content.decode()
    assert "cannot read that notebook" in outside and "tax return" not in outside
    assert "data-brief" not in outside
    personal = web.get("/agents/brief/", {"connection": str(connection_id(key)),
                                          "notebook": "personal"}).content.decode()
    assert "Personal notes are not granted" in personal and "short answers" not in personal


def test_the_page_is_the_same_document_as_rest_and_mcp(owner, web, library):
    garden, _ = library
    factories.note(owner, "Pinned: water at dawn.", notebook_id=garden.id, pinned=True)
    key, _ = new_key(owner, personal=True, all_notebooks=False, notebooks=[garden.id])
    choices = {"notebook": str(garden.id), "focus": "tomatoes", "tz": "Europe/Paris",
               "budget": "900"}
    shown = brief_text(web.get("/agents/brief/", {"connection": str(connection_id(key)),
                                                  **choices}).content.decode())
    rest = data(Caller(Client(), key).get(
        f"/brief?format=markdown&notebookId={garden.id}&focus=tomatoes"
        "&timeZone=Europe/Paris&budgetTokens=900"))
    tool = call(key, "brief", {"notebookId": str(garden.id), "focus": "tomatoes",
                               "timeZone": "Europe/Paris", "budgetTokens": 900,
                               "format": "markdown"})
    assert shown == rest["markdown"] == tool["content"][0]["text"]
    assert "(Europe/Paris)" in shown.splitlines()[0] and "Pinned: water at dawn." in shown
    # Everything granted (no notebook), default zone and budget: the same too.
    everything = brief_text(web.get("/agents/brief/", {
        "connection": str(connection_id(key))}).content.decode())
    assert everything == data(Caller(Client(), key).get("/brief"))["markdown"]


def test_the_owners_own_brief_and_the_default_choice(owner, web, library):
    page = web.get("/agents/brief/").content.decode()  # no connection yet: the owner's
    assert '<option value="website" selected>You (website)</option>' in page
    assert brief_text(page).startswith("# Brief for the owner — ")
    assert "tax return" in brief_text(page)
    older, _ = new_key(owner)
    newer, _ = new_key(owner, personal=True, all_notebooks=False)
    page = web.get("/agents/brief/").content.decode()  # the newest active connection
    chosen = connection_id(newer)
    assert f'<option value="{chosen}" selected>' in page and str(connection_id(older)) in page
    mine = web.get("/agents/brief/", {"connection": "website"}).content.decode()
    assert brief_text(mine).startswith("# Brief for the owner")


def test_pending_and_revoked_connections_read_nothing_and_say_so(owner, web, library):
    pending = factories.connection(owner, all_notebooks=True, status=Connection.Status.PENDING)
    key, _ = new_key(owner)
    revoked = identity.connection_revoke(actor=owner, connection_id=connection_id(key))
    for row, word in ((pending, "pending"), (revoked, "revoked")):
        response = web.get("/agents/brief/", {"connection": str(row.id)})
        page = response.content.decode()
        assert response.status_code == 200 and "data-refusal" in page
        assert f"is {word}: it reads nothing" in page and "data-brief" not in page
        assert "Tomatoes" not in page
        # It is shown as chosen (with its state); the picker otherwise offers active ones.
        assert f'<option value="{row.id}" selected>{row.name} ({word})</option>' in page
    page = web.get("/agents/brief/").content.decode()
    assert str(pending.id) not in page and str(revoked.id) not in page


def test_hostile_note_text_is_shown_as_text(owner, web):
    factories.note(owner, "<script>window.pwned=1</script> ![x](https://evil.example/x.png)"
                          " <img src=https://evil.example/y>")
    page = web.get("/agents/brief/", {"connection": "website"}).content.decode()
    section = page[page.index('<section id="brief"'):]
    assert "<script>" not in section and "<img" not in section
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in section
    assert "<script>window.pwned=1</script>" in brief_text(page)


def test_htmx_gets_only_the_brief(owner, web, library):
    response = web.get("/agents/brief/", {"connection": "website", "tz": "Asia/Tokyo"}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    assert body.lstrip().startswith('<section id="brief"') and "(Asia/Tokyo)" in body


def test_bad_choices_are_said_on_the_form(owner, web, library):
    for params, words in (({"tz": "Mars/Base"}, "IANA time zone"),
                          ({"budget": "10"}, "Budget (tokens)"),
                          ({"focus": "x" * 501}, "focus")):
        response = web.get("/agents/brief/", {"connection": "website", **params})
        page = response.content.decode()
        assert response.status_code == 400, params
        assert words in page and 'role="alert"' in page and "data-brief" not in page
        assert "<select name=\"connection\">" in page  # the form is still there
    assert web.get("/agents/brief/", {"connection": "someone"}).status_code == 400
    assert web.get("/agents/brief/", {"connection": "website",
                                      "notebook": "nope"}).status_code == 400
    assert web.get("/agents/brief/", {"connection": str(uuid.uuid4())}).status_code == 404


def test_another_accounts_connection_is_404(owner, web):
    other = factories.owner("someone-else")
    key, _ = new_key(other)
    factories.note(other, "Their secret.")
    response = web.get("/agents/brief/", {"connection": str(connection_id(key))})
    assert response.status_code == 404 and "Their secret" not in response.content.decode()
    stranger = Client()
    stranger.force_login(Account.objects.get(id=other.account_id))
    assert "Their secret" in brief_text(stranger.get(
        "/agents/brief/", {"connection": str(connection_id(key))}).content.decode())


def test_the_page_shows_the_declared_set_a_connection_is_held_to(owner, web, library):
    """Issue 19: the brief preview carries the notebook's ground truth, unranked — the
    declared notes the connection may read and the claims known to be false."""
    garden, taxes = library
    rule = factories.note(owner, "# Watering\n\n## Morning\nBefore 9.", notebook_id=garden.id)
    secret = factories.note(owner, "Tax rule: keep receipts six years.", notebook_id=taxes.id)
    services.truth_declare(actor=owner, notebook_id=garden.id, note_ids=[rule.id, secret.id],
                           policy="restrict")
    services.negative_add(actor=owner, notebook_id=garden.id, claim="Tomatoes like shade.")
    key, _ = new_key(owner, personal=False, all_notebooks=False, notebooks=[garden.id])
    text = brief_text(web.get("/agents/brief/", {"connection": str(connection_id(key)),
                                                 "notebook": str(garden.id)}).content.decode())
    assert "Ground truth" in text and f"note:{rule.id}@1" in text and "Watering" in text
    assert "Tomatoes like shade." in text
    assert "receipts" not in text and str(secret.id) not in text  # outside its grant
