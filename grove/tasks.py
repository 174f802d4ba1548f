"""Celery tasks of the core: thin, id-only payloads, safe to run twice (STYLE §5)."""

import uuid

from celery import shared_task

from grove import jobs


@shared_task(name="grove.job", ignore_result=True)
def job_run_task(job_id: str, account_id: str) -> int:
    """Wake-up for one job row (see grove.jobs.run); duplicates are harmless."""
    return jobs.run(uuid.UUID(job_id), uuid.UUID(account_id))


@shared_task(name="grove.recover", ignore_result=True)
def jobs_recover_task() -> dict[str, int]:
    return jobs.recover()
