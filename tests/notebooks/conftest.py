"""Website fixtures for the notebooks pages: the owner and their signed-in browser."""

import pytest
from django.test import Client

from grove.models import Account
from tests import factories


@pytest.fixture
def owner():
    return factories.owner()


@pytest.fixture
def web(owner) -> Client:
    client = Client()
    client.force_login(Account.objects.get(id=owner.account_id))
    return client
