"""Visions under concurrency: two first writers of one place (real commits, threads)."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from grove.kernel.errors import Conflict
from grove.kernel.tenancy import tenant
from notebooks import services
from notebooks.models import Vision, VisionRevision
from tests import factories
from tests.factories import op

pytestmark = pytest.mark.slow


def test_two_first_writers_of_one_place_make_one_vision(committed):
    owner = factories.owner()
    results, errors = [], []
    barrier = threading.Barrier(2)

    def write(text):
        try:
            barrier.wait()
            results.append(services.vision_update(actor=owner, operation_id=op(),
                                                  content=text, expected_version=0))
        except Conflict as exc:
            errors.append(exc.code)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(t,)) for t in ("First.", "Second.")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 1 and errors == ["version_conflict"]
    with tenant(owner):
        assert Vision.objects.count() == 1
        assert VisionRevision.objects.count() == 1
