"""What every embedding provider is: the `Embedder` protocol, the profile a vector
records, and the one error worth retrying. Below the providers (`local`, `remote`) and
the package's choice between them (`grove.embeddings`), which both import it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


class EmbeddingUnavailable(Exception):
    """The provider could not answer now (network, rate limit): worth retrying."""


class Embedder(Protocol):
    profile: str
    dimension: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text, in order."""
        ...


def profile_name(model: str, dimension: int) -> str:
    return f"{model}/{dimension}"
