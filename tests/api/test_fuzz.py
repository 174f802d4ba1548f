"""Fuzzing `/v1` from its own OpenAPI document (schemathesis) against a live server with
a valid key: no response may be a server error or break the documented schema, and no
request the document calls valid may be refused as malformed (`positive_data_acceptance`:
only 2xx, 401, 403, 404, 409 and 429 may answer one) — the document says exactly what
the services accept.

Cursors (`cursor`, `after`) are left out of the generated requests: they are opaque
tokens that only a previous page can supply (signed, so any other value is a 400 by
design — tested where cursors are).

Bounded to 30 examples per operation (the whole suite must stay near 20 minutes). Driven
through schemathesis' Python API with Hypothesis (its pytest plugin does not support
pytest 9 yet); run by `.ci/run` as part of the whole suite. The figures are printed
(`-s`) and asserted."""

from __future__ import annotations

from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from grove.identity import services
from tests import factories

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, positive_data_acceptance]
EXAMPLES = 30
CURSORS = ("cursor", "after")


def _without_cursors(case):
    for part in (case.query, case.body):
        if isinstance(part, dict):
            for name in CURSORS:
                part.pop(name, None)
    return case


@pytest.fixture
def fuzz_key(site_url, committed, settings):
    settings.GROVE_API_RATE_LIMIT = 0  # the fuzzer is one fast client; 429s would hide bugs
    owner = factories.owner()
    notebook = factories.notebook(owner, "Fuzzed")
    factories.note(owner, "something to find", notebook_id=notebook.id)
    return services.connection_create_key(actor=owner, name="fuzz", personal=True,
                                          all_notebooks=True).key


def test_api_conforms_to_its_schema(site_url, fuzz_key):
    schema = schemathesis.openapi.from_url(f"{site_url}/v1/openapi.json")
    headers = {"Authorization": f"Bearer {fuzz_key}"}
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy().map(_without_cursors))
        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def run(case):
            response = case.call(base_url=site_url, headers=headers)
            statuses[response.status_code] += 1
            try:
                case.validate_response(response, checks=CHECKS, headers=headers)
            except BaseException as exc:  # schemathesis' FailureGroup is an ExceptionGroup
                failures.append(f"{case.operation.label} [{response.status_code}] "
                                f"{response.text[:300]}: {str(exc).splitlines()[0]}")
                raise

        try:
            run()
        except BaseException:  # noqa: BLE001, S110 - already recorded in `failures`
            pass
    calls = sum(statuses.values())
    print(f"\nschemathesis: {operations} operations, {calls} calls, statuses {dict(statuses)}")
    assert operations >= 20
    assert calls >= operations * 5
    assert failures == []
    assert not [s for s in statuses if s >= 500]
