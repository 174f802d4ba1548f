"""GROVE_EMBEDDINGS=openai: the real `openai` client against a local server speaking the
wire protocol."""

import numpy as np
import pytest

from grove.embeddings import EmbeddingUnavailable
from grove.embeddings.remote import OpenAIEmbedder
from tests.fake_openai import FakeOpenAI


def test_embeddings_through_an_openai_compatible_endpoint():
    with FakeOpenAI() as server:
        embedder = OpenAIEmbedder(base_url=server.url, api_key="sk-test", model="embed-small",
                                  dimension=8)
        vectors = embedder.embed(["first text", "second text", "first text"])
        assert vectors.shape == (3, 8) and vectors.dtype == np.float32
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
        assert np.allclose(vectors[0], vectors[2])  # in order, deterministic
        [request] = server.requests
        assert request["path"] == "/v1/embeddings"
        assert request["body"]["model"] == "embed-small"
        assert request["body"]["dimensions"] == 8
        assert request["auth"] == "Bearer sk-test"
        assert embedder.profile == "openai:embed-small/8"


def test_an_unavailable_endpoint_is_a_transient_error():
    with FakeOpenAI() as server:
        server.fail_with = 503
        embedder = OpenAIEmbedder(base_url=server.url, api_key="k", model="m", dimension=8,
                                  timeout=5)
        with pytest.raises(EmbeddingUnavailable):
            embedder.embed(["x"])
        assert len(server.requests) == 3  # the client's own bounded retries, then give up


def test_a_wrong_dimension_is_a_permanent_error():
    with FakeOpenAI() as server:
        embedder = OpenAIEmbedder(base_url=server.url, api_key="k", model="m", dimension=8)
        # A server that ignores the requested "dimensions".
        server.vector = lambda text, size: np.ones(4)  # type: ignore[method-assign]
        with pytest.raises(ValueError, match="shape"):
            embedder.embed(["x"])
