"""Celery tasks of the core: thin, id-only payloads, safe to run twice (STYLE §5)."""

import uuid

from celery import shared_task

from grove.kernel import jobs


@shared_task(name=jobs.RUN_TASK, ignore_result=True)
def job_run_task(job_id: str, account_id: str) -> int:
    """Wake-up for one job row (see grove.kernel.jobs.run): one batch of its work, or of the
    oldest ready work if its own is done. Duplicates are harmless."""
    return jobs.run(uuid.UUID(job_id), uuid.UUID(account_id))


@shared_task(name=jobs.DRAIN_TASK, ignore_result=True)
def job_drain_task(account_id: str, kind: str) -> int:
    """Wake-up for more ready work of one kind (sent after a claim that left more, and by
    recover; see grove.kernel.jobs.drain)."""
    return jobs.drain(uuid.UUID(account_id), kind)


@shared_task(name="grove.heartbeat", ignore_result=True)
def heartbeat_task() -> None:
    """The worker's sign of life for `/readyz` (grove.runtime.readiness)."""
    from grove.runtime.readiness import heartbeat

    heartbeat("worker")


@shared_task(name="grove.recover", ignore_result=True)
def jobs_recover_task() -> dict[str, int]:
    return jobs.recover()


@shared_task(name="grove.finish_deletions", ignore_result=True)
def finish_deletions_task() -> int:
    """Account deletions cut short after their revoke: hidden and tombstoned now
    (grove.identity.deletion.finish_deletions)."""
    from grove.identity.deletion import finish_deletions

    return finish_deletions()


@shared_task(name="grove.clear_tokens", ignore_result=True)
def oauth_tokens_clear_task() -> None:
    """Delete expired OAuth tokens and grants (django-oauth-toolkit's `cleartokens`);
    revoked refresh tokens are kept until they expire, for reuse detection. Registered
    clients that never obtained a token go too (`grove.identity.oauth.clear_unused_clients`)."""
    from oauth2_provider.models import clear_expired

    from grove.identity.oauth import clear_redeemed_codes, clear_unused_clients

    clear_expired()
    clear_redeemed_codes()
    clear_unused_clients()


@shared_task(name="grove.clear_sessions", ignore_result=True)
def sessions_clear_task() -> None:
    """Delete expired website sessions (Django's `clearsessions`). Grove's store keys a
    row by a MAC of its cookie (grove.identity.sessions) but keeps Django's
    `expire_date`, so the engine's own `clear_expired` applies unchanged."""
    from django.core.management import call_command

    call_command("clearsessions")
