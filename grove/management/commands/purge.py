"""`grove purge --older-than DAYS`: remove soft-deleted content past the retention window
for good (`grove.kernel.purge`). Runs as the schema owner, like `grove migrate`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connections, transaction

MAX_DAYS = 36500


class DryRun(Exception):
    """Raised to roll a dry run back."""


class Command(BaseCommand):
    help = ("Remove for good what was deleted more than DAYS days ago: deleted accounts' "
            "content, and deleted notes, notebooks and conversations. Backups taken "
            "before still hold it.")

    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", type=int, required=True, metavar="DAYS",
                            help="remove what was deleted more than DAYS days ago (0: all)")
        parser.add_argument("--dry-run", action="store_true",
                            help="say what would be removed, and remove nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        from grove.identity.deletion import finish_deletions
        from grove.kernel.purge import OWNER, PurgeError, purge

        days = options["older_than"]
        if not 0 <= days <= MAX_DAYS:
            raise CommandError(f"--older-than: a number of days from 0 to {MAX_DAYS}")
        if settings.DATABASES[OWNER]["USER"] == settings.DATABASES["default"]["USER"]:
            raise CommandError("grove purge runs as the schema owner: set "
                               "GROVE_MIGRATE_DATABASE_URL, as for grove migrate")
        finished = finish_deletions()  # deletions cut short: tombstoned first
        if finished:
            self.stdout.write(f"Finished {finished} interrupted account deletion(s).")
        verb = "Removed"
        try:
            if options["dry_run"]:  # the same work, checked in full, then rolled back
                try:
                    with transaction.atomic(using=OWNER):
                        done = purge(older_than=timedelta(days=days))
                        with connections[OWNER].cursor() as cursor:
                            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                        raise DryRun
                except DryRun:
                    verb = "Would remove"
            else:  # an account per transaction
                done = purge(older_than=timedelta(days=days))
        except (PurgeError, DatabaseError) as exc:
            raise CommandError(f"nothing more was removed: {' '.join(str(exc).split())}") \
                from exc
        self.stdout.write(f"{verb} what was deleted before {done.cutoff:%Y-%m-%d %H:%M} UTC: "
                          f"{done.accounts} deleted account(s) emptied.")
        for name, count in sorted(done.rows.items()):
            self.stdout.write(f"  {name}: {count}")
        if not done.rows:
            self.stdout.write("  nothing")
