"""Fixes from a new user's walk through the website (issue 20, item 8): sorting by
relevance with no search, an over-long search, the header that keeps a fragment out of a
page's cache, a key form posted twice, and titles cut at a word with an ellipsis."""

from __future__ import annotations

import uuid

import pytest

from grove.identity import services as identity
from grove.interfaces.rendering import shorten, title_and_excerpt
from grove.kernel.errors import Conflict, Forbidden
from grove.kernel.tenancy import tenant
from grove.models import Connection
from tests import factories

pytestmark = pytest.mark.django_db


def test_relevance_with_no_search_is_the_default_order_not_an_error(owner, web):
    factories.note(owner, "Older note.")
    factories.note(owner, "Newer note.")
    response = web.get("/", {"sort": "relevance"})
    assert response.status_code == 200
    page = response.content.decode()
    assert page.index("Newer note.") < page.index("Older note.")


def test_an_over_long_search_is_refused_in_words_a_person_reads(owner, web):
    response = web.get("/", {"q": "word " * 101})
    page = response.content.decode()
    assert response.status_code == 400
    assert "Search for at most 500 characters" in page
    assert "q:" not in page and "Ensure this value" not in page


def test_pages_and_their_fragments_vary_with_the_htmx_header(owner, web):
    whole = web.get("/", {"q": "compost"})
    fragment = web.get("/", {"q": "compost"}, HTTP_HX_REQUEST="true")
    for response in (whole, fragment):
        assert "HX-Request" in response["Vary"]
    assert "<html" in whole.content.decode() and "<html" not in fragment.content.decode()


def test_a_key_form_posted_twice_creates_one_key(owner, web):
    operation = uuid.uuid4()
    form = {"operation_id": str(operation), "name": "laptop", "can_write": "on",
            "scope": "all"}
    first = web.post("/connections/", form)
    assert first.status_code == 200 and "grv_" in first.content.decode()
    again = web.post("/connections/", form)
    assert again.status_code == 400 and "created already" in again.content.decode()
    with tenant(owner):
        assert Connection.objects.filter(name="laptop").count() == 1
    with pytest.raises(Conflict) as refused:
        identity.connection_create_key(actor=owner, name="laptop", all_notebooks=True,
                                       operation_id=operation)
    assert refused.value.code == "key_already_created"
    # The command line and the API give no operation id: each call is a new key.
    identity.connection_create_key(actor=owner, name="laptop", all_notebooks=True)
    with tenant(owner):
        assert Connection.objects.filter(name="laptop").count() == 2


def test_titles_and_excerpts_are_cut_after_a_word_with_an_ellipsis():
    assert shorten("Plan the spring planting of tomatoes", 20) == "Plan the spring…"
    assert shorten("short", 20) == "short"
    assert shorten("x" * 40, 10) == "x" * 9 + "…"  # one long word: cut inside it
    title, excerpt = title_and_excerpt("A title\n\n" + "word " * 80)
    assert title == "A title" and excerpt.endswith("word…") and len(excerpt) <= 241
    long_title, _ = title_and_excerpt("Harvest " * 30)
    assert long_title.endswith("Harvest…") and len(long_title) <= 120
    # A search row renders the title alone (its excerpt is the matches' snippet).
    for content in ("A title\n\nword " * 3, "Harvest " * 30, "```\n\n```\nafter a fence",
                    "# **Bold** heading\nrest"):
        assert title_and_excerpt(content, excerpt=False)[0] == title_and_excerpt(content)[0]


def test_the_owner_changes_the_password_given_the_current_one(owner, web):
    from grove.kernel.errors import Invalid
    from grove.models import Account
    from tests.browser import PASSWORD

    account = Account.objects.get(id=owner.account_id)
    account.set_password(PASSWORD)
    account.save(update_fields=["password"])
    web.force_login(account)  # a known password: the session is signed in again
    for current, new, code in ((PASSWORD + "x", "a fresh long passphrase", "wrong_password"),
                               (PASSWORD, PASSWORD, "same_password"),
                               (PASSWORD, "12345678", "weak_password")):
        with pytest.raises(Invalid) as refused:
            identity.account_change_password(actor=owner, current=current, new=new)
        assert refused.value.code == code
    agent = factories.connection(owner, all_notebooks=True)
    with pytest.raises(Forbidden) as refused:  # a connection is never the owner's session
        identity.account_change_password(actor=agent, current=PASSWORD, new="another one 77")
    assert refused.value.code == "session_required"
    page = web.post("/settings/password/", {"current": "wrong", "new": "x" * 12,
                                            "new_again": "x" * 12})
    assert page.status_code == 400 and "not your current password" in page.content.decode()
    identity.account_change_password(actor=owner, current=PASSWORD,
                                     new="a fresh long passphrase")
    assert Account.objects.get(id=owner.account_id).check_password("a fresh long passphrase")
    # Every session signed in before is over (the browser test: the changer's own stays).
    assert web.get("/settings/").status_code == 302


def test_wrong_current_passwords_share_the_sign_in_budget(owner, web):
    """A browser left signed in is no faster way to guess the password: the fifth wrong
    current password blocks the form (429) as five failed sign-ins block signing in."""
    wrong = {"current": "not it", "new": "a fresh long passphrase",
             "new_again": "a fresh long passphrase"}
    for _ in range(5):
        assert web.post("/settings/password/", wrong).status_code == 400
    blocked = web.post("/settings/password/", wrong)
    assert blocked.status_code == 429 and "Too many wrong passwords" in blocked.content.decode()
    assert int(blocked["Retry-After"]) > 0
