"""`grove term_stats`: fold the pending changes of the counts the writes keep — term
statistics and live note counts per notebook — or recount them.

    grove term_stats              # fold every account's pending changes (what beat does)
    grove term_stats --recount    # recount every account from its notes (repair)

Both are kept current by the writes themselves (database triggers); a recount is only
needed if notes were changed behind the triggers' back (e.g. triggers disabled during a
bulk load). Both are safe while Grove runs.
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = ("Fold pending term-statistics and note-count changes "
            "(or --recount them from the notes).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--recount", action="store_true",
                            help="recount every account's statistics from its notes")

    def handle(self, *args: Any, recount: bool, **options: Any) -> None:
        from grove.kernel.actor import Actor
        from grove.kernel.tenancy import active_account_ids
        from notebooks.services.note_counts import note_counts_refresh
        from notebooks.services.term_stats import term_stats_refresh
        from notebooks.tasks import note_counts_compact_task, term_stats_compact_task

        if not recount:
            folded = term_stats_compact_task()
            counts = note_counts_compact_task()
            self.stdout.write(f"folded {folded} pending changes "
                              f"({counts} of note counts)")
            return
        accounts = active_account_ids()
        notes = 0
        for account_id in accounts:
            notes += term_stats_refresh(actor=Actor.system(account_id))
            note_counts_refresh(actor=Actor.system(account_id))
        self.stdout.write(f"recounted {len(accounts)} accounts ({notes} active notes)")
