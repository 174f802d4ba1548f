"""Sign-in throttling under simultaneous guesses (issue 36 review): each attempt is
counted before its password is checked, so a burst from one address gets no more
checks than the limit — counted after the check, all of them passed it before the
first failure was counted. Real commits, one connection per thread."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import connections
from django.test import Client, override_settings

from grove.models import Account
from tests.grove.interfaces.test_web_security import PASSWORD, attempt


@override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.PBKDF2PasswordHasher"])
def test_simultaneous_guesses_get_no_more_checks_than_the_limit(committed):
    # Production's hasher: a check takes long enough for guesses to overlap in it.
    Account.objects.create_user(username="ivy", password=PASSWORD)
    guesses = 16
    start = threading.Barrier(guesses)

    def guess(number: int) -> int:
        try:
            start.wait(timeout=10)
            return attempt(Client(), "ivy", f"wrong {number}", address="10.0.0.66").status_code
        finally:
            connections.close_all()

    with ThreadPoolExecutor(guesses) as pool:
        statuses = list(pool.map(guess, range(guesses)))
    checked = statuses.count(400)  # a password checked and found wrong
    assert checked == settings.GROVE_LOGIN_LIMITS["pair"], statuses
    assert statuses.count(429) == guesses - checked
    # The right password from there waits too; from elsewhere it is let in.
    assert attempt(Client(), "ivy", PASSWORD, address="10.0.0.66").status_code == 429
    assert attempt(Client(), "ivy", PASSWORD, address="10.0.0.67").status_code == 302
