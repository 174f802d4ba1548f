"""Website fixtures for the notebooks pages: the owner and their signed-in browser."""

import numpy as np
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


class RecordingEmbedder:
    """A stand-in model that keeps every text it was given (to assert what a model saw)."""

    profile, dimension = "fake-hash/384", 384

    def __init__(self):
        self.seen: list[str] = []

    def embed(self, texts):
        self.seen.extend(texts)
        rng = np.random.default_rng(len(self.seen))
        vectors = rng.normal(size=(len(texts), 384)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture
def embedder(monkeypatch):
    recording = RecordingEmbedder()
    monkeypatch.setattr("notebooks.services.indexing.get_embedder", lambda: recording)
    return recording
