"""The local models Grove ships (import-light: read by the configuration check)."""

MODEL_ID = "all-MiniLM-L6-v2"
DIMENSION = 384
# GROVE_EMBEDDINGS_MODEL value → ONNX file in grove/embedding_model/.
# The 8-bit model ("int8": uint8 weights, so onnxruntime's exact integer kernels run on
# every CPU) is shipped and the default: on SciFact train it scores nDCG@10 0.660, as
# fp32 does, at ~1.25× fp32's speed on AVX2 and a quarter of its size
# (docs/benchmarks.md). The fp32 graph is not shipped
# (90 MB); `scripts/export_minilm.py` makes it, and "all-MiniLM-L6-v2-fp32" uses it.
VARIANTS = {
    "all-MiniLM-L6-v2": "model.int8.onnx",
    "all-MiniLM-L6-v2-int8": "model.int8.onnx",
    "all-MiniLM-L6-v2-fp32": "model.onnx",
}
DEFAULT_VARIANT = "all-MiniLM-L6-v2"
