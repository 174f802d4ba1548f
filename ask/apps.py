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
