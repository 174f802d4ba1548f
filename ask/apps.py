from django.apps import AppConfig


class AskConfig(AppConfig):
    """Ask mode: cited answers over notes (built on top of recall in a later step)."""

    name = "ask"
    default_auto_field = "django.db.models.BigAutoField"
