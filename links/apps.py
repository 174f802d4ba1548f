from django.apps import AppConfig


class LinksConfig(AppConfig):
    """Links between notes: what a note links to, the names it answers to, and how a
    link finds its note (issue 38; docs/architecture.md, "Links between notes"). Below
    `notebooks`, beside `passages`: it knows a note as an id, a place and a text."""

    name = "links"
    default_auto_field = "django.db.models.BigAutoField"
