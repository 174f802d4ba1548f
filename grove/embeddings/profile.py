"""The stored embedding profile versus the configured one (SPEC §6)."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from grove.embeddings import configured_profile
from grove.kernel.errors import ConfigError
from grove.models import EmbeddingProfile


def check_embedding_profile() -> None:
    """Refuse to start when the configured model is not the one the stored vectors were
    made with (unless `grove reindex` is building it). The first start records it."""
    configured = configured_profile()
    if configured is None:
        return  # disabled: recall is lexical; stored vectors are kept for later
    name, dimension = configured
    active = EmbeddingProfile.objects.filter(status=EmbeddingProfile.Status.ACTIVE).first()
    if active is None:
        try:
            with transaction.atomic():
                EmbeddingProfile.objects.update_or_create(
                    name=name, defaults={"dimension": dimension, "activated_at": timezone.now(),
                                         "status": EmbeddingProfile.Status.ACTIVE})
        except IntegrityError:
            pass  # another process recorded it first
        return
    if active.name == name:
        return
    if EmbeddingProfile.objects.filter(name=name,
                                       status=EmbeddingProfile.Status.BUILDING).exists():
        return
    raise ConfigError(
        f"GROVE_EMBEDDINGS: the stored vectors were made with {active.name} "
        f"({active.dimension} dimensions) but the configuration asks for {name} "
        f"({dimension} dimensions); run `grove reindex` to rebuild them"
    )


def active_profile_name() -> str | None:
    """The profile whose vectors recall searches: the configured one (while it is being
    built, recall covers the notes already re-embedded and counts the rest as pending)."""
    configured = configured_profile()
    return None if configured is None else configured[0]
