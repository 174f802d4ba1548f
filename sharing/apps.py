import uuid
from datetime import datetime
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
        # Account deletion revokes every link first; `grove purge` removes the links of
        # what it purges, before their notes and notebooks.
        from grove.identity.deletion import register_revoker
        from grove.kernel import purge

        register_revoker("shareLinks", _revoke_shares)
        # A file's "Part N" notes folded into one note (issue 37): their links follow.
        from notebooks.services.ingest import register_fold

        register_fold(_shares_folded)
        purge.register(10, "shareLinks", _purge_shares)


def _revoke_shares(account_id: uuid.UUID, now: datetime) -> int:
    from sharing.models import Share

    return Share.objects.filter(account_id=account_id, revoked_at__isnull=True) \
        .update(revoked_at=now)


def _shares_folded(account_id: uuid.UUID, folded: list[uuid.UUID],
                   into: uuid.UUID) -> list[str]:
    """The live links of a file's folded "Part N" notes (in the ingest's tenant
    transaction): the oldest moves to the note that now holds the whole file — the text
    it showed is there — unless that note has a link already; a note has one live link,
    so any other is revoked, and the summary says so."""
    from django.utils import timezone

    from sharing.models import Share

    links = list(Share.objects.filter(account_id=account_id, note_id__in=folded,
                                      revoked_at__isnull=True).order_by("created_at", "id"))
    if not links:
        return []
    said = []
    if not Share.objects.filter(note_id=into, revoked_at__isnull=True).exists():
        moved = links.pop(0)
        Share.objects.filter(id=moved.id).update(note_id=into)
        said.append("a share link of an earlier part now shows the whole file's note")
    if links:
        Share.objects.filter(id__in=[link.id for link in links]).update(
            revoked_at=timezone.now())
        said.append(f"{len(links)} share links of earlier parts revoked: the file's note "
                    "has one link (on its page)")
    return said


def _purge_shares(account_id: uuid.UUID, cutoff: datetime, using: str) -> int:
    from django.db.models import Q

    from notebooks.models import Note, Notebook
    from notebooks.purge import purgeable_notes
    from sharing.models import Share

    notes = Note.objects.using(using).filter(purgeable_notes(account_id, cutoff))
    notebooks = Notebook.objects.using(using).filter(account_id=account_id,
                                                     deleted_at__lt=cutoff)
    _, by_model = Share.objects.using(using).filter(account_id=account_id).filter(
        Q(note__in=notes) | Q(notebook__in=notebooks)).delete()
    return by_model.get("sharing.Share", 0)


def _shares_imported(rows: list[Any], options: dict[str, Any]) -> None:
    from django.utils import timezone

    from sharing.models import Share

    if not options.get("keep_shares"):
        Share.objects.filter(id__in=[row.id for row in rows], revoked_at__isnull=True) \
            .update(revoked_at=timezone.now())
