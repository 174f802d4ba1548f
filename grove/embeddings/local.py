"""all-MiniLM-L6-v2 with onnxruntime + tokenizers (no torch).

The ONNX graph, tokenizer and licence ship as package data in `grove/embedding_model/`
(made by `scripts/export_minilm.py`). The graph returns the transformer's token states;
sentence-transformers' pooling is reproduced here: mean over the attention mask, then
L2 normalisation.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
from django.conf import settings

from grove.embeddings.base import profile_name
from grove.embeddings.catalog import DEFAULT_VARIANT, DIMENSION, MODEL_ID, VARIANTS

MODEL_DIR = Path(__file__).resolve().parent.parent / "embedding_model"
MAX_TOKENS = 256
BATCH = 32


def _variant() -> str:
    return getattr(settings, "GROVE_EMBEDDINGS_MODEL", None) or DEFAULT_VARIANT


def _profile(file: str) -> tuple[str, int]:
    precision = "int8" if file.endswith(".int8.onnx") else "fp32"
    return profile_name(f"{MODEL_ID}-{precision}", DIMENSION), DIMENSION


class LocalEmbedder:
    def __init__(self, *, variant: str = DEFAULT_VARIANT, threads: int | None = None):
        import onnxruntime
        from tokenizers import Tokenizer

        self.variant = variant
        file = VARIANTS[variant]
        self.profile, self.dimension = _profile(file)
        self.tokenizer = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or min(2, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        # After a run onnxruntime's threads busy-wait for the next one by default: for a
        # query (one short run per recall) they then burn both cores while the request
        # goes on with its SQL. Off: recall p50 66.7 → 56.3 ms and its CPU 41 → 34 ms on
        # the shared two cores; batch throughput unchanged (docs/benchmarks.md).
        for pool in ("intra_op", "inter_op"):
            options.add_session_config_entry(f"session.{pool}.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            str(MODEL_DIR / file), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self.session.get_inputs()}
        # One inference at a time per process: each run already uses every intra-op
        # thread, so two worker threads running the model at once only oversubscribe
        # the cores; the other thread does its database work meanwhile.
        self._running = threading.Lock()

    @classmethod
    def from_settings(cls) -> LocalEmbedder:
        return cls(variant=_variant())

    @classmethod
    def configured_profile(cls) -> tuple[str, int]:
        return _profile(VARIANTS[_variant()])

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        # Sort by length so each batch pads little; restore the order at the end.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            chunk = order[start:start + BATCH]
            out[chunk] = self._embed_batch([texts[i] for i in chunk])
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        with self._running:
            hidden = self.session.run(None, feed)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, np.float32(1e-12))).astype(np.float32)
