"""The local models Grove ships (import-light: read by the configuration check)."""

MODEL_ID = "all-MiniLM-L6-v2"
DIMENSION = 384
# GROVE_EMBEDDINGS_MODEL value → ONNX file in grove/embedding_model/.
# The default is chosen by measured SciFact quality and speed (docs/benchmarks.md).
VARIANTS = {
    "all-MiniLM-L6-v2": "model.int8.onnx",
    "all-MiniLM-L6-v2-int8": "model.int8.onnx",
    "all-MiniLM-L6-v2-fp32": "model.onnx",
}
DEFAULT_VARIANT = "all-MiniLM-L6-v2"
