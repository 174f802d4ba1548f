"""`/v1/openapi.json` says exactly what the server accepts: schemathesis with every check it
has (`--checks all`: server errors, status codes, content types, headers, response
schemas, negative data rejected, positive data accepted, missing required headers,
unsupported methods, ignored auth, use after free, resource availability, …) in every
phase, against the live test server (uvicorn on the test database), with an API key and
then with the owner's website session on the operations that take one. Cursors are
generated like any argument: the document states their shape, and
`bench/schemathesis_hooks.py` holds the two refusals no schema can state to exactly
their rule.

The same run as `bench/schema_fuzz.py` (the real CLI, `bench/schemathesis.toml`), bounded
to a few examples per operation and phase so that it stays a few minutes; the bench runs
schemathesis' default 100 against `grove serve` (docs/benchmarks.md)."""

from __future__ import annotations

import secrets

import pytest
from django.test import Client

from bench.schema_fuzz import key_auth, run_schemathesis, session_auth, session_operations
from grove.identity import services
from grove.models import Account
from tests import factories

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]

EXAMPLES = 8


@pytest.fixture
def owner_and_key(site_url, committed, settings):
    settings.GROVE_API_RATE_LIMIT = 0  # the fuzzer is one fast client; 429s would hide bugs
    settings.GROVE_ADDRESS_RATE_LIMIT = 0
    owner = factories.owner()
    home = factories.notebook(owner, "Fuzzed")
    factories.notebook(owner, "Inside", parent=home.id)
    factories.note(owner, "something to find", notebook_id=home.id)
    factories.note(owner, "Half way through the shed.", kind="handoff", task_id="shed-1")
    key = services.connection_create_key(actor=owner, name="fuzz", personal=True,
                                         all_notebooks=True).key
    return owner, key


def _signed_in(owner):
    """The owner's website session, as a browser holds it (and a CSRF token)."""
    web = Client()
    web.force_login(Account.objects.get(id=owner.account_id))
    return session_auth(web.cookies["sessionid"].value, secrets.token_hex(16))


def test_the_document_says_what_the_server_accepts(site_url, owner_and_key):
    owner, key = owner_and_key
    with_key = run_schemathesis(site_url, key_auth(key), max_examples=EXAMPLES, seed=36,
                                timeout=900)
    with_session = run_schemathesis(site_url, _signed_in(owner), max_examples=EXAMPLES,
                                    seed=36, timeout=600,
                                    include=session_operations(site_url))
    for name, run in (("key", with_key), ("session", with_session)):
        print(f"\nschemathesis, {name}: {run['operations']['tested']} operations, "
              f"{run['cases']} cases, {run['seconds']} s, failures {run['failures']}")
        assert run["failures"] == [] and run["errors"] == [], run["output"]
        assert run["operations"]["tested"] == run["operations"]["selected"]
    assert with_key["operations"]["tested"] >= 50 and with_key["cases"] >= 1000
    assert with_session["operations"]["tested"] >= 20
