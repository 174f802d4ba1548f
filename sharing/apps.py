from django.apps import AppConfig


class SharingConfig(AppConfig):
    """Public read-only share links (built on top of the library in a later step)."""

    name = "sharing"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from grove.kernel.tenancy import DATABASE_KEYS
        from notebooks.selectors.library import register_page_extra
        from sharing.selectors import page_share
        from sharing.tokens import SALT

        # The share functions check a link's MAC in the database (sharing 0003).
        DATABASE_KEYS["share"] = SALT
        # The share box on note and notebook pages is read with the page.
        register_page_extra(page_share)
