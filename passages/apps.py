from django.apps import AppConfig


class PassagesConfig(AppConfig):
    """A note's passages: how a note is cut, what each piece is, its vectors (issue 37;
    docs/architecture.md, "Documents and passages"). Below `notebooks`: it knows a note
    as an id, a kind and a text."""

    name = "passages"
    default_auto_field = "django.db.models.BigAutoField"
