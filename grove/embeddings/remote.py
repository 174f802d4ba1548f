"""Any OpenAI-compatible embeddings endpoint, through the `openai` package."""

from __future__ import annotations

import numpy as np
from django.conf import settings

from grove.embeddings.base import EmbeddingUnavailable, profile_name


class OpenAIEmbedder:
    def __init__(self, *, base_url: str, api_key: str, model: str, dimension: int,
                 timeout: float = 30.0):
        import openai

        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "unused",
                                    timeout=timeout, max_retries=2)
        self.model = model
        self.dimension = dimension
        self.profile = profile_name(f"openai:{model}", dimension)

    @classmethod
    def from_settings(cls) -> OpenAIEmbedder:
        # grove.runtime.config guarantees all three are set when GROVE_EMBEDDINGS=openai.
        _, dimension = cls.configured_profile()
        return cls(base_url=str(settings.GROVE_EMBEDDINGS_BASE_URL),
                   api_key=settings.GROVE_EMBEDDINGS_API_KEY or "",
                   model=str(settings.GROVE_EMBEDDINGS_MODEL), dimension=dimension)

    @classmethod
    def configured_profile(cls) -> tuple[str, int]:
        dimension = int(settings.GROVE_EMBEDDINGS_DIMENSION or 0)
        return profile_name(f"openai:{settings.GROVE_EMBEDDINGS_MODEL}", dimension), dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        import openai

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        try:
            response = self.client.embeddings.create(model=self.model, input=texts,
                                                     dimensions=self.dimension)
        except (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError,
                openai.InternalServerError) as exc:
            raise EmbeddingUnavailable(str(exc)) from exc
        rows = sorted(response.data, key=lambda item: item.index)
        vectors = np.array([row.embedding for row in rows], dtype=np.float32)
        if vectors.shape != (len(texts), self.dimension):
            raise ValueError(f"the endpoint returned vectors of shape {vectors.shape}, "
                             f"expected ({len(texts)}, {self.dimension})")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, np.float32(1e-12))
