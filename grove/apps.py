from django.apps import AppConfig
from django.core import checks
from django.db.models.signals import post_migrate


class GroveConfig(AppConfig):
    name = "grove"
    verbose_name = "Grove"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Make Grove's Celery app the current one, so tasks sent from web code use its
        # broker settings.
        import grove.celery  # noqa: F401
        from grove.runtime.checks import trusted_proxies_check
        from grove.runtime.dbroles import grant_runtime_role

        checks.register(trusted_proxies_check, checks.Tags.security, deploy=True)

        post_migrate.connect(grant_runtime_role, sender=self, dispatch_uid="grove-grants")
        # Connections move with the account as history (who saved what), never as
        # working credentials (grove.identity.archive).
        from grove.identity.archive import connections_imported
        from grove.kernel.archive import Archived, register

        register(Archived("grove.Connection",
                          derived=("key_hash", "pending_request", "last_used_at"),
                          imported=connections_imported))
