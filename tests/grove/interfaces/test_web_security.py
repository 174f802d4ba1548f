"""Website security: CSRF on every post, the security headers, sign-in throttling per
account and per address, session rotation on sign-in, secure cookies behind HTTPS, and
`grove check --deploy` clean for the production configuration the README documents."""

from __future__ import annotations

import uuid

import pytest
from django.conf import settings
from django.test import Client, override_settings

from grove.kernel import throttle
from grove.models import Account
from notebooks import selectors
from tests import factories
from tests.grove.runtime.processes import run_grove

pytestmark = pytest.mark.django_db
PASSWORD = "a long enough passphrase 42"  # noqa: S105


def attempt(client: Client, username: str, password: str, address: str = "10.0.0.1"):
    return client.post("/login/", {"username": username, "password": password},
                       REMOTE_ADDR=address)


def test_failures_for_an_account_refuse_only_the_address_they_came_from():
    Account.objects.create_user(username="alice", password=PASSWORD)
    client = Client()
    for _ in range(settings.GROVE_LOGIN_LIMITS["pair"]):
        assert attempt(client, "alice", "wrong").status_code == 400
    # From that address even the right password waits for the window to end...
    locked = attempt(client, "Alice", PASSWORD)
    assert locked.status_code == 429 and int(locked["Retry-After"]) > 0
    assert "Too many failed sign-in attempts" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    # ...but the owner, somewhere else, signs in.
    assert attempt(client, "alice", PASSWORD, address="10.9.9.9").status_code == 302
    assert "_auth_user_id" in client.session


def test_nobody_can_lock_the_owner_out_they_are_only_slowed(settings):
    """An attacker failing on purpose for the owner's name from many addresses: the right
    password from a new address is held a little, and accepted."""
    import time

    settings.GROVE_LOGIN_LIMITS = {**settings.GROVE_LOGIN_LIMITS, "step": 0.05, "max_delay": 0.2}
    Account.objects.create_user(username="olive", password=PASSWORD)
    attacker = Client()
    for host in range(4):  # never enough from one address to be refused there
        for _ in range(2):
            attempt(attacker, "olive", "wrong", address=f"198.51.100.{host}")
    assert throttle.login_slowdown("olive") == pytest.approx(0.2)
    owner = Client()
    started = time.monotonic()
    assert attempt(owner, "olive", PASSWORD, address="203.0.113.50").status_code == 302
    assert time.monotonic() - started >= 0.2  # slowed down, not refused
    assert "_auth_user_id" in owner.session
    assert throttle.login_slowdown("olive") == 0  # a success ends the slowdown


def test_failures_per_address_lock_that_address():
    Account.objects.create_user(username="bob", password=PASSWORD)
    client = Client()
    for number in range(settings.GROVE_LOGIN_LIMITS["address"]):
        attempt(client, f"guess{number}", "wrong", address="10.0.0.7")
    assert attempt(client, "bob", PASSWORD, address="10.0.0.7").status_code == 429
    assert attempt(client, "bob", PASSWORD, address="10.0.0.8").status_code == 302


PROXY = "10.0.0.254"


def via(client: Client, username: str, password: str, forwarded: str, peer: str = PROXY):
    return client.post("/login/", {"username": username, "password": password},
                       REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=forwarded)


def test_behind_a_trusted_proxy_one_visitors_failures_do_not_refuse_another(settings):
    """Issue 36 item 2.7: behind a reverse proxy every visitor shared the proxy's address,
    so five wrong passwords from anyone refused the owner too."""
    settings.GROVE_TRUSTED_PROXIES = (f"{PROXY}/32",)
    Account.objects.create_user(username="gina", password=PASSWORD)
    client = Client()
    for _ in range(settings.GROVE_LOGIN_LIMITS["pair"]):
        assert via(client, "gina", "wrong", "198.51.100.7").status_code == 400
    assert via(client, "gina", PASSWORD, "198.51.100.7").status_code == 429
    # A visitor writing another address left of the one the proxy appended stays itself.
    assert via(client, "gina", PASSWORD, "203.0.113.9, 198.51.100.7").status_code == 429
    assert via(client, "gina", PASSWORD, "203.0.113.9").status_code == 302
    assert "_auth_user_id" in client.session


def test_a_forwarded_address_from_an_untrusted_peer_is_ignored(settings):
    settings.GROVE_TRUSTED_PROXIES = (f"{PROXY}/32",)
    Account.objects.create_user(username="hal", password=PASSWORD)
    client = Client()
    for n in range(settings.GROVE_LOGIN_LIMITS["pair"]):
        via(client, "hal", "wrong", f"192.0.2.{n}", peer="198.51.100.8")
    assert via(client, "hal", PASSWORD, "192.0.2.99", peer="198.51.100.8").status_code == 429
    assert via(client, "hal", PASSWORD, "192.0.2.99").status_code == 302  # through the proxy


def test_a_success_gives_its_address_back_its_attempt():
    """Only failures hold an address back: signing in over and over from one address
    (an owner on a shared connection) is never refused."""
    Account.objects.create_user(username="jay", password=PASSWORD)
    for _ in range(settings.GROVE_LOGIN_LIMITS["address"] + 2):
        client = Client()
        assert attempt(client, "jay", PASSWORD, address="10.0.0.70").status_code == 302


