"""Embedding providers (SPEC §4, §6), chosen by `GROVE_EMBEDDINGS`:

* `local` (default): all-MiniLM-L6-v2, 384-d, run with onnxruntime + tokenizers from the
  ONNX graph shipped in `grove/embedding_model/` (no torch);
* `openai`: any OpenAI-compatible embeddings endpoint through the `openai` package;
* `disabled`: no vectors; recall is lexical and says so.

Every vector records the provider's `profile` (model id + dimension).
"""

from __future__ import annotations

import functools

from django.conf import settings
from django.utils.module_loading import import_string

from grove.embeddings.base import Embedder, EmbeddingUnavailable, profile_name

__all__ = ["Embedder", "EmbeddingUnavailable", "configured_profile", "get_embedder",
           "profile_name"]


@functools.cache
def get_embedder() -> Embedder | None:
    """The configured provider (built once per process), or None when disabled."""
    factory = getattr(settings, "GROVE_EMBEDDER_FACTORY", None)
    if factory:
        return import_string(factory)()
    kind = settings.GROVE_EMBEDDINGS
    if kind == "disabled":
        return None
    if kind == "openai":
        from grove.embeddings.remote import OpenAIEmbedder

        return OpenAIEmbedder.from_settings()
    from grove.embeddings.local import LocalEmbedder

    return LocalEmbedder.from_settings()


def configured_profile() -> tuple[str, int] | None:
    """(profile, dimension) the configuration asks for, without loading any model."""
    factory = getattr(settings, "GROVE_EMBEDDER_FACTORY", None)
    if factory:
        embedder = get_embedder()
        assert embedder is not None
        return embedder.profile, embedder.dimension
    kind = settings.GROVE_EMBEDDINGS
    if kind == "disabled":
        return None
    if kind == "openai":
        from grove.embeddings.remote import OpenAIEmbedder

        return OpenAIEmbedder.configured_profile()
    from grove.embeddings.local import LocalEmbedder

    return LocalEmbedder.configured_profile()
