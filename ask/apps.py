import uuid
from datetime import datetime

from django.apps import AppConfig


class AskConfig(AppConfig):
    """Ask: cited answers over notes — stateless (`/v1/ask`) and in conversations."""

    name = "ask"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from ask import verification
        from ask.generation import HANDLER
        from grove.kernel import jobs
        from notebooks.services import write_check

        jobs.register(HANDLER)
        jobs.register(verification.HANDLER)
        write_check.provide(verification.WriteChecker())
        # Conversations move with the account (grove.identity.archive), after notes.
        from grove.kernel.archive import Archived, register

        register(Archived("ask.Conversation"), Archived("ask.Turn"), Archived("ask.Proposal"))
        # Account deletion hides conversations; `grove purge` removes deleted ones (with
        # their turns and proposals) once past the window — before notebooks they name.
        from grove.identity.deletion import register_hider
        from grove.kernel import purge

        register_hider("conversations", _hide_conversations)
        purge.register(20, "conversations", _purge_conversations)


def _hide_conversations(account_id: uuid.UUID, now: datetime) -> int:
    from ask.models import Conversation

    return Conversation.objects.filter(account_id=account_id, deleted_at__isnull=True) \
        .update(deleted_at=now)


def _purge_conversations(account_id: uuid.UUID, cutoff: datetime, using: str) -> int:
    from ask.models import Conversation

    _, by_model = Conversation.objects.using(using).filter(
        account_id=account_id, deleted_at__lt=cutoff).delete()
    return by_model.get("ask.Conversation", 0)