def test_an_ipv6_client_is_refused_across_its_64():
    """Changing address within one's own /64 (any subscriber can) starts no new count."""
    Account.objects.create_user(username="kim", password=PASSWORD)
    client = Client()
    for n in range(settings.GROVE_LOGIN_LIMITS["pair"]):
        assert attempt(client, "kim", "wrong", address=f"2001:db8:7:1::{n + 1:x}"
                       ).status_code == 400
    assert attempt(client, "kim", PASSWORD, address="2001:db8:7:1:dead:beef::9"
                   ).status_code == 429
    assert attempt(client, "kim", PASSWORD, address="2001:db8:7:2::1").status_code == 302


def test_the_lock_lifts_when_the_window_ends():
    now = 1_000_000.0
    window = settings.GROVE_LOGIN_LIMITS["window"]
    for _ in range(settings.GROVE_LOGIN_LIMITS["pair"]):
        throttle.login_failed("carol", "10.0.0.1", now=now)
    wait = throttle.login_blocked_for("carol", "10.0.0.1", now=now)
    assert wait is not None and 0 < wait <= window
    assert throttle.login_blocked_for("carol", "10.0.0.2", now=now) is None
    assert throttle.login_blocked_for("carol", "10.0.0.1", now=now + wait) is None


def test_success_clears_the_account_count():
    Account.objects.create_user(username="dave", password=PASSWORD)
    client = Client()
    for _ in range(settings.GROVE_LOGIN_LIMITS["pair"] - 1):
        attempt(client, "dave", "wrong")
    assert attempt(client, "dave", PASSWORD).status_code == 302
    client.post("/logout/")
    attempt(client, "dave", "wrong")
    assert attempt(client, "dave", PASSWORD).status_code == 302


def test_signing_in_rotates_the_session_key():
    Account.objects.create_user(username="erin", password=PASSWORD)
    client = Client()
    client.get("/login/")
    session = client.session
    session["planted"] = "by someone else"
    session.save()
    before = session.session_key
    client.cookies[settings.SESSION_COOKIE_NAME] = before
    assert attempt(client, "erin", PASSWORD).status_code == 302
    assert client.cookies[settings.SESSION_COOKIE_NAME].value != before


def test_setup_refuses_a_weak_password():
    response = Client().post("/setup/", {"username": "owner", "password": "password",
                                         "password_again": "password"})
    assert response.status_code == 400 and "too common" in response.content.decode()


@override_settings(SESSION_COOKIE_SECURE=True, CSRF_COOKIE_SECURE=True)
def test_cookies_are_secure_and_httponly_behind_https():
    Account.objects.create_user(username="frank", password=PASSWORD)
    client = Client()
    client.get("/login/", secure=True)
    response = client.post("/login/", {"username": "frank", "password": PASSWORD},
                           secure=True)
    cookie = response.cookies[settings.SESSION_COOKIE_NAME]
    assert cookie["secure"] and cookie["httponly"] and cookie["samesite"] == "Lax"


@pytest.mark.slow
def test_check_deploy_passes_for_the_documented_production_configuration(tmp_path):
    db = settings.DATABASES["default"]
    url = f"postgresql://{db['USER']}:{db.get('PASSWORD') or ''}@/{db['NAME']}" \
          f"?host={db['HOST']}&port={db['PORT']}"
    # The test database's own SECRET_KEY (long and varied enough for the deploy check): a
    # process whose key the database's tenant key was not made with refuses to start.
    secret = settings.SECRET_KEY
    result = run_grove(
        "check", "--deploy", "--fail-level", "WARNING", home=tmp_path / "home",
        DATABASE_URL=url, GROVE_BASE_URL="https://notes.example.org",
        GROVE_SECRET_KEY=secret, GROVE_TRUSTED_PROXIES="127.0.0.1",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
    # Behind the https proxy without trusting it, every visitor would share its address.
    untrusted = run_grove("check", "--deploy", "--fail-level", "WARNING",
                          home=tmp_path / "home", DATABASE_URL=url,
                          GROVE_BASE_URL="https://notes.example.org", GROVE_SECRET_KEY=secret)
    assert untrusted.returncode != 0
    assert "grove.W001" in untrusted.stderr + untrusted.stdout
    # And the same check fails loudly for a plain-HTTP base URL (no secure cookies).
    plain = run_grove("check", "--deploy", "--fail-level", "WARNING", home=tmp_path / "home",
                      DATABASE_URL=url, GROVE_BASE_URL="http://notes.example.org",
                      GROVE_SECRET_KEY=secret)
    assert plain.returncode != 0 and "SESSION_COOKIE_SECURE" in plain.stderr + plain.stdout


def test_posts_need_csrf():
    account = factories.account()
    client = Client(enforce_csrf_checks=True)
    client.force_login(account)
    response = client.post("/notebooks/new", {"operation_id": uuid.uuid4(), "name": "x"})
    assert response.status_code == 403
    assert selectors.notebook_list(actor=factories.Actor.for_session(account.id)) == []


def test_security_headers(client):
    response = client.get("/login/", follow=True)
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
