"""A deterministic stand-in for the local model (STYLE §9): fast, no model file.

Words are lower-cased, crudely stemmed and hashed into 384 buckets with signs; texts
that share words get high cosine similarity, unrelated texts land near zero — enough
for recall tests to be exact about order and thresholds.
"""

from __future__ import annotations

import hashlib
import re
import threading

import numpy as np

DIMENSION = 384
WORD = re.compile(r"[a-z0-9]+")
STOP = {"the", "a", "an", "of", "to", "in", "is", "and", "or", "for", "on", "with", "it"}


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            return word[: -len(suffix)]
    return word


class FakeEmbedder:
    profile = "fake-hash/384"
    dimension = DIMENSION
    calls: list[int] = []  # batch sizes, for tests that count model calls
    _lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            self.calls.append(len(texts))
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in WORD.findall(text.lower()):
                if word in STOP:
                    continue
                digest = hashlib.blake2b(_stem(word).encode(), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % DIMENSION
                out[row, bucket] += 1.0 if digest[4] & 1 else -1.0
            norm = np.linalg.norm(out[row])
            if norm:
                out[row] /= norm
        return out


class OtherFakeEmbedder(FakeEmbedder):
    """Another "model": a different profile with the same dimension (for reindex)."""

    profile = "fake-other/384"
