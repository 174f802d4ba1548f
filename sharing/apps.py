from typing import Any

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
        # Share links move with the account, revoked unless the import keeps them.
        from grove.kernel.archive import Archived, register

        register(Archived("sharing.Share", imported=_shares_imported))


def _shares_imported(rows: list[Any], options: dict[str, Any]) -> None:
    from django.utils import timezone

    from sharing.models import Share

    if not options.get("keep_shares"):
        Share.objects.filter(id__in=[row.id for row in rows], revoked_at__isnull=True) \
            .update(revoked_at=timezone.now())
