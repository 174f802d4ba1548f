"""Ask's fixtures: the owner, their signed-in browser client, and the fake
OpenAI-compatible provider Grove is pointed at."""

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.test import override_settings

from tests import factories
from tests.fake_openai import FakeOpenAI
from tests.notebooks.conftest import web  # noqa: F401 - the owner's signed-in client


@contextmanager
def fake_provider(timeout: float) -> Iterator[FakeOpenAI]:
    """A fake model server, with Grove's settings pointing at it."""
    with FakeOpenAI() as server, override_settings(
            GROVE_LLM_BASE_URL=server.url, GROVE_LLM_MODEL="fake-model",
            GROVE_LLM_API_KEY="sk-test", GROVE_LLM_TIMEOUT=timeout):
        yield server


@pytest.fixture
def provider() -> Iterator[FakeOpenAI]:
    with fake_provider(timeout=1.0) as server:
        yield server


@pytest.fixture
def owner():
    return factories.owner()


@pytest.fixture
def _clean_vector_index(vacuumed_vectors):
    """Recall-backed tests start from a clean vector index (see `vacuumed_vectors`)."""
