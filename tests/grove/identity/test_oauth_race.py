"""A leaked authorization code raced against its client: real commits, a live server,
concurrent token requests (RFC 6749 §4.1.2)."""

from __future__ import annotations

import pytest
from django.test import Client
from oauth2_provider.models import AccessToken, RefreshToken

from grove.models import Account
from tests.grove.identity.oauth_helpers import REDIRECT, consent, new_flow, register


@pytest.mark.slow
def test_racing_uses_of_one_code_get_one_answer_and_then_none(site_url, committed):
    """Eight token requests with one code at once (a leaked code raced by an attacker):
    at most one is answered, and — the code having been used more than once — the
    tokens it bought are revoked too. No 500, no token left behind."""
    import threading

    import httpx

    owner = Account.objects.create_user(username="racer", password="a long passphrase 42")
    web = Client()
    web.force_login(owner)
    flow = new_flow(register())
    code = consent(web, flow)["code"]
    start = threading.Barrier(8)
    answers: list[httpx.Response] = []

    def redeem() -> None:
        start.wait()
        answers.append(httpx.post(f"{site_url}/o/token/", timeout=30, data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
            "client_id": flow.client_id, "code_verifier": flow.verifier}))

    threads = [threading.Thread(target=redeem) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    statuses = sorted(answer.status_code for answer in answers)
    # One request may have got its tokens before the others spent the code again (and
    # revoked them); or the revocation beat its answer and it too was refused.
    assert statuses in ([200] + [400] * 7, [400] * 8), [a.text[:200] for a in answers]
    assert all(a.json()["error"] == "invalid_grant" for a in answers if a.status_code == 400)
    for won in [a.json() for a in answers if a.status_code == 200]:
        assert httpx.post(f"{site_url}/mcp", json={"jsonrpc": "2.0", "id": 1,
                                                   "method": "ping"},
                          headers={"Authorization": f"Bearer {won['access_token']}"}
                          ).status_code == 401
    assert not AccessToken.objects.filter(user=owner).exists()
    assert not RefreshToken.objects.filter(user=owner, revoked__isnull=True).exists()
