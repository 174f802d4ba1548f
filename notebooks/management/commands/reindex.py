"""`grove reindex`: rebuild every note's vector with the configured embedding model.

Queues an embed job per note, works through them here (any running `grove worker`
helps), shows progress, then switches recall to the new profile. Until then a running
`grove serve` with the old configuration keeps serving the old vectors.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from grove.embeddings import configured_profile
from grove.kernel import jobs
from grove.kernel.tenancy import active_account_ids
from notebooks.services import indexing

STALL_SECONDS = 600.0


def _bar(done: int, total: int, width: int = 40) -> str:
    filled = width if total == 0 else int(width * done / total)
    percent = 100.0 if total == 0 else 100.0 * done / total
    return f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} notes ({percent:5.1f}%)"


class Command(BaseCommand):
    help = "Re-embed every note with the configured embedding model, then switch to it."

    def handle(self, *args: Any, **options: Any) -> None:
        profile = configured_profile()
        if profile is None:
            raise CommandError("GROVE_EMBEDDINGS is disabled: there is nothing to embed.")
        name, dimension = profile
        from django.conf import settings

        from passages.vectors import ensure_vector_index, vector_index_exists

        if not vector_index_exists(dimension):
            if not settings.GROVE_MIGRATE_CONFIGURED:
                raise CommandError(
                    f"no vector index for {dimension} dimensions yet: set "
                    "GROVE_MIGRATE_DATABASE_URL (the schema owner) so reindex can create it")
            ensure_vector_index(dimension, using="owner")
        queued = indexing.reindex_start(name, dimension)
        self.stdout.write(f"Embedding with {name}: {queued} notes queued.")
        started = last_progress = time.monotonic()
        previous = -1
        while True:
            worked = sum(jobs.run_batch(account_id=a, kind=indexing.EMBED)
                         for a in active_account_ids())
            done, total = indexing.reindex_progress(name)
            sys.stderr.write(_bar(done, total))
            sys.stderr.flush()
            if done >= total:
                break
            if done != previous:
                previous, last_progress = done, time.monotonic()
            elif time.monotonic() - last_progress > STALL_SECONDS:
                sys.stderr.write("\n")
                raise CommandError(
                    f"{total - done} notes could not be embedded (their indexing shows "
                    "'failed'); the active profile is unchanged. Fix the cause and run "
                    "`grove reindex` again.")
            if not worked:
                time.sleep(0.5)  # retries wait for their backoff; workers may help
        sys.stderr.write("\n")
        indexing.reindex_finish(name)
        self.stdout.write(f"Done in {time.monotonic() - started:.1f}s: recall now uses {name}.")
