from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class NotebooksConfig(AppConfig):
    name = "notebooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from grove.identity.selectors import register_settings_extra
        from grove.kernel import jobs
        from notebooks.selectors.library import register_page_extra
        from notebooks.selectors.truth import declared_extra
        from notebooks.selectors.vision_pages import account_vision_extra
        from notebooks.services.indexing import HANDLER
        from notebooks.services.ingest_upload_job import HANDLER as INGEST_UPLOAD_HANDLER

        jobs.register(HANDLER)
        jobs.register(INGEST_UPLOAD_HANDLER)
        # The tables an account moves with (grove.identity.archive).
        from notebooks.archive import register_tables

        register_tables()
        # Account deletion hides the library; `grove purge` removes what is past the window.
        from grove.identity.deletion import register_hider
        from grove.kernel import purge
        from notebooks.purge import (
            hide_notebooks,
            hide_notes,
            hide_uploads,
            purge_notebooks,
            purge_notes,
        )

        register_hider("notes", hide_notes)
        register_hider("notebooks", hide_notebooks)
        register_hider("uploads", hide_uploads)
        purge.register(30, "notes", purge_notes)
        purge.register(40, "notebooks", purge_notebooks)
        # The note page's "ground truth" badge.
        register_page_extra(declared_extra)
        # The account's vision card on Settings is read with that page.
        register_settings_extra(account_vision_extra)
        post_migrate.connect(_vector_index_for_profile, sender=self,
                             dispatch_uid="grove-vector-index")


def _vector_index_for_profile(sender: Any = None, using: str = "owner", **kwargs: Any) -> None:
    """Profiles other than the 384-d default get their HNSW index at migrate time."""
    from grove.embeddings import configured_profile
    from passages.vectors import ensure_vector_index

    profile = configured_profile()
    if profile is not None:
        ensure_vector_index(profile[1], using=using)
