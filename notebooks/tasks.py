"""Celery tasks of the notebooks app: thin, id-based, safe to run twice (STYLE §5)."""

from celery import shared_task

from grove.kernel.actor import Actor
from grove.kernel.tenancy import active_account_ids
from notebooks.services.maintenance import note_expire_due


@shared_task(name="grove.expire", ignore_result=True)
def note_expire_due_task() -> dict[str, int]:
    """Periodic retention over every account, each in its own tenant transaction."""
    totals = {"accounts": 0, "expired": 0, "deleted": 0}
    for account_id in active_account_ids():
        result = note_expire_due(actor=Actor.system(account_id))
        totals["accounts"] += 1
        totals["expired"] += result.expired
        totals["deleted"] += result.deleted
    return totals


@shared_task(name="grove.term_stats", ignore_result=True)
def term_stats_compact_task() -> int:
    """Periodic: fold every account's pending term-statistics deltas into its counters
    (the statistics themselves are current without it; this keeps their reads short).
    Returns how many delta rows were folded."""
    from notebooks.services.term_stats import COMPACT_BATCH, term_stats_compact

    folded = 0
    for account_id in active_account_ids():
        actor = Actor.system(account_id)
        while (batch := term_stats_compact(actor=actor)) >= COMPACT_BATCH:
            folded += batch
        folded += batch
    return folded


@shared_task(name="grove.note_counts", ignore_result=True)
def note_counts_compact_task() -> int:
    """Periodic: fold every account's note-count rows into one per place (the counts are
    current without it; this keeps the library's reads of them to a row per notebook).
    Returns how many rows were folded."""
    from notebooks.services.note_counts import note_counts_compact

    return sum(note_counts_compact(actor=Actor.system(account_id))
               for account_id in active_account_ids())


@shared_task(name="grove.passages", ignore_result=True)
def passages_heal_task() -> int:
    """Periodic: notes whose passages fell behind their content (written by an older
    release during a rolling upgrade) are cut again and queued for their vectors."""
    from notebooks.services.indexing import HEAL_BATCH, passages_heal

    healed = 0
    for account_id in active_account_ids():
        while (batch := passages_heal(actor=Actor.system(account_id))) >= HEAL_BATCH:
            healed += batch
        healed += batch
    return healed
