"""`grove import --user USERNAME [--archive [--keep-shares]] FILE`: load an export into an
account.

Without `--archive`: a Grove NDJSON export, into any account, everything under new ids.
With it: a lossless account archive (`grove export --archive`), into an account with no
notebooks or notes yet; share links come back revoked unless `--keep-shares`."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Import a Grove NDJSON export, or an account archive, into an account."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="the account's user name")
        parser.add_argument("--archive", action="store_true",
                            help="the file is an account archive (grove export --archive)")
        parser.add_argument("--keep-shares", action="store_true",
                            help="with --archive: share links stay active")
        parser.add_argument("file", help="the .ndjson file, or - for standard input")

    def handle(self, *args: Any, user: str, file: str, **options: Any) -> None:
        import sys

        from grove.identity.archive import account_archive_import, archive_records
        from grove.kernel.actor import Actor
        from grove.kernel.errors import GroveError
        from grove.models import Account
        from notebooks.services.portability import account_import, ndjson_records

        if options["keep_shares"] and not options["archive"]:
            raise CommandError("--keep-shares goes with --archive")
        account = Account.objects.filter(username=user, is_active=True).first()
        if account is None:
            raise CommandError(f"no active account named {user!r}")
        try:
            stream = sys.stdin if file == "-" else Path(file).open(encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise CommandError(f"{file}: {exc.strerror}") from None

        actor = Actor.for_session(account.id)
        try:
            with stream:
                if options["archive"]:
                    moved = account_archive_import(actor=actor,
                                                   records=archive_records(stream),
                                                   keep_shares=options["keep_shares"])
                    self.stdout.write("imported " + ", ".join(
                        f"{count} {table}" for table, count in moved.rows.items()))
                    return
                result = account_import(actor=actor, records=ndjson_records(stream))
        except GroveError as exc:
            raise CommandError(exc.message) from None
        except UnicodeDecodeError:
            raise CommandError(f"{file}: not UTF-8 text") from None
        self.stdout.write(f"imported {result.notebooks} notebooks, {result.notes} notes, "
                          f"{result.revisions} revisions, {result.visions} visions")
