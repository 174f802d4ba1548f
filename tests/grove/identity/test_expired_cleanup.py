"""Expired website sessions and OAuth tokens are deleted by the periodic tasks: each sent
as beat sends it — by the task name of its schedule entry, routed to the maintenance queue
— to a real Celery worker on the embedded default's filesystem broker. Live ones stay."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.utils import timezone
from oauth2_provider.models import AccessToken, Grant, RefreshToken

from grove.identity.sessions import SessionStore, stored_key
from grove.models import Account
from tests.grove.identity.oauth_helpers import consent, exchange, new_flow, register

pytestmark = pytest.mark.slow

PAST = timedelta(minutes=5)


def _send_scheduled(entry: str) -> None:
    """What beat does when the entry is due."""
    from grove.celery import app

    app.send_task(settings.CELERY_BEAT_SCHEDULE[entry]["task"])


def _until(condition: Callable[[], bool], seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.fixture
def worker(committed, celery_worker_on, tmp_path):
    folder = tmp_path / "broker"
    options = {"data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
               "processed_folder": str(folder / "processed"),
               "control_folder": str(folder / "control"), "store_processed": False,
               "polling_interval": 0.05}
    with celery_worker_on("grovefs://", options):
        yield


def test_expired_sessions_are_cleared_on_schedule(worker):
    owner = Account.objects.create_user(username="owner", password="a long enough phrase 42")
    sessions = {}
    for name in ("live", "expired"):
        store = SessionStore()
        store["_auth_user_id"] = str(owner.id)
        store.create()
        sessions[name] = store.session_key
    Session.objects.filter(session_key=stored_key(sessions["expired"])).update(
        expire_date=timezone.now() - PAST)

    _send_scheduled("clear-sessions")

    assert _until(lambda: not Session.objects.filter(
        session_key=stored_key(sessions["expired"])).exists())
    assert Session.objects.count() == 1
    assert SessionStore(session_key=sessions["live"]).load()["_auth_user_id"] == str(owner.id)


def test_expired_tokens_and_codes_are_cleared_on_schedule(worker):
    from django.test import Client

    owner_web = Client()
    owner_web.force_login(Account.objects.create_user(username="owner",
                                                      password="a long enough phrase 42"))
    signed_in, spare = register(name="Signed in"), register(name="Spare")
    flow = new_flow(signed_in)
    assert exchange(flow, consent(owner_web, flow)["code"])[0] == 200  # a live token pair
    waiting, stale = new_flow(spare), new_flow(spare)
    consent(owner_web, waiting)  # a live code
    consent(owner_web, stale)
    stale_code = Grant.objects.latest("id")
    Grant.objects.filter(id=stale_code.id).update(expires=timezone.now() - PAST)
    # Each registration left a registration token (an access token without a refresh
    # token): the spare client's one has expired.
    expired_token = AccessToken.objects.get(application__client_id=spare)
    AccessToken.objects.filter(id=expired_token.id).update(expires=timezone.now() - PAST)
    tokens_before = AccessToken.objects.count()

    _send_scheduled("clear-tokens")

    assert _until(lambda: not AccessToken.objects.filter(id=expired_token.id).exists())
    assert _until(lambda: not Grant.objects.filter(id=stale_code.id).exists())
    assert AccessToken.objects.count() == tokens_before - 1
    assert AccessToken.objects.filter(application__client_id=signed_in).count() == 2
    assert RefreshToken.objects.filter(application__client_id=signed_in).count() == 1
    assert Grant.objects.count() == 1
