"""`grove term_stats`: fold pending term-statistics changes, or recount them.

    grove term_stats              # fold every account's pending deltas (what beat does)
    grove term_stats --recount    # recount every account from its notes (repair)

The statistics are kept current by the writes themselves; a recount is only needed if
notes were changed behind the database triggers' back (e.g. triggers disabled during a
bulk load). Both are safe while Grove runs.
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Fold pending term-statistics changes (or --recount them from the notes)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--recount", action="store_true",
                            help="recount every account's statistics from its notes")

    def handle(self, *args: Any, recount: bool, **options: Any) -> None:
        from grove.kernel.actor import Actor
        from grove.kernel.tenancy import active_account_ids
        from notebooks.services.term_stats import term_stats_refresh
        from notebooks.tasks import term_stats_compact_task

        if not recount:
            folded = term_stats_compact_task()
            self.stdout.write(f"folded {folded} pending changes")
            return
        accounts = active_account_ids()
        notes = sum(term_stats_refresh(actor=Actor.system(a)) for a in accounts)
        self.stdout.write(f"recounted {len(accounts)} accounts ({notes} active notes)")
