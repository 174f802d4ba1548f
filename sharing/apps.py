from django.apps import AppConfig


class SharingConfig(AppConfig):
    """Public read-only share links (built on top of the library in a later step)."""

    name = "sharing"
    default_auto_field = "django.db.models.BigAutoField"
