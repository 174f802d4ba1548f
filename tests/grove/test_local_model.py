"""The shipped local model (all-MiniLM-L6-v2, int8 ONNX) loads offline and embeds as the
reference does: cosine 0.755 between the two sentences below in the fp32 original
(0.758–0.760 after int8 quantisation, which varies slightly with batching)."""

import numpy as np
import pytest

from grove.embeddings.local import LocalEmbedder

pytestmark = pytest.mark.slow

PAIR = ["A man is eating food.", "A man is eating a piece of bread."]


def test_local_model_gives_the_reference_similarity(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = LocalEmbedder(variant="all-MiniLM-L6-v2")
    assert (model.profile, model.dimension) == ("all-MiniLM-L6-v2-int8/384", 384)
    together = model.embed(PAIR)
    apart = np.vstack([model.embed([PAIR[0]]), model.embed([PAIR[1]])])
    for vectors in (together, apart):
        assert vectors.shape == (2, 384) and vectors.dtype == np.float32
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert float(vectors[0] @ vectors[1]) == pytest.approx(0.7585, abs=0.01)
    unrelated = model.embed(["The stock market closed lower on Friday."])[0]
    assert float(together[0] @ unrelated) < 0.25  # below recall's relatedness threshold
    assert model.embed([]).shape == (0, 384)
