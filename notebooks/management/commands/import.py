"""`grove import --user USERNAME FILE`: load an NDJSON export into an account."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Import a Grove NDJSON export (notebooks, notes, revisions) into an account."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="the account's user name")
        parser.add_argument("file", help="the .ndjson file, or - for standard input")

    def handle(self, *args: Any, user: str, file: str, **options: Any) -> None:
        import sys

        from grove.kernel.actor import Actor
        from grove.kernel.errors import GroveError
        from grove.models import Account
        from notebooks.services.portability import account_import, ndjson_records

        account = Account.objects.filter(username=user, is_active=True).first()
        if account is None:
            raise CommandError(f"no active account named {user!r}")
        try:
            stream = sys.stdin if file == "-" else Path(file).open(encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise CommandError(f"{file}: {exc.strerror}") from None

        try:
            with stream:
                result = account_import(actor=Actor.for_session(account.id),
                                        records=ndjson_records(stream))
        except GroveError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"imported {result.notebooks} notebooks, {result.notes} notes, "
                          f"{result.revisions} revisions, {result.visions} visions")
