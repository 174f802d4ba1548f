"""The shipped local model (all-MiniLM-L6-v2, 8-bit ONNX) loads offline and embeds as the
reference does: cosine 0.7553 between the two sentences below in the fp32 original.

Dynamic quantisation scales activations per batch, so the 8-bit model gives 0.742
embedding the pair together (padded to one length) and 0.760 one at a time; both are
within 0.02 of fp32. The weights are uint8 so onnxruntime uses exact integer kernels:
these values do not depend on the CPU (int8 weights gave 0.772 on AVX2 without VNNI)."""

import numpy as np
import pytest

from grove.embeddings.local import LocalEmbedder

pytestmark = pytest.mark.slow

PAIR = ["A man is eating food.", "A man is eating a piece of bread."]
FP32_REFERENCE = 0.7553


def test_local_model_gives_the_reference_similarity(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = LocalEmbedder(variant="all-MiniLM-L6-v2")
    assert (model.profile, model.dimension) == ("all-MiniLM-L6-v2-int8/384", 384)
    together = model.embed(PAIR)
    apart = np.vstack([model.embed([PAIR[0]]), model.embed([PAIR[1]])])
    for vectors, expected in ((together, 0.7417), (apart, 0.7601)):
        assert vectors.shape == (2, 384) and vectors.dtype == np.float32
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        similarity = float(vectors[0] @ vectors[1])
        assert similarity == pytest.approx(expected, abs=0.003)
        assert similarity == pytest.approx(FP32_REFERENCE, abs=0.02)
    # The same sentence embedded alone or in a batch: nearly the same vector.
    assert float(np.min(np.sum(together * apart, axis=1))) > 0.99
    unrelated = model.embed(["The stock market closed lower on Friday."])[0]
    assert float(together[0] @ unrelated) < 0.25  # below recall's relatedness threshold
    assert model.embed([]).shape == (0, 384)


def test_the_model_threads_wait_without_spinning():
    """A query is one short run: threads that busy-wait after it would take the cores
    from the request's own work (docs/benchmarks.md, "HTTP overhead")."""
    options = LocalEmbedder(variant="all-MiniLM-L6-v2").session.get_session_options()
    for pool in ("intra_op", "inter_op"):
        assert options.get_session_config_entry(f"session.{pool}.allow_spinning") == "0"
