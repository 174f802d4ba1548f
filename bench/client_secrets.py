"""What a token request with a client secret costs (issue 36, secrets at rest).

A confidential OAuth client is registered through the real registration endpoint
(`POST /o/register/`, `token_endpoint_auth_method: client_secret_basic`), approved by the
owner through the consent page, and exchanges its code; then, in a random order, `--rounds`
times each:

* **right secret**: `grant_type=refresh_token` with its current refresh token and its
  secret (HTTP Basic) → 200, a new token pair (the next round uses the new refresh token);
* **wrong secret**: the same with a wrong secret → 401 `invalid_client`.

Each request goes through Django's whole stack in this process (`django.test.Client`:
middleware, the token view, the toolkit, PostgreSQL), timed by the wall clock and by the
process's CPU time. The failed-authentication limit is lifted for the run (every wrong
secret is checked, as an attacker's first tries are). The same script ran before and
after the change (its JSON says which code it measured):

    .venv/bin/python bench/client_secrets.py [--rounds 20] [--out client_secrets-after]
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import secrets
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Env, summary_ms, table, write_result  # noqa: E402

REDIRECT = "https://client.example/callback"


def _basic(client_id: str, secret: str) -> dict[str, str]:
    pair = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    return {"Authorization": f"Basic {pair}"}


def _client():  # noqa: ANN202 - django.test.Client, imported after setup
    from django.conf import settings
    from django.test import Client

    return Client(HTTP_HOST=urlsplit(settings.GROVE_ISSUER).netloc)


def confidential_client(env: Env) -> tuple[str, str, str]:
    """(client_id, client_secret, refresh token): registered, consented, code exchanged."""
    import hashlib

    from django.conf import settings

    from grove.models import Account

    registered = _client().post("/o/register/", content_type="application/json", data=json.dumps(
        {"redirect_uris": [REDIRECT], "client_name": "Bench agent",
         "token_endpoint_auth_method": "client_secret_basic",
         "grant_types": ["authorization_code", "refresh_token"]}))
    assert registered.status_code == 201, registered.content
    client_id, secret = registered.json()["client_id"], registered.json()["client_secret"]
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(
        hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
             "code_challenge": challenge, "code_challenge_method": "S256", "state": "s",
             "scope": "mcp", "resource": settings.GROVE_MCP_RESOURCE}
    owner = _client()
    owner.force_login(Account.objects.get(id=env.account_id))
    url = "/o/authorize/?" + urlencode(query)
    assert owner.get(url).status_code == 200
    answer = owner.post(url, {**query, "allow": "Authorize"})
    assert answer.status_code == 302, answer.content[:300]
    code = parse_qs(urlsplit(answer["Location"]).query)["code"][0]
    tokens = _client().post("/o/token/", {
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
        "code_verifier": verifier}, headers=_basic(client_id, secret))
    assert tokens.status_code == 200, tokens.content
    return client_id, secret, tokens.json()["refresh_token"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", default="client_secrets")
    args = parser.parse_args()

    env = Env.fresh("client-secrets")
    from django.conf import settings
    from oauth2_provider.models import Application

    settings.GROVE_CLIENT_AUTH_LIMIT = {"count": 0, "window": 60}  # every wrong one checked
    client_id, secret, refresh = confidential_client(env)
    stored = Application.objects.get(client_id=client_id).client_secret
    algorithm = stored.split("$", 1)[0]
    wrong = secrets.token_urlsafe(96)
    timings: dict[str, list[tuple[float, float]]] = {"right secret": [], "wrong secret": []}
    kinds = [kind for kind in timings for _ in range(args.rounds)]
    random.shuffle(kinds)
    web = _client()
    for kind in kinds:
        given = secret if kind == "right secret" else wrong
        wall, cpu = time.perf_counter(), time.process_time()
        answer = web.post("/o/token/", {"grant_type": "refresh_token", "refresh_token": refresh},
                          headers=_basic(client_id, given))
        timings[kind].append((time.perf_counter() - wall, time.process_time() - cpu))
        if kind == "right secret":
            assert answer.status_code == 200, answer.content
            refresh = answer.json()["refresh_token"]
        else:
            assert answer.status_code == 401, answer.content
    results = {kind: {"wall": summary_ms(w for w, _ in rows), "cpu": summary_ms(c for _, c in rows)}
               for kind, rows in timings.items()}
    print(f"client secret stored as {algorithm!r}; {args.rounds} requests of each kind")
    print(table(["request", "wall p50 ms", "wall p95 ms", "CPU p50 ms", "CPU p95 ms"],
                [[kind, r["wall"]["p50"], r["wall"]["p95"], r["cpu"]["p50"], r["cpu"]["p95"]]
                 for kind, r in results.items()]))
    path = write_result(args.out, {"rounds": args.rounds, "stored_algorithm": algorithm,
                                   "results": results}, env)
    print(f"written to {path}")


if __name__ == "__main__":
    main()
