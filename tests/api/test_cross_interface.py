"""A stranger gets the same answer for someone else's note over every interface: the
website's note page and REST both say 404, exactly as for an id that does not exist."""

import uuid

import pytest
from django.test import Client

from grove.models import Account
from tests import factories
from tests.api.conftest import Caller, new_key

pytestmark = pytest.mark.django_db


def test_a_strangers_note_is_the_same_404_on_the_website_and_over_rest():
    owner = factories.owner()
    note = factories.note(owner, "private plans")
    stranger = factories.owner()
    key, _ = new_key(stranger)
    web = Client()
    web.force_login(Account.objects.get(id=stranger.account_id))
    rest = Caller(Client(), key)

    answers = {}
    for label, note_id in (("foreign", note.id), ("missing", uuid.uuid4())):
        page = web.get(f"/notes/{note_id}/")
        api = rest.get(f"/notes/{note_id}")
        assert "private plans" not in page.content.decode()
        assert "private plans" not in api.content.decode()
        answers[label] = (page.status_code, api.status_code, api.json()["error"]["code"])
    assert answers["foreign"] == answers["missing"] == (404, 404, "note_not_found")

    owner_web = Client()
    owner_web.force_login(Account.objects.get(id=owner.account_id))
    mine = owner_web.get(f"/notes/{note.id}/")
    assert mine.status_code == 200 and "private plans" in mine.content.decode()
    assert "<strong>v1</strong> · create" in mine.content.decode()
